#include "template/python_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/utf8.h"
#include "template/template_error.h"
#include "template/value.h"

namespace lazyattn::tmpl {

bool is_python_space(char32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

std::vector<char32_t> to_code_points(std::string_view s) {
    std::vector<char32_t> out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        const text::Utf8Decoded d = text::decode_utf8_one(s, pos);
        if (d.status == text::Utf8Status::kOk) {
            out.push_back(d.code_point);
            pos += d.length;
        } else {
            out.push_back(0xDC00 + static_cast<unsigned char>(s[pos]));
            ++pos;
        }
    }
    return out;
}

std::string from_code_points(const std::vector<char32_t>& cps, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
        const char32_t cp = cps[i];
        if (cp >= 0xDC80 && cp <= 0xDCFF) {
            out.push_back(static_cast<char>(cp - 0xDC00));
        } else {
            text::append_utf8(out, cp);
        }
    }
    return out;
}

size_t code_point_length(std::string_view s) {
    size_t n = 0;
    for (size_t pos = 0; pos < s.size(); ++n) {
        const text::Utf8Decoded d = text::decode_utf8_one(s, pos);
        pos += d.status == text::Utf8Status::kOk ? d.length : 1;
    }
    return n;
}

std::string python_strip(std::string_view s, const std::string* chars, bool left, bool right) {
    const std::vector<char32_t> cps = to_code_points(s);
    std::vector<char32_t> set;
    if (chars) set = to_code_points(*chars);
    auto strip = [&](char32_t cp) {
        if (!chars) return is_python_space(cp);
        for (char32_t c : set) {
            if (c == cp) return true;
        }
        return false;
    };
    size_t begin = 0, end = cps.size();
    if (left) {
        while (begin < end && strip(cps[begin])) ++begin;
    }
    if (right) {
        while (end > begin && strip(cps[end - 1])) --end;
    }
    return from_code_points(cps, begin, end);
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
    const std::vector<char32_t> cps = to_code_points(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < cps.size()) {
        while (i < cps.size() && is_python_space(cps[i])) ++i;
        if (i == cps.size()) break;
        size_t j = i;
        while (j < cps.size() && !is_python_space(cps[j])) ++j;
        words.emplace_back(i, j);
        i = j;
    }
    std::vector<std::string> out;
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
        for (auto [b, e] : words) out.push_back(from_code_points(cps, b, e));
        return out;
    }
    // The unsplit remainder keeps its inner whitespace but not the run next to the last split.
    const size_t n = static_cast<size_t>(maxsplit);
    if (!from_right) {
        for (size_t w = 0; w < n; ++w) out.push_back(from_code_points(cps, words[w].first, words[w].second));
        size_t end = cps.size();
        while (end > words[n].first && is_python_space(cps[end - 1])) --end;
        out.push_back(from_code_points(cps, words[n].first, end));
    } else {
        const size_t first_whole = words.size() - n;
        size_t begin = 0;
        while (begin < cps.size() && is_python_space(cps[begin])) ++begin;
        out.push_back(from_code_points(cps, begin, words[first_whole - 1].second));
        for (size_t w = first_whole; w < words.size(); ++w)
            out.push_back(from_code_points(cps, words[w].first, words[w].second));
    }
    return out;
}

}  // namespace

std::vector<std::string> python_split(std::string_view s, const std::string* sep, int64_t maxsplit) {
    if (!sep) return split_whitespace(s, maxsplit, false);
    if (sep->empty()) throw TemplateError("split(): empty separator");
    std::vector<std::string> out;
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        const size_t at = s.find(*sep, pos);
        if (at == std::string_view::npos) break;
        out.emplace_back(s.substr(pos, at - pos));
        pos = at + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
}

std::vector<std::string> python_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
    if (!sep) return split_whitespace(s, maxsplit, true);
    if (sep->empty()) throw TemplateError("rsplit(): empty separator");
    std::vector<std::string> reversed;
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(reversed.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t at = s.rfind(*sep, end - sep->size());
        if (at == std::string_view::npos) break;
        reversed.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
    }
    reversed.emplace_back(s.substr(0, end));
    return {reversed.rbegin(), reversed.rend()};
}

std::string ascii_upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return out;
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

std::string python_capitalize(std::string_view s) {
    std::string out = ascii_lower(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
    return out;
}

std::string python_title(std::string_view s) {
    std::string out(s);
    bool previous_cased = false;
    for (char& c : out) {
        const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
        if (lower && !previous_cased) c = static_cast<char>(c - 'a' + 'A');
        if (upper && previous_cased) c = static_cast<char>(c - 'A' + 'a');
        previous_cased = lower || upper;
    }
    return out;
}

std::string python_float_repr(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
    char buf[64];
    // Shortest digits that round-trip, as Python's repr uses.
    const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    const bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::stoi(sci.substr(e + 1));
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + exp_buf;
    }
    if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    const size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
    return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

namespace {

bool is_printable(char32_t cp) {
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F)) return false;
    if ((cp >= 0x205F && cp <= 0x2064) || cp == 0x3000 || cp == 0xFEFF) return false;
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    return true;
}

}  // namespace

std::string python_string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t cp : to_code_points(s)) {
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(cp));
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (!is_printable(cp)) {
            char buf[16];
            if (cp < 0x100) {
                std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
            } else if (cp < 0x10000) {
                std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
            } else {
                std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
            }
            out += buf;
        } else {
            text::append_utf8(out, cp);
        }
    }
    out.push_back(quote);
    return out;
}

namespace {

void append_repr(std::string& out, const Value& v, bool as_str, int depth) {
    if (depth > kMaxNesting)
        throw TemplateLimitError("value nested more than " + std::to_string(kMaxNesting) + " deep");
    switch (v.kind()) {
        case ValueKind::kUndefined:
            out += as_str ? "" : "Undefined";
            return;
        case ValueKind::kNone:
            out += "None";
            return;
        case ValueKind::kBool:
            out += v.as_bool() ? "True" : "False";
            return;
        case ValueKind::kInt:
            out += std::to_string(v.as_int());
            return;
        case ValueKind::kFloat:
            out += python_float_repr(v.as_float());
            return;
        case ValueKind::kString:
            out += as_str ? v.as_string() : python_string_repr(v.as_string());
            return;
        case ValueKind::kList: {
            out += v.is_tuple() ? "(" : "[";
            const ValueList& items = v.items();
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += ", ";
                append_repr(out, items[i], false, depth + 1);
            }
            if (v.is_tuple() && items.size() == 1) out += ",";
            out += v.is_tuple() ? ")" : "]";
            return;
        }
        case ValueKind::kDict:
        case ValueKind::kNamespace: {
            out += v.is_namespace() ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& [key, value] : v.dict_items().entries()) {
                if (!first) out += ", ";
                first = false;
                append_repr(out, key, false, depth + 1);
                out += ": ";
                append_repr(out, value, false, depth + 1);
            }
            out += v.is_namespace() ? "}>" : "}";
            return;
        }
        case ValueKind::kCallable:
            out += "<function " + v.function().name + ">";
            return;
    }
}

}  // namespace

std::string python_str(const Value& v) {
    if (v.is_string()) return v.as_string();
    std::string out;
    append_repr(out, v, true, 0);
    return out;
}

std::string python_repr(const Value& v) {
    std::string out;
    append_repr(out, v, false, 0);
    return out;
}

}  // namespace lazyattn::tmpl
