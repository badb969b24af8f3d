#pragma once
/// \file
/// tfg::expected<T, E>: a value or an error, a small subset of C++23 std::expected (GCC 12 in
/// C++20 mode has none).
///
/// Supported: construction from a T (success) or from tfg::unexpected<E> (failure),
/// has_value()/explicit bool, value() (throws bad_expected_access<E> on an error), operator*
/// and operator-> (precondition: has_value()), error() (precondition: !has_value()),
/// value_or(). Not supported: expected<void, E>, monadic operations, assignment between
/// different T/E. T and E may be the same type.

#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include "tfg/util/assert.hpp"

namespace tfg {

/// Wraps an error so that constructing an expected from it selects the failure state.
template <class E>
class unexpected {
 public:
  constexpr explicit unexpected(E error) noexcept(std::is_nothrow_move_constructible_v<E>) : error_(std::move(error)) {}
  constexpr const E& error() const& noexcept { return error_; }
  constexpr E& error() & noexcept { return error_; }
  constexpr E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};

template <class E>
unexpected(E) -> unexpected<E>;

/// Thrown by expected::value() when the expected holds an error; carries a copy of it.
template <class E>
class bad_expected_access : public std::exception {
 public:
  explicit bad_expected_access(E error) : error_(std::move(error)) {}
  const char* what() const noexcept override { return "tfg::expected holds an error"; }
  const E& error() const noexcept { return error_; }

 private:
  E error_;
};

template <class T, class E>
class expected {
  static_assert(!std::is_void_v<T>, "tfg::expected<void, E> is not provided");
  static_assert(!std::is_reference_v<T> && !std::is_reference_v<E>);

 public:
  using value_type = T;
  using error_type = E;

  /// Success; implicit so that `return value;` works in a function returning expected.
  template <class U = T>
  requires std::is_constructible_v<T, U&&> &&(!std::is_same_v<std::remove_cvref_t<U>, expected>)&&(
      !std::is_same_v<std::remove_cvref_t<U>, unexpected<E>>)constexpr expected(U&& value)
      : state_(std::in_place_index<0>, std::forward<U>(value)) {}

  /// Failure; implicit so that `return tfg::unexpected{err};` works.
  template <class G>
  requires std::is_constructible_v<E, G&&>
  constexpr expected(unexpected<G> error) : state_(std::in_place_index<1>, std::move(error).error()) {}

  constexpr bool has_value() const noexcept { return state_.index() == 0; }
  constexpr explicit operator bool() const noexcept { return has_value(); }

  constexpr const T& value() const& {
    if (!has_value()) throw bad_expected_access<E>(error());
    return std::get<0>(state_);
  }
  constexpr T& value() & {
    if (!has_value()) throw bad_expected_access<E>(error());
    return std::get<0>(state_);
  }
  constexpr T&& value() && { return std::move(value()); }

  /// Precondition: !has_value().
  constexpr const E& error() const& noexcept {
    TFG_ASSERT(!has_value(), "expected::error() on a value");
    return *std::get_if<1>(&state_);
  }
  constexpr E& error() & noexcept {
    TFG_ASSERT(!has_value(), "expected::error() on a value");
    return *std::get_if<1>(&state_);
  }

  /// Precondition: has_value().
  constexpr const T& operator*() const& noexcept {
    TFG_ASSERT(has_value(), "expected::operator* on an error");
    return *std::get_if<0>(&state_);
  }
  constexpr T& operator*() & noexcept {
    TFG_ASSERT(has_value(), "expected::operator* on an error");
    return *std::get_if<0>(&state_);
  }
  constexpr T&& operator*() && noexcept {
    TFG_ASSERT(has_value(), "expected::operator* on an error");
    return std::move(*std::get_if<0>(&state_));
  }
  constexpr const T* operator->() const noexcept { return &**this; }
  constexpr T* operator->() noexcept { return &**this; }

  template <class U>
  constexpr T value_or(U&& fallback) const& {
    return has_value() ? **this : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  // Index 0 is the value, 1 the error; indices (not types) keep expected<T, T> working.
  std::variant<T, E> state_;
};

}  // namespace tfg
