#pragma once
/// How the LibTorch backend's functions are compiled.
///
/// Header-only by default: a translation unit that includes a tfg::torch header compiles the
/// functions it uses, inline (each header includes its `.ipp`, the definitions, at its end).
/// A program of several translation units pays that once per unit. To pay it once, link
/// `tfg::torch_compiled` instead of `tfg::torch`: the library compiles every `.ipp` (by role:
/// import, execute, oracle, mutate, reduce; backends/torch/src) and gives its users
/// `TFG_TORCH_SEPARATE`, under which the headers declare these functions and include no
/// definitions. The macro must be the same in every unit of a program (it changes the
/// functions' linkage), as for the DSL parser's `TFG_DSL_SEPARATE_PARSER`.
///
/// Templates and the member functions defined in class bodies stay in the headers either way.
#if defined(TFG_TORCH_SEPARATE)
#define TFG_TORCH_DECL
#else
#define TFG_TORCH_DECL inline
#endif
