#pragma once
/// \file
/// str_cat: builds a message from anything with an operator<<.

#include <sstream>
#include <string>
#include <utility>

namespace tfg::detail {

/// Concatenates the streamed forms of `parts`; for error messages, not hot paths.
template <class... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return std::move(os).str();
}

}  // namespace tfg::detail
