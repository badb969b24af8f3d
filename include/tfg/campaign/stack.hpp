#pragma once
/// \file
/// Crash reports written by a worker's fatal-signal handler (crash_handler.hpp), parsed on the
/// supervisor side, and reduced to the few "meaningful" frames that make a dedup key and a title
/// ("SIGSEGV in at::native::foo").
///
/// Report format (one line each, as written to the worker's stderr):
///   tfg-worker: fatal signal 11 (SIGSEGV)
///   /path/libfoo.so(_ZN2at6native3fooEv+0x1a)[0x7f...]     <- backtrace_symbols_fd lines,
///   ./prog(+0x1234)[0x55...]                                   innermost first (a space
///                                                              before '[' is accepted too)
///   tfg-worker: end of stack
/// The handler omits its own frame and the kernel's signal trampoline, so the first frame is
/// the faulting function (SIGSEGV, SIGBUS, ...) or the libc frames of raise/abort (SIGABRT).

#include <cxxabi.h>

#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::campaign {

/// First line of a crash report; the signal number and name follow.
inline constexpr std::string_view crash_report_begin = "tfg-worker: fatal signal ";
/// Last line of a complete crash report.
inline constexpr std::string_view crash_report_end = "tfg-worker: end of stack";

/// One parsed report. `frames[i]` is the demangled function name without its parameter list
/// and return type ("at::native::foo", "??" when the symbol is unknown); `modules[i]` is the
/// file name of the object that holds it ("libtorch_cpu.so", "" when unknown). Innermost first.
struct crash_report {
  int signal = 0;
  std::vector<std::string> frames;
  std::vector<std::string> modules;
  bool complete = false;  ///< the end line was found (false: the handler itself died or was cut)
};

namespace detail {

/// Async-signal-safe: the abbreviation of a fatal/common signal, nullptr when not in the table.
constexpr const char* signal_abbrev(int sig) noexcept {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return nullptr;
  }
}

inline bool is_ident_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

inline bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> list) {
  for (auto p : list)
    if (s.starts_with(p)) return true;
  return false;
}

/// Length of the operator token that starts at `s` ("operator<<", "operator()", "operator new"),
/// 0 when `s` does not start with the keyword `operator`.
inline std::size_t operator_token_length(std::string_view s) {
  constexpr std::string_view kw = "operator";
  if (!s.starts_with(kw) || (s.size() > kw.size() && is_ident_char(s[kw.size()]))) return 0;
  std::size_t i = kw.size();
  if (s.substr(i).starts_with("()") || s.substr(i).starts_with("[]")) return i + 2;
  constexpr std::string_view op_chars = "<>=!+-*/%^&|~,";
  std::size_t j = i;
  while (j < s.size() && op_chars.find(s[j]) != std::string_view::npos) ++j;
  if (j > i) return s.substr(j).starts_with(" <") ? j + 1 : j;  // "operator< <int>
  // "operator new", "operator delete[]", conversion operators: the following word belongs to it.
  while (j < s.size() && s[j] == ' ') ++j;
  while (j < s.size() && (is_ident_char(s[j]) || s[j] == ':')) ++j;
  if (s.substr(j).starts_with("[]")) j += 2;
  return j;
}

/// "void at::native::foo<float>(at::Tensor const&) const" -> "at::native::foo<float>": drops the
/// outermost trailing parameter list, cv/ref qualifiers and a leading return type.
inline std::string strip_signature(std::string_view s) {
  auto trim_suffix = [&](std::string_view suf) {
    if (s.ends_with(suf)) {
      s.remove_suffix(suf.size());
      return true;
    }
    return false;
  };
  while (trim_suffix(" const") || trim_suffix(" volatile") || trim_suffix(" &&") || trim_suffix(" &") ||
         trim_suffix(" noexcept")) {
  }
  if (s.ends_with(')')) {  // the parameter list: match the parenthesis backwards
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      else if (s[i] == '(' && --depth == 0) {
        // "operator()" followed by its parameter list: "operator()()" -> keep "operator()"
        if (i > 0) s = s.substr(0, i);
        break;
      }
    }
  }
  // A leading return type ends at the last top-level space (outside <>, (), [], {}).
  std::size_t name_start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((i == 0 || !is_ident_char(s[i - 1])) && s[i] == 'o') {
      if (auto n = operator_token_length(s.substr(i)); n > 0) {
        i += n - 1;
        continue;
      }
    }
    char c = s[i];
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    else if (c == '>' || c == ')' || c == ']' || c == '}') --depth;
    else if (c == ' ' && depth == 0) name_start = i + 1;
  }
  return std::string(s.substr(name_start));
}

/// Demangles an Itanium symbol ("_ZN2at6native3fooEv"); returns it unchanged when it is not one.
inline std::string demangle(const std::string& sym) {
  if (!sym.starts_with("_Z")) return sym;
  int status = 0;
  char* out = abi::__cxa_demangle(sym.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return sym;
  std::string result(out);
  std::free(out);
  return result;
}

/// Parses one backtrace_symbols_fd line into (function, module); nullopt when it is not one.
inline std::optional<std::pair<std::string, std::string>> parse_frame_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  auto bracket = line.rfind("[0x");  // glibc writes "(sym+0x1a)[0x...]", some " [0x...]"
  if (!line.ends_with(']') || bracket == std::string_view::npos) return std::nullopt;
  if (bracket == 0) return std::pair<std::string, std::string>{"??", ""};  // address only
  std::string_view head = line.substr(0, bracket);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  if (head.empty()) return std::pair<std::string, std::string>{"??", ""};
  std::string module_path(head), function = "??";
  if (head.ends_with(')')) {
    auto open = head.rfind('(');
    if (open == std::string_view::npos) return std::nullopt;
    module_path = std::string(head.substr(0, open));
    std::string_view inner = head.substr(open + 1, head.size() - open - 2);
    auto plus = inner.rfind('+');
    std::string_view sym = plus == std::string_view::npos ? inner : inner.substr(0, plus);
    if (!sym.empty()) function = strip_signature(demangle(std::string(sym)));
  }
  auto slash = module_path.rfind('/');
  std::string module = slash == std::string::npos ? module_path : module_path.substr(slash + 1);
  return std::pair<std::string, std::string>{std::move(function), std::move(module)};
}

/// Replaces hexadecimal literals with "ADDR" (dropping a "+" before them) and stand-alone
/// decimal numbers (with their u/l suffixes) with "N": "foo<4ul>+0x1a" -> "foo<N>".
inline std::string mask_numbers(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    bool boundary = i == 0 || !is_ident_char(s[i - 1]);
    if (s[i] == '+' && s.substr(i + 1).starts_with("0x")) {
      i += 3;  // "+0x1a": the offset goes entirely
      while (i < s.size() && is_ident_char(s[i])) ++i;
      continue;
    }
    if (boundary && s.substr(i).starts_with("0x")) {
      i += 2;
      while (i < s.size() && is_ident_char(s[i])) ++i;
      out += "ADDR";
      continue;
    }
    if (boundary && s[i] >= '0' && s[i] <= '9') {
      while (i < s.size() && is_ident_char(s[i])) ++i;
      out += 'N';
      continue;
    }
    out += s[i++];
  }
  return out;
}

/// True for frames that say nothing about where a bug is: unknown symbols, signal/abort/assert
/// machinery, C++ runtime termination, thread/process start-up, c10 dispatch and boxing
/// boilerplate, std::function/invoke trampolines and FlowMuT's own frames.
inline bool is_boilerplate_frame(std::string_view f) {
  if (f.empty() || f == "??") return true;
  static constexpr std::string_view exact[] = {"raise",
                                               "abort",
                                               "gsignal",
                                               "backtrace",
                                               "pthread_kill",
                                               "__restore_rt",
                                               "_start",
                                               "start_thread",
                                               "clone",
                                               "clone3",
                                               "__clone",
                                               "__clone3",
                                               "main_thread_start",
                                               "__assert_fail",
                                               "__assert_fail_base",
                                               "__assert_perror_fail",
                                               "__stack_chk_fail",
                                               "__fortify_fail",
                                               "__chk_fail",
                                               "__libc_message",
                                               "std::terminate",
                                               "std::__terminate",
                                               "std::abort"};
  for (auto e : exact)
    if (f == e) return true;
  if (starts_with_any(f, {"__pthread_kill",
                          "__GI_",
                          "__libc_",
                          "__backtrace",
                          "__cxa_",
                          "__cxxabiv1::",
                          "__gnu_cxx::__verbose_terminate_handler",
                          "tfg::",
                          "(anonymous namespace)::tfg::",
                          "std::_Function_handler<",
                          "std::function<",
                          "std::__invoke",
                          "std::invoke",
                          "c10::Dispatcher::",
                          "c10::BoxedKernel::",
                          "c10::KernelFunction::",
                          "c10::OperatorHandle::",
                          "c10::TypedOperatorHandle<",
                          "c10::callUnboxedKernelFunction",
                          "at::_ops::"}))
    return true;
  if (f.starts_with("c10::impl::")) {
    for (auto k : {"wrap_kernel", "boxed", "Boxed", "call_functor", "KernelWrapper", "WrapFunctionIntoFunctor",
                   "OperatorEntry", "call_impl"})
      if (f.find(k) != std::string_view::npos) return true;
  }
  if (f.starts_with("torch::jit::") &&
      (f.find("createOperatorFromC10") != std::string_view::npos || f.find("Operation") != std::string_view::npos))
    return true;
  return false;
}

/// True for frames of the C runtime, the dynamic loader and the unwinder, by module file name.
inline bool is_runtime_module(std::string_view m) {
  return starts_with_any(
      m, {"libc.so", "libc-", "libpthread", "ld-linux", "ld-", "ld64.so", "libgcc_s", "linux-vdso", "libdl"});
}

}  // namespace detail

/// "SIGSEGV" for signal 11; "signal N" for numbers outside the table.
inline std::string signal_name(int sig) {
  if (const char* a = detail::signal_abbrev(sig)) return a;
  return "signal " + std::to_string(sig);
}

/// Parses the LAST crash report in `log` (a worker's log excerpt). Lines between the begin and
/// end lines that are not backtrace lines (chatter of other threads) are skipped; a report
/// without its end line is still returned, with complete == false. nullopt: no report.
inline std::optional<crash_report> parse_crash_report(std::string_view log) {
  auto begin = log.rfind(crash_report_begin);  // chatter without '\n' may precede it
  if (begin == std::string_view::npos) return std::nullopt;
  crash_report rep;
  std::string_view rest = log.substr(begin + crash_report_begin.size());
  std::size_t i = 0;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') rep.signal = rep.signal * 10 + (rest[i++] - '0');
  auto eol = rest.find('\n');
  rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
  while (!rest.empty()) {
    eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
    if (line.starts_with(crash_report_end)) {
      rep.complete = true;
      break;
    }
    if (auto f = detail::parse_frame_line(line)) {
      rep.frames.push_back(std::move(f->first));
      rep.modules.push_back(std::move(f->second));
    }
  }
  return rep;
}

/// Up to `n` frames that locate a bug, innermost first, with numbers and addresses masked
/// (detail::mask_numbers): drops the frames detail::is_boilerplate_frame names. Judges by name
/// only; the crash_report overload also drops frames of libc, the loader and the unwinder.
inline std::vector<std::string> meaningful_frames(std::span<const std::string> frames, std::size_t n = 3) {
  std::vector<std::string> out;
  for (const auto& f : frames) {
    if (out.size() >= n) break;
    if (detail::is_boilerplate_frame(f)) continue;
    out.push_back(detail::mask_numbers(f));
  }
  return out;
}

/// As above, also dropping frames whose module is libc, libpthread, ld.so, libgcc_s or the vDSO.
inline std::vector<std::string> meaningful_frames(const crash_report& rep, std::size_t n = 3) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < rep.frames.size(); ++i)
    if (i >= rep.modules.size() || !detail::is_runtime_module(rep.modules[i])) kept.push_back(rep.frames[i]);
  return meaningful_frames(std::span<const std::string>(kept), n);
}

}  // namespace tfg::campaign
