#pragma once
/// \file
/// Finding signatures: the deduplication key, stable id and human title of a potential bug
/// (reliability-and-reporting.md 6.1 item 8).
///
/// A `finding_signature` is built by the campaign from an outcome (crash, exception, oracle
/// verdict). Two outcomes are the same finding exactly when their `key()` strings are equal;
/// `id()` is a 16-hex-digit XXH3-64 hash of the key, used as the database key and as the
/// artifact folder name. Everything here is backend-neutral and has no LibTorch dependency.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/oracle/verdict.hpp"

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace tfg::oracle {

/// What kind of misbehaviour a finding is (symptom classes of 6.1 item 6 plus oracle verdicts).
enum class finding_kind : std::uint8_t {
  crash,           ///< killed by a signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, ...)
  abort,           ///< SIGABRT / failed internal CHECK
  exception,       ///< uncaught framework exception (e.g. c10::Error) in one configuration
  hang,            ///< timeout confirmed by a rerun
  out_of_memory,   ///< RSS watchdog or allocator OOM
  nan_inf,         ///< NaN or Inf in one configuration only
  numeric,         ///< finite values differ beyond tolerance between two configurations
  state,           ///< dtype / shape / structure / RNG state differs
  metamorphic,     ///< a metamorphic relation is violated
  performance,     ///< a performance anomaly between configurations
  memory,          ///< memory-safety error (sanitizer report, double free, ...)
  nan_vanished,    ///< a NaN entered an operator documented to propagate it and did not come out
  export_failure,  ///< a configuration's exporter (torch.onnx.export) fails on a model eager runs
};

inline constexpr finding_kind all_finding_kinds[] = {
    finding_kind::crash,         finding_kind::abort,       finding_kind::exception, finding_kind::hang,
    finding_kind::out_of_memory, finding_kind::nan_inf,     finding_kind::numeric,   finding_kind::state,
    finding_kind::metamorphic,   finding_kind::performance, finding_kind::memory,    finding_kind::nan_vanished,
    finding_kind::export_failure};

/// The stable spelling used in keys, the store and reports ("crash", "out_of_memory", ...).
[[nodiscard]] constexpr std::string_view to_string(finding_kind k) noexcept {
  switch (k) {
    case finding_kind::crash: return "crash";
    case finding_kind::abort: return "abort";
    case finding_kind::exception: return "exception";
    case finding_kind::hang: return "hang";
    case finding_kind::out_of_memory: return "out_of_memory";
    case finding_kind::nan_inf: return "nan_inf";
    case finding_kind::numeric: return "numeric";
    case finding_kind::state: return "state";
    case finding_kind::metamorphic: return "metamorphic";
    case finding_kind::performance: return "performance";
    case finding_kind::memory: return "memory";
    case finding_kind::nan_vanished: return "nan_vanished";
    case finding_kind::export_failure: return "export_failure";
  }
  return "unknown";
}

/// Inverse of to_string; nullopt for any other text (exact, case-sensitive match).
[[nodiscard]] constexpr std::optional<finding_kind> parse_finding_kind(std::string_view s) noexcept {
  for (finding_kind k : all_finding_kinds)
    if (to_string(k) == s) return k;
  return std::nullopt;
}

/// The prefix of a configuration's error when its exporter failed (the configuration exports
/// the model to another framework's format before running it: an exporter defect, not a
/// runtime one).
inline constexpr std::string_view export_failure_prefix = "export: ";

/// The finding kind of a differential verdict (numeric, NaN/Inf, state, an error in one
/// configuration); nullopt for verdicts that are not findings.
[[nodiscard]] constexpr std::optional<finding_kind> finding_kind_of(verdict_kind v) noexcept {
  switch (v) {
    case verdict_kind::numeric_mismatch: return finding_kind::numeric;
    case verdict_kind::nan_inf_mismatch: return finding_kind::nan_inf;
    case verdict_kind::state_mismatch: return finding_kind::state;
    case verdict_kind::metamorphic_mismatch: return finding_kind::metamorphic;
    case verdict_kind::error_in_one: return finding_kind::exception;
    default: return std::nullopt;
  }
}

namespace finding_detail {

inline bool is_ident_char(char c) noexcept { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
inline bool is_hex_char(char c) noexcept { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
inline bool is_space_char(char c) noexcept { return std::isspace(static_cast<unsigned char>(c)) != 0; }

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space_char(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space_char(s.back())) s.remove_suffix(1);
  return s;
}

/// Lines after which a message is backtrace noise rather than the error text.
inline bool is_stop_line(std::string_view line) noexcept {
  constexpr std::string_view stops[] = {
      "Exception raised from",     "frame #", "Traceback", "Stack trace", "(no backtrace available)",
      "The above operation failed"};
  for (std::string_view s : stops)
    if (line.starts_with(s)) return true;
  return false;
}

/// "RuntimeError: ...", "c10::Error: ...", "ValueError: ..." at the start of a line.
inline bool is_error_headline(std::string_view line) noexcept {
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view head = line.substr(0, colon);
  for (char c : head)
    if (!is_ident_char(c) && c != ':' && c != '.') return false;
  return head.ends_with("Error") || head.ends_with("Exception");
}

/// Masks one line fragment: hex -> ADDR, absolute paths -> basename, standalone numbers -> N,
/// whitespace runs -> one space, ", " inside brackets. Appends to `out`.
inline void mask_into(std::string_view s, std::string& out) {
  int depth = 0;
  std::size_t i = 0;
  const auto prev_is_ident = [&out] { return !out.empty() && is_ident_char(out.back()); };
  while (i < s.size()) {
    const char c = s[i];
    if (is_space_char(c)) {
      while (i < s.size() && is_space_char(s[i])) ++i;
      if (!out.empty() && out.back() != ' ' && out.back() != '(' && out.back() != '[') out += ' ';
      continue;
    }
    // A graph node's own name where ONNX and ONNX Runtime print it ("node name: node_MaxPool_25",
    // "Node (node_max_pool2d) Op (MaxPool)", "/dense_head/MaxPool_1"): the exporter names nodes
    // after the FX node or by a per-type counter, so one exporter defect met in two models was
    // two messages. The operator type next to it stays.
    if ((out.ends_with("node name: ") || out.ends_with("Node (")) && c != ')' && c != ',') {
      std::size_t j = i;
      while (j < s.size() && !is_space_char(s[j]) && s[j] != ')' && s[j] != ',') ++j;
      out += "NODE";
      i = j;
      continue;
    }
    // Hex address "0x7ffd1234" (not part of an identifier).
    if (c == '0' && i + 2 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X') && is_hex_char(s[i + 2]) &&
        !prev_is_ident()) {
      i += 2;
      while (i < s.size() && is_hex_char(s[i])) ++i;
      out += "ADDR";
      continue;
    }
    // Absolute path "/a/b/c.cpp": keep the basename; requires a second '/'.
    if (c == '/' && (out.empty() || out.back() == ' ' || out.back() == '(' || out.back() == '"' || out.back() == '\'' ||
                     out.back() == '=' || out.back() == '[')) {
      std::size_t j = i;
      while (j < s.size() && !is_space_char(s[j]) && s[j] != '"' && s[j] != '\'' && s[j] != ')' && s[j] != ',' &&
             s[j] != ']' && s[j] != ';')
        ++j;
      const std::string_view path = s.substr(i, j - i);
      const auto last = path.rfind('/');
      if (last != 0 && last != std::string_view::npos) {
        mask_into(path.substr(last + 1), out);  // numbers in "file.cpp:31" are masked too
        i = j;
        continue;
      }
    }
    // A model file name ("current.pt", "mutant.pt"): the same model fails under another name
    // in a finding's reruns and in repro.
    if (!prev_is_ident() && (is_ident_char(c) || c == '-')) {
      std::size_t j = i;
      while (j < s.size() && (is_ident_char(s[j]) || s[j] == '.' || s[j] == '-')) ++j;
      const std::string_view word = s.substr(i, j - i);
      if (word.size() > 3 && word.ends_with(".pt")) {
        out += "MODEL.pt";
        i = j;
        continue;
      }
    }
    // Long bare hex strings with digits and letters (hashes, pointers without 0x).
    if (is_hex_char(c) && !prev_is_ident()) {
      std::size_t j = i;
      bool digit = false, alpha = false;
      while (j < s.size() && is_hex_char(s[j])) {
        (std::isdigit(static_cast<unsigned char>(s[j])) != 0 ? digit : alpha) = true;
        ++j;
      }
      if (j - i >= 8 && digit && alpha && (j == s.size() || !is_ident_char(s[j]))) {
        out += "ADDR";
        i = j;
        continue;
      }
    }
    // A generated name's counter ("node_MaxPool_25", "hardswish_18", "val_3"): digits after an
    // underscore that end the identifier. Exporters and compilers number their nodes by
    // position, so one defect met in two models was two findings.
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 && !out.empty() && out.back() == '_') {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0) ++j;
      if (j == s.size() || !is_ident_char(s[j])) {
        out += 'N';
        i = j;
        continue;
      }
    }
    // Standalone number: optional sign, digits, fraction, exponent; "conv2d" stays as is.
    const bool sign = (c == '-' || c == '+') && i + 1 < s.size() &&
                      std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0 && !prev_is_ident();
    if ((std::isdigit(static_cast<unsigned char>(c)) != 0 && !prev_is_ident()) || sign) {
      std::size_t j = i + (sign ? 1 : 0);
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1])) != 0) {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) != 0) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])) != 0) {
          while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])) != 0) ++k;
          j = k;
        }
      }
      out += 'N';
      i = j;
      // "1x3x224x224" -> "NxNxNxN"
      while (i + 1 < s.size() && s[i] == 'x' && std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0) {
        i += 1;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
        out += "xN";
      }
      continue;
    }
    if (c == '[' || c == '(' || c == '{') ++depth;
    if ((c == ']' || c == ')' || c == '}') && depth > 0) {
      --depth;
      if (!out.empty() && out.back() == ' ') out.pop_back();
    }
    if (c == ',' && depth > 0) {
      if (!out.empty() && out.back() == ' ') out.pop_back();
      out += ", ";
      ++i;
      while (i < s.size() && is_space_char(s[i])) ++i;
      continue;
    }
    out += c;
    ++i;
  }
}

/// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence; drops a trailing space.
inline void cut_utf8(std::string& s, std::size_t max) {
  if (s.size() <= max) return;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

inline void append_escaped(std::string& out, std::string_view field) {
  for (char c : field) {
    if (c == '|' || c == '\\') out += '\\';
    out += c;
  }
}

}  // namespace finding_detail

/// Maximum length of a normalised message, in bytes.
inline constexpr std::size_t normalised_message_max = 200;

/// A run-independent form of an error message, for dedup keys.
///
/// Keeps the meaningful head of the message: after a Python/TorchScript "Traceback" it starts
/// at the last "XxxError: ..." line; it stops at backtrace noise ("Exception raised from",
/// "frame #", ...). Lines are joined with one space. Then: hex numbers (0x.., and bare hex
/// strings of >= 8 digits mixing digits and letters) -> ADDR; absolute paths -> basename;
/// model file names (`*.pt`) -> MODEL.pt; a node's name in ONNX's messages (`node name: X`,
/// `Node (X)`) -> NODE; a generated name's trailing counter (`hardswish_18`) -> `hardswish_N`;
/// standalone numbers (not part of an identifier like conv2d or int64) -> N, so shapes keep
/// their rank ("[1,3, 64]" -> "[N, N, N]", "1x3x8" -> "NxNxN"); whitespace collapsed; at most
/// 200 bytes.
/// Deterministic: depends on the text only.
[[nodiscard]] inline std::string normalise_message(std::string_view msg) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos <= msg.size();) {
    auto nl = msg.find('\n', pos);
    if (nl == std::string_view::npos) nl = msg.size();
    lines.push_back(finding_detail::trim(msg.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  std::size_t first = 0;
  bool traceback = false;
  for (std::string_view l : lines) traceback = traceback || l.starts_with("Traceback");
  if (traceback)
    for (std::size_t i = lines.size(); i-- > 0;)
      if (finding_detail::is_error_headline(lines[i])) {
        first = i;
        break;
      }
  std::string out;
  for (std::size_t i = first; i < lines.size() && out.size() < normalised_message_max; ++i) {
    if (lines[i].empty()) continue;
    if (finding_detail::is_stop_line(lines[i])) {
      if (out.empty()) continue;  // noise before the message: skip it
      break;
    }
    if (!out.empty() && out.back() != ' ') out += ' ';
    finding_detail::mask_into(lines[i], out);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  finding_detail::cut_utf8(out, normalised_message_max);
  return out;
}

/// The dedup identity of a finding. Fields that do not apply stay empty.
struct finding_signature {
  finding_kind kind{};
  std::string config_a, config_b;  ///< the configuration pair ("" when one config failed alone)
  std::string culprit_op;          ///< e.g. "aten::conv2d": the localised operator (else the mutation's)
  std::string dtype, device;       ///< e.g. "f32", "cpu"
  std::string detail;              ///< normalised message, or top stack frames joined with " < "
  /// Optional refinement of the kind: the signal ("SIGSEGV"), or the state symptom ("dtype",
  /// "shape"). When set it is part of the key, written as "kind:symptom".
  std::string symptom;
  /// The state class of the culprit's inputs (dtype, rank, layout / memory format, special
  /// values, e.g. "f32 r4 channels_last; f32 r1 contiguous"); empty when not localised.
  std::string inputs;

  /// Canonical "kind|a|b|op|dtype|device|detail", then "|inputs" when the culprit's input
  /// class is known ('|' and '\' inside fields are escaped with '\'); equal keys mean the same
  /// finding.
  [[nodiscard]] std::string key() const {
    std::string k{to_string(kind)};
    if (!symptom.empty()) {
      k += ':';
      finding_detail::append_escaped(k, symptom);
    }
    for (const std::string* f : {&config_a, &config_b, &culprit_op, &dtype, &device, &detail}) {
      k += '|';
      finding_detail::append_escaped(k, *f);
    }
    if (!inputs.empty()) {
      k += '|';
      finding_detail::append_escaped(k, inputs);
    }
    return k;
  }

  /// 16 lowercase hex digits of XXH3-64(key()), seed 0; stable across runs and machines.
  [[nodiscard]] std::string id() const {
    const std::string k = key();
    const XXH64_hash_t h = XXH3_64bits(k.data(), k.size());
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return std::string(buf, 16);
  }

  /// One line for humans, e.g. "SIGSEGV-crash in at::native::foo (eager_op_by_op)" or
  /// "numeric mismatch graph_executor vs eager_op_by_op at aten::conv2d f32 cpu".
  /// At most ~160 bytes, no newlines.
  [[nodiscard]] std::string title() const {
    std::string where = culprit_op;
    if (where.empty()) {
      const auto cut = detail.find(" < ");
      where = detail.substr(0, cut);
    }
    if (where.empty()) where = "unknown location";
    std::string configs;
    if (!config_a.empty() && !config_b.empty()) configs = config_a + " vs " + config_b;
    else configs = config_a.empty() ? config_b : config_a;
    const std::string paren = configs.empty() ? std::string{} : " (" + configs + ")";
    const std::string pre = symptom.empty() ? std::string{} : symptom + "-";

    std::string t;
    const auto at = [&] {
      std::string s;
      if (!configs.empty()) s += " " + configs;
      if (!culprit_op.empty()) s += " at " + culprit_op;
      if (!dtype.empty()) s += " " + dtype;
      if (!device.empty()) s += " " + device;
      return s;
    };
    switch (kind) {
      case finding_kind::crash:
      case finding_kind::abort:
      case finding_kind::hang:
      case finding_kind::memory: t = pre + std::string(to_string(kind)) + " in " + where + paren; break;
      case finding_kind::out_of_memory: t = pre + "out-of-memory in " + where + paren; break;
      case finding_kind::exception:
        t = "exception in " + (culprit_op.empty() ? std::string("unknown op") : culprit_op);
        if (!detail.empty()) t += ": " + detail;
        t += paren;
        break;
      case finding_kind::numeric: t = "numeric mismatch" + at(); break;
      case finding_kind::nan_inf: t = "NaN/Inf mismatch" + at(); break;
      case finding_kind::state:
        t = (symptom.empty() ? std::string("state") : symptom) + " state mismatch" + at();
        break;
      case finding_kind::metamorphic: t = "metamorphic violation" + at(); break;
      case finding_kind::performance: t = "performance anomaly" + at(); break;
      case finding_kind::nan_vanished: t = "NaN vanished" + at(); break;
      case finding_kind::export_failure:
        t = "export failure in " + (culprit_op.empty() ? std::string("unknown op") : culprit_op);
        if (!detail.empty()) t += ": " + detail;
        t += paren;
        break;
    }
    for (char& c : t)
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    finding_detail::cut_utf8(t, 160);
    return t;
  }

  friend bool operator==(const finding_signature&, const finding_signature&) = default;
};

}  // namespace tfg::oracle
