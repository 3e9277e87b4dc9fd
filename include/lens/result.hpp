// Errors as values: configuration and setup return Result<T> or Status with a one-line message that
// names the variable, the bad value and what is accepted (docs/configuration.md, "Validation").
// Value types; no shared state.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace lens {

class Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value)
      : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& { return std::get<1>(state_); }
  // The error message, or an empty string when the result holds a value.
  const std::string& message() const noexcept {
    static const std::string empty;
    return ok() ? empty : std::get<1>(state_).message();
  }

 private:
  std::variant<T, Error> state_;
};

// Success or an Error, for operations that produce no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message())), failed_(true) {}  // NOLINT

  static Status success() { return {}; }
  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  const std::string& message() const noexcept { return error_; }

 private:
  std::string error_;
  bool failed_ = false;
};

}  // namespace lens
