#pragma once
// The definitions of pt2.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/pt2.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL bool looks_like_pt2(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char magic[2] = {};
  if (!in.read(magic, 2) || magic[0] != 'P' || magic[1] != 'K') return false;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(in.tellg());
  const std::streamoff tail = std::min<std::streamoff>(size, 1 << 20);
  in.seekg(size - tail);
  std::string bytes(static_cast<std::size_t>(tail), '\0');
  in.read(bytes.data(), tail);
  return bytes.find("/archive_format") != std::string::npos;
}

}  // namespace tfg::torch

#if (TFG_HAS_PT2)
namespace tfg::torch::pt2_detail {

[[nodiscard]] TFG_TORCH_DECL std::string identifier(std::string s, const char* prefix) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = prefix + s;
  return s;
}

[[nodiscard]] TFG_TORCH_DECL ser::F64 f64(double d) {
  ser::F64 f;
  f.set(d);
  return f;
}

[[nodiscard]] TFG_TORCH_DECL c10::ScalarType c10_scalar_type(ser::ScalarType t, const std::string& where) {
  using S = ser::ScalarType;
  switch (t) {
    case S::BYTE: return c10::kByte;
    case S::CHAR: return c10::kChar;
    case S::SHORT: return c10::kShort;
    case S::INT: return c10::kInt;
    case S::LONG: return c10::kLong;
    case S::HALF: return c10::kHalf;
    case S::FLOAT: return c10::kFloat;
    case S::DOUBLE: return c10::kDouble;
    case S::COMPLEXHALF: return c10::kComplexHalf;
    case S::COMPLEXFLOAT: return c10::kComplexFloat;
    case S::COMPLEXDOUBLE: return c10::kComplexDouble;
    case S::BOOL: return c10::kBool;
    case S::BFLOAT16: return c10::kBFloat16;
    case S::UINT16: return c10::kUInt16;
    case S::UINT32: return c10::kUInt32;
    case S::UINT64: return c10::kUInt64;
    case S::FLOAT8E4M3FN: return c10::kFloat8_e4m3fn;
    case S::FLOAT8E5M2: return c10::kFloat8_e5m2;
    case S::FLOAT8E4M3FNUZ: return c10::kFloat8_e4m3fnuz;
    case S::FLOAT8E5M2FNUZ: return c10::kFloat8_e5m2fnuz;
    default: break;
  }
  throw model_error(where + ": unknown dtype code " + std::to_string(static_cast<int>(t)));
}

[[nodiscard]] TFG_TORCH_DECL ser::ScalarType ser_scalar_type(c10::ScalarType t) {
  using S = ser::ScalarType;
  switch (t) {
    case c10::kByte: return S::BYTE;
    case c10::kChar: return S::CHAR;
    case c10::kShort: return S::SHORT;
    case c10::kInt: return S::INT;
    case c10::kLong: return S::LONG;
    case c10::kHalf: return S::HALF;
    case c10::kFloat: return S::FLOAT;
    case c10::kDouble: return S::DOUBLE;
    case c10::kComplexHalf: return S::COMPLEXHALF;
    case c10::kComplexFloat: return S::COMPLEXFLOAT;
    case c10::kComplexDouble: return S::COMPLEXDOUBLE;
    case c10::kBool: return S::BOOL;
    case c10::kBFloat16: return S::BFLOAT16;
    case c10::kUInt16: return S::UINT16;
    case c10::kUInt32: return S::UINT32;
    case c10::kUInt64: return S::UINT64;
    case c10::kFloat8_e4m3fn: return S::FLOAT8E4M3FN;
    case c10::kFloat8_e5m2: return S::FLOAT8E5M2;
    case c10::kFloat8_e4m3fnuz: return S::FLOAT8E4M3FNUZ;
    case c10::kFloat8_e5m2fnuz: return S::FLOAT8E5M2FNUZ;
    default: return S::UNKNOWN;
  }
}

[[nodiscard]] TFG_TORCH_DECL c10::MemoryFormat c10_memory_format(ser::MemoryFormat f) {
  switch (f) {
    case ser::MemoryFormat::ChannelsLast: return c10::MemoryFormat::ChannelsLast;
    case ser::MemoryFormat::ChannelsLast3d: return c10::MemoryFormat::ChannelsLast3d;
    case ser::MemoryFormat::PreserveFormat: return c10::MemoryFormat::Preserve;
    default: return c10::MemoryFormat::Contiguous;
  }
}

[[nodiscard]] TFG_TORCH_DECL ser::MemoryFormat ser_memory_format(c10::MemoryFormat f) {
  switch (f) {
    case c10::MemoryFormat::ChannelsLast: return ser::MemoryFormat::ChannelsLast;
    case c10::MemoryFormat::ChannelsLast3d: return ser::MemoryFormat::ChannelsLast3d;
    case c10::MemoryFormat::Preserve: return ser::MemoryFormat::PreserveFormat;
    default: return ser::MemoryFormat::ContiguousFormat;
  }
}

[[nodiscard]] TFG_TORCH_DECL c10::Layout c10_layout(ser::Layout l) {
  switch (l) {
    case ser::Layout::SparseCoo: return c10::kSparse;
    case ser::Layout::SparseCsr: return c10::kSparseCsr;
    case ser::Layout::SparseCsc: return c10::kSparseCsc;
    case ser::Layout::SparseBsr: return c10::kSparseBsr;
    case ser::Layout::SparseBsc: return c10::kSparseBsc;
    case ser::Layout::_mkldnn: return c10::kMkldnn;
    default: return c10::kStrided;
  }
}

[[nodiscard]] TFG_TORCH_DECL ser::Layout ser_layout(c10::Layout l) {
  switch (l) {
    case c10::kSparse: return ser::Layout::SparseCoo;
    case c10::kSparseCsr: return ser::Layout::SparseCsr;
    case c10::kSparseCsc: return ser::Layout::SparseCsc;
    case c10::kSparseBsr: return ser::Layout::SparseBsr;
    case c10::kSparseBsc: return ser::Layout::SparseBsc;
    case c10::kMkldnn: return ser::Layout::_mkldnn;
    default: return ser::Layout::Strided;
  }
}

[[nodiscard]] TFG_TORCH_DECL std::vector<std::int64_t> ints_of(const std::vector<ser::SymInt>& v,
                                                               const std::string& where) {
  std::vector<std::int64_t> out;
  for (const auto& s : v) {
    if (s.tag() != ser::SymInt::Tag::AS_INT)
      throw model_error(where + ": has a symbolic size (exported with dynamic shapes); export with static shapes");
    out.push_back(s.get_as_int());
  }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<ser::SymInt> sym_ints(c10::IntArrayRef v) {
  std::vector<ser::SymInt> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i].set_as_int(v[i]);
  return out;
}

[[nodiscard]] TFG_TORCH_DECL ser::TensorMeta tensor_meta(const at::Tensor& t) {
  ser::TensorMeta m;
  m.set_dtype(ser_scalar_type(t.scalar_type()));
  m.set_sizes(sym_ints(t.sizes()));
  m.set_requires_grad(t.requires_grad());
  ser::Device d;
  d.set_type(c10::DeviceTypeName(t.device().type(), /*lower_case=*/true));
  if (t.device().has_index()) d.set_index(std::optional<std::int64_t>(t.device().index()));
  m.set_device(d);
  m.set_strides(sym_ints(t.layout() == c10::kStrided ? t.strides() : c10::IntArrayRef{}));
  ser::SymInt off;
  off.set_as_int(t.layout() == c10::kStrided ? t.storage_offset() : 0);
  m.set_storage_offset(off);
  m.set_layout(ser_layout(t.layout()));
  return m;
}

[[nodiscard]] TFG_TORCH_DECL std::string record(caffe2::serialize::PyTorchStreamReader& r, const std::string& path,
                                                const std::string& name) {
  if (!r.hasRecord(name)) throw model_error(path + ": the archive has no record " + name);
  auto [ptr, size] = r.getRecord(name);
  return std::string(static_cast<const char*>(ptr.get()), size);
}

[[nodiscard]] TFG_TORCH_DECL std::pair<std::string, std::size_t> last_frame(const std::string& trace) {
  const auto p = trace.rfind("File \"");
  if (p == std::string::npos) return {};
  const auto q = trace.find('"', p + 6);
  if (q == std::string::npos) return {};
  std::string file = trace.substr(p + 6, q - p - 6);
  if (auto s = file.find_last_of('/'); s != std::string::npos) file = file.substr(s + 1);
  std::size_t line = 0;
  if (auto l = trace.find(", line ", q); l != std::string::npos)
    line = std::strtoull(trace.c_str() + l + 7, nullptr, 10);
  return {file, line};
}

[[nodiscard]] TFG_TORCH_DECL std::string module_path(const std::string& stack) {
  const auto last = stack.substr(stack.rfind(';') == std::string::npos ? 0 : stack.rfind(';') + 1);
  const auto a = last.find(',');
  const auto b = a == std::string::npos ? std::string::npos : last.find(',', a + 1);
  if (b == std::string::npos) return {};
  const auto path = last.substr(a + 1, b - a - 1);
  return path.empty() ? std::string() : "__module." + path;
}

TFG_TORCH_DECL void read_payloads(caffe2::serialize::PyTorchStreamReader& r, const std::string& path,
                                  const std::string& dir, const std::string& config_name,
                                  std::unordered_map<std::string, at::Tensor>& out) {
  if (!r.hasRecord(config_name)) return;
  ser::PayloadConfig config;
  try {
    config = nlohmann::json::parse(record(r, path, config_name)).get<ser::PayloadConfig>();
  } catch (const nlohmann::json::exception& e) {
    throw model_error(path + ": " + config_name + ": not a payload config: " + e.what());
  }
  std::unordered_map<std::string, at::Tensor> flat;
  for (const auto& [fqn, meta] : config.get_config()) {
    const auto where = path + ": " + dir + meta.get_path_name() + " (" + fqn + ")";
    const auto record_name = dir + meta.get_path_name();
    if (meta.get_use_pickle()) {
      auto bytes = record(r, path, record_name);
      c10::IValue v;
      try {
        v = ::torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
      } catch (const std::exception& e) {
        throw model_error(where + ": cannot read the pickled tensor: " + first_line(e.what()));
      }
      if (!v.isTensor()) throw model_error(where + ": the pickled payload is not a tensor");
      out[fqn] = v.toTensor();
      continue;
    }
    if (!meta.get_tensor_meta()) throw model_error(where + ": a raw payload without tensor meta data");
    const auto& tm = *meta.get_tensor_meta();
    const auto dtype = c10_scalar_type(tm.get_dtype(), where);
    const auto sizes = ints_of(tm.get_sizes(), where);
    const auto strides = ints_of(tm.get_strides(), where);
    const auto offset = ints_of({tm.get_storage_offset()}, where)[0];
    auto it = flat.find(meta.get_path_name());
    if (it == flat.end()) {
      auto bytes = record(r, path, record_name);
      const auto item = c10::elementSize(dtype);
      if (bytes.size() % item != 0)
        throw model_error(where + ": " + std::to_string(bytes.size()) + " bytes are not a whole number of " +
                          std::string(c10::toString(dtype)) + " elements");
      auto t = at::empty({static_cast<std::int64_t>(bytes.size() / item)}, at::TensorOptions().dtype(dtype));
      if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
      it = flat.emplace(meta.get_path_name(), t).first;
    }
    std::size_t needed = 0, held = 0;
    auto view = at::empty({0}, at::TensorOptions().dtype(dtype));
    view.set_(it->second.storage(), 0, {0}, {1});
    view = view.as_strided(sizes, strides, offset);
    if (!storage_holds(view, needed, held))
      throw model_error(where + ": reads " + std::to_string(needed) + " bytes, its record holds " +
                        std::to_string(held) + ": the archive is truncated or corrupt");
    out[fqn] = view;
  }
}

[[nodiscard]] TFG_TORCH_DECL std::string torch_save_bytes(const c10::IValue& v) {
  std::string pkl;
  std::size_t next_id = 0;
  ::torch::jit::Pickler p([&](const char* b, std::size_t n) { pkl.append(b, n); }, nullptr, nullptr, nullptr,
                          [&](const at::Tensor&) { return std::to_string(next_id++); }, /*tag_aggregates=*/false);
  p.protocol();
  p.pushIValue(v);
  p.stop();
  std::string out;
  caffe2::serialize::PyTorchStreamWriter w([&](const void* b, std::size_t n) {
    out.append(static_cast<const char*>(b), n);
    return n;
  });
  w.writeRecord("data.pkl", pkl.data(), pkl.size());
  const auto& tensors = p.tensorData();
  for (std::size_t i = 0; i < tensors.size(); ++i)
    w.writeRecord("data/" + std::to_string(i), tensors[i].storage().data(), tensors[i].storage().nbytes());
  w.writeEndOfFile();
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::string torch_save_args(const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> owned;
  for (const auto& a : args)
    owned.push_back(a.isTensor() ? c10::IValue(a.toTensor().detach().contiguous().clone()) : a);
  return torch_save_bytes(
      c10::ivalue::Tuple::create({c10::IValue(c10::ivalue::Tuple::create(std::move(owned))),
                                  c10::IValue(c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get()))}));
}

}  // namespace tfg::torch::pt2_detail
#endif

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL model load_any(const std::string& path, const std::string& inputs_path) {
  if (looks_like_pt2(path)) {
#if TFG_HAS_PT2
    return pt2_importer().load(path);
#else
    throw model_error(path + ": a torch.export archive (.pt2); reading one needs the LibTorch 2.x build (this one is " +
                      std::string(TORCH_VERSION) + ")");
#endif
  }
  return torchscript_importer::from_module(load_module(path), path, profile_inputs(path, inputs_path));
}

[[nodiscard]] TFG_TORCH_DECL input_set default_inputs(const model& m, std::size_t count, std::uint64_t seed) {
#if TFG_HAS_PT2
  if (m.pt2 && !m.pt2->sample_args.empty() && count > 0) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    input_set out{m.pt2->sample_args};
    while (out.size() < count)
      out.push_back(ivalue::deep_clone(m.pt2->sample_args, [&](const at::Tensor& t) {
        return at::isFloatingType(t.scalar_type()) ? at::randn(t.sizes(), gen, t.options()) : t.clone();
      }));
    return out;
  }
#endif
  return random_inputs(m, count, seed);
}

TFG_TORCH_DECL void save_inputs(const input_set& inputs, const std::filesystem::path& path) {
  c10::impl::GenericList list(c10::AnyType::get());
  for (const auto& x : inputs) list.push_back(c10::ivalue::Tuple::create(x));
#if TFG_HAS_PT2
  // Whether a value holds a dict or a list, at any depth of tuples.
  const auto container = [](const c10::IValue& v, const auto& self) -> bool {
    if (v.isGenericDict() || v.isList()) return true;
    if (!v.isTuple()) return false;
    const auto& e = v.toTupleRef().elements();
    return std::any_of(e.begin(), e.end(), [&](const c10::IValue& x) { return self(x, self); });
  };
  const bool containers = std::any_of(inputs.begin(), inputs.end(), [&](const std::vector<c10::IValue>& x) {
    return std::any_of(x.begin(), x.end(), [&](const c10::IValue& a) { return container(a, container); });
  });
  if (!containers) {
    write_file_atomic(path, pt2_detail::torch_save_bytes(c10::IValue(list)));
    return;
  }
#endif
  const auto bytes = ::torch::jit::pickle_save(c10::IValue(list));
  write_file_atomic(path, std::string_view(bytes.data(), bytes.size()));
}

}  // namespace tfg::torch
