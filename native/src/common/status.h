// Errors are values inside the engine: functions that can fail on input return Status / Result<T>.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace ee {

class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string msg) {
    Status s;
    s.ok_ = false;
    s.msg_ = std::move(msg);
    return s;
  }
  bool is_ok() const { return ok_; }
  const std::string& message() const { return msg_; }

 private:
  bool ok_ = true;
  std::string msg_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status err) : v_(std::move(err)) {}
  bool is_ok() const { return std::holds_alternative<T>(v_); }
  T& value() { return std::get<T>(v_); }
  T take() { return std::move(std::get<T>(v_)); }
  const Status& status() const { return std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ee
