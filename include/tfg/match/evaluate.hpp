#pragma once
/// \file
/// Evaluation of compiled operators over a `match_adapter`, in four phases with a header each:
/// constraint programs over F(e) for every profiling run (interpret.hpp), edge summaries and
/// the prefilter (prefilter.hpp), the pattern matcher around an anchor edge and the staged
/// candidate check of dsl/spec.md section 10 (pattern.hpp), and requirement R(v) evaluation
/// (requirement_check.hpp).
#include "tfg/match/interpret.hpp"
#include "tfg/match/prefilter.hpp"
#include "tfg/match/pattern.hpp"
#include "tfg/match/requirement_check.hpp"
