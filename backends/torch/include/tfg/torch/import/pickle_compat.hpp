#pragma once
/// \file
/// Reading what Python's `torch.save` writes with LibTorch's unpickler, which (in 1.13) lacks
/// two opcodes Python uses for one-element containers: APPEND (`a`, a list of one element,
/// `torch.save([(x,)])`) and SETITEM (`s`, a dict of one item). `rewrite_single_item_opcodes`
/// turns them into their many-element forms (MARK ... APPENDS / SETITEMS), which every
/// LibTorch reads; `pickle_load_compatible` loads a torch.save'd file, rewriting its `data.pkl`
/// only when the plain load fails. Frames (protocol 4, optional by the format) are dropped.
#include "tfg/torch/linkage.hpp"
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tfg::torch {

/// The pickle `pkl` with every APPEND / SETITEM written as MARK ... APPENDS / SETITEMS, or
/// nullopt when the stream holds an opcode this rewriter does not know (or is malformed).
/// O(size).
[[nodiscard]] TFG_TORCH_DECL std::optional<std::string> rewrite_single_item_opcodes(std::string_view pkl);

/// One tensor storage a pickle refers to: persistent id ('storage', torch.XStorage, key,
/// location, numel), as TorchScript's and Python's picklers write it.
struct storage_ref {
  std::string key, type;  ///< record key ("0") and storage class ("FloatStorage")
  std::int64_t numel = 0;
};

/// The storages referred to by `pkl`, or nullopt when it holds an opcode outside the subset
/// the TorchScript and torch.save picklers write (nothing is checked then). O(size).
[[nodiscard]] TFG_TORCH_DECL std::optional<std::vector<storage_ref>> storage_refs(std::string_view pkl);

/// Bytes per element of a storage class ("FloatStorage" -> 4), 0 when unknown.
[[nodiscard]] TFG_TORCH_DECL std::size_t storage_itemsize(std::string_view type);

/// Checks every storage record of the TorchScript archive `path` against the size its pickle
/// declares (data.pkl -> data/KEY, constants.pkl -> constants/KEY). Returns the first problem
/// ("data/0: 10 bytes, the pickle declares 216 elements of FloatStorage (864 bytes)"), or "".
/// LibTorch itself loads a truncated record and reads beyond it.
[[nodiscard]] TFG_TORCH_DECL std::string check_storage_records(const std::string& path);

/// `torch::jit::pickle_load(bytes)`, and when that fails, the same archive with its pickle
/// rewritten by rewrite_single_item_opcodes (the first error is rethrown when the rewrite does
/// not apply or does not help).
[[nodiscard]] TFG_TORCH_DECL c10::IValue pickle_load_compatible(const std::vector<char>& bytes);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/pickle_compat.ipp"
#endif
