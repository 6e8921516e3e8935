#include "engine/request/document_reuse.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace lazyattn::engine {
namespace {

std::string number(float x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(x));
    return buf;
}

Expected<float> parse_float(std::string_view part, std::string_view text) {
    float x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(x)) {
        return invalid_argument("'" + std::string(part) + "': not a number");
    }
    return x;
}

}  // namespace

Status DocumentReuse::validate() const {
    if (!(logit_scale >= 0.25f && logit_scale <= 4.0f)) {
        return invalid_argument("document logit scale must be in [0.25, 4], got " + number(logit_scale));
    }
    if (!(logit_bias >= -8.0f && logit_bias <= 8.0f)) {
        return invalid_argument("document logit bias must be in [-8, 8], got " + number(logit_bias));
    }
    if (recompute_tokens < 0 || recompute_tokens > kMaxRecomputeTokens) {
        return invalid_argument("document recompute tokens must be in [0, " + std::to_string(kMaxRecomputeTokens) +
                                "], got " + std::to_string(recompute_tokens));
    }
    return {};
}

std::string DocumentReuse::name() const {
    std::string s;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : "+") + part; };
    if (anchored) add("anchor");
    if (logit_scale != 1.0f) add("scale=" + number(logit_scale));
    if (logit_bias != 0.0f) add("bias=" + number(logit_bias));
    if (recompute_tokens != 0) add("recompute=" + std::to_string(recompute_tokens));
    return s.empty() ? "plain" : s;
}

Expected<DocumentReuse> parse_document_reuse(std::string_view spec) {
    DocumentReuse r;
    if (spec == "plain" || spec.empty()) return r;
    while (!spec.empty()) {
        const size_t plus = spec.find('+');
        const std::string_view part = spec.substr(0, plus);
        spec = plus == std::string_view::npos ? std::string_view() : spec.substr(plus + 1);
        if (part == "anchor") {
            r.anchored = true;
        } else if (part.starts_with("scale=")) {
            LA_ASSIGN_OR_RETURN(r.logit_scale, parse_float(part, part.substr(6)));
        } else if (part.starts_with("bias=")) {
            LA_ASSIGN_OR_RETURN(r.logit_bias, parse_float(part, part.substr(5)));
        } else if (part.starts_with("recompute=")) {
            const std::string_view n = part.substr(10);
            const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), r.recompute_tokens);
            if (ec != std::errc() || end != n.data() + n.size()) {
                return invalid_argument("'" + std::string(part) + "': not a token count");
            }
        } else {
            return invalid_argument("unknown document reuse setting '" + std::string(part) +
                                    "' (plain, or anchor, scale=X, bias=X, recompute=N joined by '+')");
        }
    }
    LA_RETURN_IF_ERROR(r.validate());
    return r;
}

Expected<ReuseVariant> parse_reuse_variant(std::string_view spec) {
    ReuseVariant v{std::string(spec), CacheMode::kLazy, {}, std::nullopt};
    if (const size_t at = spec.find('@'); at != std::string_view::npos) {
        const std::string_view kv = spec.substr(at + 1);
        const size_t comma = kv.find(',');
        const auto k = kernels::parse_kv_dtype(kv.substr(0, comma));
        const auto vt = comma == std::string_view::npos ? k : kernels::parse_kv_dtype(kv.substr(comma + 1));
        if (!k || !vt) {
            return invalid_argument("KV types '" + std::string(kv) +
                                    "' are not TYPE or KTYPE,VTYPE of f32, f16, bf16, q8_0, q4_0");
        }
        v.kv_types = kernels::KvTypes{*k, *vt};
        spec = spec.substr(0, at);
    }
    const size_t colon = spec.find(':');
    LA_ASSIGN_OR_RETURN(v.mode, parse_cache_mode(spec.substr(0, colon)));
    if (colon != std::string_view::npos) {
        LA_ASSIGN_OR_RETURN(v.reuse, parse_document_reuse(spec.substr(colon + 1)));
    }
    return v;
}

}  // namespace lazyattn::engine
