// Logging: leveled, structured lines on stderr through spdlog, as text
// ("2026-11-30 23:30:01.123 info  http request method=POST path=/v1/completions status=200")
// or as one JSON object per line ({"time", "level", "msg", ...fields}) for log shippers.
// Fields are numbers or strings; the message is a fixed phrase, the variable parts are fields.
// configure() once at startup (commands call it from their options); until then: text, info.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

#include "core/status.h"

namespace lazyattn::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class Format { kText, kJson };

struct Field {
    Field(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
    Field(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
    Field(std::string_view k, const std::string& v) : key(k), value(v) {}
    template <typename N, typename = std::enable_if_t<std::is_arithmetic_v<N>>>
    Field(std::string_view k, N v) : key(k), value(double(v)) {}

    std::string_view key;
    std::variant<std::string, double> value;
};

// "trace", "debug", "info", "warn", "error", "off"; kInvalidArgument naming the values otherwise.
Expected<Level> parse_level(std::string_view name);
void configure(Level level, Format format);
bool enabled(Level level);

void write(Level level, std::string_view message, std::initializer_list<Field> fields = {});
inline void debug(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::kDebug, m, f); }
inline void info(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::kInfo, m, f); }
inline void warn(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::kWarn, m, f); }
inline void error(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::kError, m, f); }

// The line write() would emit without its timestamp and level (tests, and the formats' one rule).
std::string format_line(Format format, std::string_view message, std::initializer_list<Field> fields);

}  // namespace lazyattn::log
