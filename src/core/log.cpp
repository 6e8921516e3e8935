#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "core/json_string.h"

namespace lazyattn::log {
namespace {

std::atomic<Format> g_format{Format::kText};

spdlog::logger& logger() {
    static std::shared_ptr<spdlog::logger> l = [] {
        auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        auto lg = std::make_shared<spdlog::logger>("lazyattn", sink);
        lg->set_pattern("%Y-%m-%d %H:%M:%S.%e %-5l %v");
        lg->set_level(spdlog::level::info);
        lg->flush_on(spdlog::level::trace);  // a line per event: never held back
        return lg;
    }();
    return *l;
}

spdlog::level::level_enum to_spdlog(Level l) {
    switch (l) {
        case Level::kTrace:
            return spdlog::level::trace;
        case Level::kDebug:
            return spdlog::level::debug;
        case Level::kInfo:
            return spdlog::level::info;
        case Level::kWarn:
            return spdlog::level::warn;
        case Level::kError:
            return spdlog::level::err;
        case Level::kOff:
            return spdlog::level::off;
    }
    return spdlog::level::info;
}

std::string number_text(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
        std::snprintf(buf, sizeof buf, "%.4g", v);
    }
    return buf;
}

// Text values with spaces or quotes are quoted so a line splits back into key=value pairs.
void append_text_value(std::string& out, const std::string& v) {
    if (!v.empty() && v.find_first_of(" \"=\t\n") == std::string::npos) {
        out += v;
        return;
    }
    append_json_string(out, v);
}

}  // namespace

Expected<Level> parse_level(std::string_view name) {
    static const std::pair<const char*, Level> kNames[] = {{"trace", Level::kTrace}, {"debug", Level::kDebug},
                                                           {"info", Level::kInfo},   {"warn", Level::kWarn},
                                                           {"error", Level::kError}, {"off", Level::kOff}};
    for (const auto& [n, l] : kNames) {
        if (name == n) return l;
    }
    return invalid_argument("unknown log level '" + std::string(name) + "' (trace, debug, info, warn, error, off)");
}

void configure(Level level, Format format) {
    g_format.store(format);
    spdlog::logger& l = logger();
    l.set_level(to_spdlog(level));
    if (format == Format::kJson) {
        // The payload (format_line) carries "msg" and the fields; the pattern adds time and level.
        l.set_pattern("{\"time\":\"%Y-%m-%dT%H:%M:%S.%e%z\",\"level\":\"%l\",%v}");
    } else {
        l.set_pattern("%Y-%m-%d %H:%M:%S.%e %-5l %v");
    }
}

bool enabled(Level level) { return logger().should_log(to_spdlog(level)); }

std::string format_line(Format format, std::string_view message, std::initializer_list<Field> fields) {
    std::string out;
    if (format == Format::kJson) {
        out += "\"msg\":";
        append_json_string(out, message);
        for (const Field& f : fields) {
            out += ',';
            append_json_string(out, f.key);
            out += ':';
            if (const auto* s = std::get_if<std::string>(&f.value)) {
                append_json_string(out, *s);
            } else {
                out += number_text(std::get<double>(f.value));
            }
        }
        return out;
    }
    out += message;
    for (const Field& f : fields) {
        out += ' ';
        out += f.key;
        out += '=';
        if (const auto* s = std::get_if<std::string>(&f.value)) {
            append_text_value(out, *s);
        } else {
            out += number_text(std::get<double>(f.value));
        }
    }
    return out;
}

void write(Level level, std::string_view message, std::initializer_list<Field> fields) {
    spdlog::logger& l = logger();
    const auto lvl = to_spdlog(level);
    if (!l.should_log(lvl)) return;
    l.log(lvl, "{}", format_line(g_format.load(), message, fields));
}

}  // namespace lazyattn::log
