// Status and Expected<T>: how every module reports an error a user can cause (bad file, bad
// request, out of blocks). Exceptions never cross a module boundary; broken invariants use
// LA_CHECK (check.h) instead.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace lazyattn {

enum class StatusCode {
    kOk = 0,
    kInvalidArgument,    // the caller passed something malformed
    kNotFound,           // a file, key, tensor or id does not exist
    kOutOfRange,         // a size or position beyond a limit (context length, pool size)
    kCorrupt,            // a file whose bytes contradict its own format
    kUnsupported,        // well-formed but not something lazyattn implements
    kResourceExhausted,  // out of KV blocks: the request can never fit
    kUnavailable,        // busy right now (queue full): the same request may succeed later
    kIoError,            // the operating system refused (open, mmap, read)
    kCancelled,
    kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok_status() { return {}; }
    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string& message() const { return message_; }
    // "corrupt: tensor 'x' extends past the end of the file"
    std::string to_string() const;

private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Expected {
public:
    Expected(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
    Expected(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

    bool ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return ok(); }
    const Status& status() const {
        static const Status kOkStatus;
        return ok() ? kOkStatus : std::get<Status>(v_);
    }
    T& value() & { return std::get<T>(v_); }
    const T& value() const& { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

private:
    std::variant<T, Status> v_;
};

}  // namespace lazyattn

#define LA_CONCAT_INNER(a, b) a##b
#define LA_CONCAT(a, b) LA_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define LA_RETURN_IF_ERROR(expr)                 \
    do {                                         \
        ::lazyattn::Status la_status_ = (expr);  \
        if (!la_status_.ok()) return la_status_; \
    } while (0)

// `LA_ASSIGN_OR_RETURN(auto x, f());` binds the value or returns the error.
#define LA_ASSIGN_OR_RETURN(lhs, expr) LA_ASSIGN_OR_RETURN_IMPL(LA_CONCAT(la_exp_, __LINE__), lhs, expr)
#define LA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                           \
    if (!tmp.ok()) return tmp.status();          \
    lhs = std::move(tmp).value()
