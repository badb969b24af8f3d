#pragma once
// The definitions of pickle_compat.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/pickle_compat.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::optional<std::string> rewrite_single_item_opcodes(std::string_view pkl) {
  struct slot {
    std::size_t start;
    bool mark;
  };
  std::vector<slot> stack;
  std::vector<std::size_t> marks_at;                      // offsets that get a MARK inserted before them
  std::vector<std::pair<std::size_t, char>> replace;      // opcode offset -> new opcode
  std::vector<std::pair<std::size_t, std::size_t>> drop;  // [from, to) removed (frames)
  std::size_t i = 0;
  auto need = [&](std::size_t n) { return i + n <= pkl.size(); };
  auto le = [&](std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(pkl[at + static_cast<std::size_t>(k)]);
    return v;
  };
  auto skip_line = [&]() -> bool {
    const auto nl = pkl.find('\n', i);
    if (nl == std::string_view::npos) return false;
    i = nl + 1;
    return true;
  };
  auto pop = [&]() -> std::optional<slot> {
    if (stack.empty() || stack.back().mark) return std::nullopt;
    auto s = stack.back();
    stack.pop_back();
    return s;
  };
  auto pop_to_mark = [&]() -> std::optional<std::size_t> {  // the mark's start
    while (!stack.empty() && !stack.back().mark) stack.pop_back();
    if (stack.empty()) return std::nullopt;
    const auto s = stack.back().start;
    stack.pop_back();
    return s;
  };
  auto push = [&](std::size_t at) { stack.push_back({at, false}); };
  bool stopped = false;
  while (i < pkl.size() && !stopped) {
    const std::size_t at = i;
    const auto op = static_cast<unsigned char>(pkl[i++]);
    auto sized = [&](int len_bytes) -> bool {  // length-prefixed argument
      if (!need(static_cast<std::size_t>(len_bytes))) return false;
      const auto n = le(i, len_bytes);
      i += static_cast<std::size_t>(len_bytes);
      if (n > pkl.size() - i) return false;
      i += static_cast<std::size_t>(n);
      return true;
    };
    auto fixed = [&](std::size_t n) -> bool {
      if (!need(n)) return false;
      i += n;
      return true;
    };
    bool ok = true;
    switch (op) {
      case '(': stack.push_back({at, true}); break;
      case '.': stopped = true; break;
      case '0': ok = pop().has_value(); break;
      case '1': ok = pop_to_mark().has_value(); break;
      case '2':
        ok = !stack.empty();
        push(at);
        break;
      case 'F':
      case 'I':
      case 'L':
      case 'S':
      case 'V':
      case 'g':
        ok = skip_line();
        push(at);
        break;
      case 'P':
        ok = skip_line();
        push(at);
        break;
      case 'p': ok = skip_line(); break;
      case 'c':
        ok = skip_line() && skip_line();
        push(at);
        break;
      case 'J':
        ok = fixed(4);
        push(at);
        break;
      case 'K':
      case 'h':
        ok = fixed(1);
        push(at);
        break;
      case 'M':
        ok = fixed(2);
        push(at);
        break;
      case 'j':
        ok = fixed(4);
        push(at);
        break;
      case 'G':
        ok = fixed(8);
        push(at);
        break;
      case 'q': ok = fixed(1); break;
      case 'r': ok = fixed(4); break;
      case 0x94: break;                 // MEMOIZE
      case 0x80: ok = fixed(1); break;  // PROTO
      case 0x95:                        // FRAME: optional, dropped (its length would be wrong after insertions)
        ok = fixed(8);
        drop.emplace_back(at, i);
        break;
      case 'N':
      case ']':
      case ')':
      case '}':
      case 0x88:
      case 0x89:
      case 0x8f:
      case 0x97: push(at); break;
      case 'T':
      case 'X':
      case 'B':
        ok = sized(4);
        push(at);
        break;
      case 'U':
      case 'C':
      case 0x8c:
      case 0x8a:
        ok = sized(1);
        push(at);
        break;
      case 0x8b:
        ok = sized(4);
        push(at);
        break;
      case 0x8d:
      case 0x8e:
      case 0x96:
        ok = sized(8);
        push(at);
        break;
      case 0x82:
        ok = fixed(1);
        push(at);
        break;
      case 0x83:
        ok = fixed(2);
        push(at);
        break;
      case 0x84:
        ok = fixed(4);
        push(at);
        break;
      case 'Q': {  // BINPERSID: pid -> object
        auto s = pop();
        ok = s.has_value();
        if (ok) push(s->start);
        break;
      }
      case 'R':
      case 0x81:
      case 0x93: {  // REDUCE, NEWOBJ, STACK_GLOBAL: two -> one
        auto b = pop();
        auto a = pop();
        ok = a && b;
        if (ok) push(a->start);
        break;
      }
      case 0x92: {  // NEWOBJ_EX: three -> one
        auto c = pop();
        auto b = pop();
        auto a = pop();
        ok = a && b && c;
        if (ok) push(a->start);
        break;
      }
      case 'b': ok = pop().has_value() && !stack.empty(); break;  // BUILD
      case 0x98: ok = !stack.empty(); break;                      // READONLY_BUFFER
      case 't':
      case 'l':
      case 'd':
      case 0x91:
      case 'o': {
        auto m = pop_to_mark();
        ok = m.has_value();
        if (ok) push(*m);
        break;
      }
      case 'i': {  // INST: two lines, marked arguments
        ok = skip_line() && skip_line();
        auto m = ok ? pop_to_mark() : std::nullopt;
        ok = m.has_value();
        if (ok) push(*m);
        break;
      }
      case 'e':
      case 'u':
      case 0x90: ok = pop_to_mark().has_value() && !stack.empty(); break;
      case 0x85:
      case 0x86:
      case 0x87: {
        const int n = op - 0x84;
        std::optional<slot> first;
        for (int k = 0; k < n && ok; ++k) {
          first = pop();
          ok = first.has_value();
        }
        if (ok) push(first->start);
        break;
      }
      case 'a': {  // APPEND: list item -> MARK item APPENDS
        auto item = pop();
        ok = item.has_value() && !stack.empty();
        if (ok) {
          marks_at.push_back(item->start);
          replace.emplace_back(at, 'e');
        }
        break;
      }
      case 's': {  // SETITEM: dict key value -> MARK key value SETITEMS
        auto value = pop();
        auto key = pop();
        ok = value && key && !stack.empty();
        if (ok) {
          marks_at.push_back(key->start);
          replace.emplace_back(at, 'u');
        }
        break;
      }
      default: return std::nullopt;
    }
    if (!ok) return std::nullopt;
  }
  if (!stopped) return std::nullopt;
  std::sort(marks_at.begin(), marks_at.end());
  std::string out;
  out.reserve(pkl.size() + marks_at.size());
  std::size_t m = 0, r = 0, d = 0;
  std::sort(replace.begin(), replace.end());
  for (std::size_t k = 0; k < i; ++k) {
    while (m < marks_at.size() && marks_at[m] == k) {
      out.push_back('(');
      ++m;
    }
    if (d < drop.size() && drop[d].first == k) {
      k = drop[d++].second - 1;
      continue;
    }
    if (r < replace.size() && replace[r].first == k) {
      out.push_back(replace[r++].second);
      continue;
    }
    out.push_back(pkl[k]);
  }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::optional<std::vector<storage_ref>> storage_refs(std::string_view pkl) {
  struct value {
    enum kind_t { opaque, mark, integer, text, global, tuple } kind = opaque;
    std::int64_t i = 0;
    std::string s;
    std::vector<value> items;
    static value of(kind_t k, std::int64_t n = 0, std::string str = {}) {
      value v;
      v.kind = k;
      v.i = n;
      v.s = std::move(str);
      return v;
    }
  };
  std::vector<value> stack;
  std::unordered_map<std::uint64_t, value> memo;
  std::vector<storage_ref> out;
  std::size_t i = 0;
  auto need = [&](std::size_t n) { return i + n <= pkl.size(); };
  auto le = [&](std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(pkl[i + k]);
    i += n;
    return v;
  };
  auto line = [&](std::string& to) {
    const auto nl = pkl.find('\n', i);
    if (nl == std::string_view::npos) return false;
    to.assign(pkl.substr(i, nl - i));
    i = nl + 1;
    return true;
  };
  auto opaque = [] { return value{}; };
  auto to_mark = [&]() -> std::optional<std::vector<value>> {
    std::vector<value> items;
    while (!stack.empty() && stack.back().kind != value::mark) {
      items.push_back(std::move(stack.back()));
      stack.pop_back();
    }
    if (stack.empty()) return std::nullopt;
    stack.pop_back();
    std::reverse(items.begin(), items.end());
    return items;
  };
  auto pop = [&]() -> std::optional<value> {
    if (stack.empty() || stack.back().kind == value::mark) return std::nullopt;
    auto v = std::move(stack.back());
    stack.pop_back();
    return v;
  };
  while (i < pkl.size()) {
    const auto op = static_cast<unsigned char>(pkl[i++]);
    switch (op) {
      case 0x80:
        if (!need(1)) return std::nullopt;
        i += 1;
        break;
      case 0x95:
        if (!need(8)) return std::nullopt;
        i += 8;
        break;
      case '.': return out;
      case '(': stack.push_back(value::of(value::mark)); break;
      case 'X':
      case 0x8c:
      case 0x8d: {
        const std::size_t n = op == 'X' ? 4 : op == 0x8c ? 1 : 8;
        if (!need(n)) return std::nullopt;
        const auto len = le(n);
        if (len > pkl.size() - i) return std::nullopt;
        stack.push_back(value::of(value::text, 0, std::string(pkl.substr(i, len))));
        i += len;
        break;
      }
      case 'K':
        if (!need(1)) return std::nullopt;
        stack.push_back(value::of(value::integer, static_cast<std::int64_t>(le(1))));
        break;
      case 'M':
        if (!need(2)) return std::nullopt;
        stack.push_back(value::of(value::integer, static_cast<std::int64_t>(le(2))));
        break;
      case 'J':
        if (!need(4)) return std::nullopt;
        stack.push_back(value::of(value::integer, static_cast<std::int32_t>(le(4))));
        break;
      case 0x8a: {  // LONG1: little-endian two's complement, n bytes
        if (!need(1)) return std::nullopt;
        const auto n = le(1);
        if (n > 8 || !need(n)) return std::nullopt;
        std::uint64_t v = n ? le(n) : 0;
        if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);
        stack.push_back(value::of(value::integer, static_cast<std::int64_t>(v)));
        break;
      }
      case 'c': {
        std::string mod, name;
        if (!line(mod) || !line(name)) return std::nullopt;
        stack.push_back(value::of(value::global, 0, mod + " " + name));
        break;
      }
      case 'q':
      case 'r': {
        const std::size_t n = op == 'q' ? 1 : 4;
        if (!need(n) || stack.empty()) return std::nullopt;
        memo[le(n)] = stack.back();
        break;
      }
      case 'h':
      case 'j': {
        const std::size_t n = op == 'h' ? 1 : 4;
        if (!need(n)) return std::nullopt;
        const auto it = memo.find(le(n));
        if (it == memo.end()) return std::nullopt;
        stack.push_back(it->second);
        break;
      }
      case 'G':
        if (!need(8)) return std::nullopt;
        i += 8;
        stack.push_back(opaque());
        break;
      case 'N':
      case ')':
      case ']':
      case '}':
      case 0x88:
      case 0x89: stack.push_back(opaque()); break;
      case 't': {
        auto items = to_mark();
        if (!items) return std::nullopt;
        {
          auto t = value::of(value::tuple);
          t.items = std::move(*items);
          stack.push_back(std::move(t));
        }
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = op - 0x84u;
        if (stack.size() < n) return std::nullopt;
        auto t = value::of(value::tuple);
        t.items.assign(std::make_move_iterator(stack.end() - static_cast<std::ptrdiff_t>(n)),
                       std::make_move_iterator(stack.end()));
        stack.resize(stack.size() - n);
        stack.push_back(std::move(t));
        break;
      }
      case 'Q': {  // BINPERSID
        auto pid = pop();
        if (!pid) return std::nullopt;
        const auto& it = pid->items;
        if (pid->kind == value::tuple && it.size() >= 5 && it[0].kind == value::text && it[0].s == "storage" &&
            it[1].kind == value::global && it[2].kind == value::text && it[4].kind == value::integer) {
          const auto sp = it[1].s.rfind(' ');
          out.push_back({it[2].s, sp == std::string::npos ? it[1].s : it[1].s.substr(sp + 1), it[4].i});
        }
        stack.push_back(opaque());
        break;
      }
      case 'R':
      case 0x81:
        if (!pop() || !pop()) return std::nullopt;
        stack.push_back(opaque());
        break;
      case 'b':
        if (!pop() || stack.empty()) return std::nullopt;
        break;
      case 'e':
      case 'u':
        if (!to_mark() || stack.empty()) return std::nullopt;
        break;
      case 'a':
        if (!pop() || stack.empty()) return std::nullopt;
        break;
      case 's':
        if (!pop() || !pop() || stack.empty()) return std::nullopt;
        break;
      case 'l':
      case 'd':
        if (!to_mark()) return std::nullopt;
        stack.push_back(opaque());
        break;
      case '0':
        if (!pop()) return std::nullopt;
        break;
      default: return std::nullopt;
    }
  }
  return std::nullopt;  // no STOP
}

[[nodiscard]] TFG_TORCH_DECL std::size_t storage_itemsize(std::string_view type) {
  static const std::pair<std::string_view, std::size_t> sizes[] = {
      {"DoubleStorage", 8}, {"FloatStorage", 4},  {"HalfStorage", 2},         {"BFloat16Storage", 2},
      {"LongStorage", 8},   {"IntStorage", 4},    {"ShortStorage", 2},        {"CharStorage", 1},
      {"ByteStorage", 1},   {"BoolStorage", 1},   {"ComplexFloatStorage", 8}, {"ComplexDoubleStorage", 16},
      {"QInt8Storage", 1},  {"QUInt8Storage", 1}, {"QInt32Storage", 4},       {"UntypedStorage", 1}};
  for (const auto& [name, n] : sizes)
    if (name == type) return n;
  return 0;
}

[[nodiscard]] TFG_TORCH_DECL std::string check_storage_records(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const auto& [pkl_name, prefix] : {std::pair{"data.pkl", "data/"}, std::pair{"constants.pkl", "constants/"}}) {
      if (!reader.hasRecord(pkl_name)) continue;
      const auto [pkl, pkl_size] = reader.getRecord(pkl_name);
      const auto refs = storage_refs(std::string_view(static_cast<const char*>(pkl.get()), pkl_size));
      if (!refs) continue;
      for (const auto& r : *refs) {
        const std::string name = std::string(prefix) + r.key;
        const auto item = storage_itemsize(r.type);
        if (!reader.hasRecord(name)) return name + ": missing (the pickle refers to it)";
        if (item == 0 || r.numel < 0) continue;
        const auto want = static_cast<std::size_t>(r.numel) * item;
        const auto [data, have] = reader.getRecord(name);
        if (have < want)
          return name + ": " + std::to_string(have) + " bytes, the pickle declares " + std::to_string(r.numel) +
                 " elements of " + r.type + " (" + std::to_string(want) + " bytes)";
      }
    }
  } catch (const std::exception&) {
    return "";  // not readable as an archive here: torch::jit::load says why
  }
  return "";
}

[[nodiscard]] TFG_TORCH_DECL c10::IValue pickle_load_compatible(const std::vector<char>& bytes) {
  try {
    return ::torch::jit::pickle_load(bytes);
  } catch (const std::exception&) {
    std::vector<char> rebuilt;
    try {
      std::istringstream in(std::string(bytes.begin(), bytes.end()));
      caffe2::serialize::PyTorchStreamReader reader(&in);
      const auto [pkl_data, pkl_size] = reader.getRecord("data.pkl");
      const auto pkl =
          rewrite_single_item_opcodes(std::string_view(static_cast<const char*>(pkl_data.get()), pkl_size));
      if (!pkl) throw std::runtime_error("no rewrite");
      caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, std::size_t n) {
        const auto* c = static_cast<const char*>(p);
        rebuilt.insert(rebuilt.end(), c, c + n);
        return n;
      });
      writer.setMinVersion(reader.version());
      for (const auto& name : reader.getAllRecords()) {
        if (name == "version" || name == ".data/version") continue;  // the writer writes its own
        if (name == "data.pkl") {
          writer.writeRecord(name, pkl->data(), pkl->size());
          continue;
        }
        const auto [data, size] = reader.getRecord(name);
        writer.writeRecord(name, data.get(), size);
      }
      writer.writeEndOfFile();
    } catch (const std::exception&) {
      rebuilt.clear();
    }
    if (rebuilt.empty()) throw;
    return ::torch::jit::pickle_load(rebuilt);
  }
}

}  // namespace tfg::torch
