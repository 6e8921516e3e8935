#include "engine/request/document_reuse.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "core/utf8.h"

namespace lazyattn::engine {
namespace {

// A client's part quoted in an error: its first bytes only, so a megabyte of setting never
// becomes a megabyte of error (one place for every message below).
std::string quoted(std::string_view part) { return "'" + text::clip_for_message(part) + "'"; }

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

Expected<double> parse_number(std::string_view part, std::string_view text) {
    double x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(x)) {
        return invalid_argument(quoted(part) + ": not a number");
    }
    return x;
}

}  // namespace

std::optional<ReuseSettingError> DocumentReuse::check() const {
    const auto refuse = [](ReuseSetting setting, std::string message) {
        return std::optional<ReuseSettingError>(ReuseSettingError{setting, std::move(message)});
    };
    if (!(logit_scale >= 0.25f && logit_scale <= 4.0f)) {
        return refuse(ReuseSetting::kLogitScale,
                      "document logit scale must be in [0.25, 4], got " + number(logit_scale));
    }
    if (!(logit_bias >= -8.0f && logit_bias <= 8.0f)) {
        return refuse(ReuseSetting::kLogitBias, "document logit bias must be in [-8, 8], got " + number(logit_bias));
    }
    if (recompute_tokens < 0 || recompute_tokens > kMaxRecomputeTokens) {
        return refuse(ReuseSetting::kRecomputeTokens, "document recompute tokens must be in [0, " +
                                                          std::to_string(kMaxRecomputeTokens) + "], got " +
                                                          std::to_string(recompute_tokens));
    }
    // (forgiving the rounding of "0.01%" / 100, the smallest share)
    if (recompute_share != 0.0 && !(recompute_share >= kMinRecomputeShare * (1 - 1e-9) && recompute_share <= 1.0)) {
        return refuse(ReuseSetting::kRecomputeShare,
                      "document recompute share must be 0 (none) or in [0.0001, 1] (0.01% to 100%), got " +
                          number(recompute_share));
    }
    if (recompute_tokens > 0 && recompute_share > 0.0) {
        return refuse(ReuseSetting::kCombination, "document recompute takes a token count or a share, not both");
    }
    if (neighbours < 0 || neighbours > kMaxNeighbours) {
        return refuse(ReuseSetting::kNeighbours, "document neighbours must be in [0, " +
                                                     std::to_string(kMaxNeighbours) + "], got " +
                                                     std::to_string(neighbours));
    }
    if (neighbours_when_ready && neighbours == 0) {
        return refuse(ReuseSetting::kNeighbours, "neighbours@ready needs a count of neighbours (neighbours=K@ready)");
    }
    if (neighbours > 0 && anchored) {
        return refuse(ReuseSetting::kCombination,
                      "anchor and neighbours=K are two encodings of a document (after the preamble, after "
                      "its neighbours): choose one");
    }
    if (damp_tokens < 0 || damp_tokens > kMaxDampTokens) {
        return refuse(ReuseSetting::kDampTokens, "document damp tokens must be in [0, " +
                                                     std::to_string(kMaxDampTokens) + "], got " +
                                                     std::to_string(damp_tokens));
    }
    if (!(damp_bias >= kMinDampBias && damp_bias <= 0.0f)) {
        return refuse(ReuseSetting::kDampBias,
                      "document damp bias must be in [-32, 0] (a damping), got " + number(damp_bias));
    }
    if (damp_bias != 0.0f && damp_tokens == 0) {
        return refuse(ReuseSetting::kDampTokens, "document damp bias needs the tokens it damps (damp=N:B, N > 0)");
    }
    if (damps() && recomputes() && !reuse_splits_spans(*this)) {
        return refuse(ReuseSetting::kCombination,
                      "damp=N:B damps whole spans of cached keys, and a recompute share or selection reads "
                      "private rows inside them: use damp with recompute=N (the first tokens), or alone");
    }
    if (recompute_select != RecomputeSelect::kFirst && !recomputes()) {
        return refuse(ReuseSetting::kRecomputeSelect, "document recompute selection '" +
                                                          std::string(select_name(recompute_select)) +
                                                          "' needs a budget (recompute=N or recompute=P%)");
    }
    return std::nullopt;
}

Status DocumentReuse::validate() const {
    if (auto error = check()) return invalid_argument(error->message);
    return {};
}

int32_t DocumentReuse::recompute_count(int32_t n) const {
    if (n <= 0) return 0;
    // ceil(share * n), forgiving the float share's rounding (0.3f is 0.3000000119: 30% of 50
    // tokens is 15, not 16): its relative error is under 1e-7.
    if (recompute_share > 0.0) {
        return std::clamp(int32_t(std::ceil(recompute_share * n * (1.0 - 1e-6))), 1, n);
    }
    return std::min(recompute_tokens, n);
}

int32_t DocumentReuse::damp_count(int32_t n, int32_t block_size) const {
    if (n <= 0 || damp_tokens <= 0) return 0;
    const int64_t rounded = (int64_t(damp_tokens) + block_size - 1) / block_size * block_size;
    return int32_t(std::min<int64_t>(rounded, n));
}

int32_t recompute_row_count(const DocumentReuse& reuse, int32_t num_tokens, int32_t block_size) {
    const int32_t n = reuse.recompute_count(num_tokens);
    if (!reuse_splits_spans(reuse) || n == 0) return n;
    // The first N tokens are read as a span of their own, which starts and ends on a block edge.
    const int64_t rounded = (int64_t(n) + block_size - 1) / block_size * block_size;
    return int32_t(std::min<int64_t>(rounded, num_tokens));
}

std::vector<int32_t> recompute_rows(const DocumentReuse& reuse, const std::vector<int32_t>& tokens,
                                    int32_t block_size) {
    if (selected_by_measure(reuse.recompute_select)) return {};  // chosen after measuring (select_by_mass)
    const int32_t n = int32_t(tokens.size());
    const int32_t count = recompute_row_count(reuse, n, block_size);
    std::vector<int32_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    if (reuse.recompute_select == RecomputeSelect::kRandom && count < n) {
        uint64_t seed = 0xcbf29ce484222325ull;  // FNV-1a over the tokens
        for (const int32_t t : tokens) seed = (seed ^ uint32_t(t)) * 0x100000001b3ull;
        std::mt19937_64 rng(seed);
        for (int32_t i = 0; i < count; ++i) {  // partial Fisher-Yates: rows[0, count) is the sample
            std::swap(rows[size_t(i)], rows[size_t(i + int32_t(rng() % uint64_t(n - i)))]);
        }
        rows.resize(size_t(count));
        std::sort(rows.begin(), rows.end());
        return rows;
    }
    rows.resize(size_t(count));
    return rows;
}

std::vector<std::vector<int32_t>> select_by_mass(RecomputeSelect select, const std::vector<std::vector<float>>& mass,
                                                 const std::vector<int32_t>& count) {
    struct Key {
        float mass;
        int32_t doc, token;
    };
    const auto heavier = [](const Key& a, const Key& b) {
        if (a.mass != b.mass) return a.mass > b.mass;
        return a.doc != b.doc ? a.doc < b.doc : a.token < b.token;
    };
    std::vector<std::vector<int32_t>> rows(mass.size());
    const auto take = [&](std::vector<Key>& keys, size_t n) {
        n = std::min(n, keys.size());
        std::partial_sort(keys.begin(), keys.begin() + int64_t(n), keys.end(), heavier);
        for (size_t i = 0; i < n; ++i) rows[size_t(keys[i].doc)].push_back(keys[i].token);
    };
    const bool per_document = select != RecomputeSelect::kQueryAll;
    std::vector<Key> keys;
    size_t total = 0;
    for (size_t d = 0; d < mass.size(); ++d) {
        if (per_document) keys.clear();
        size_t wanted = size_t(std::max(0, count[d]));
        size_t t = 0;
        if (select == RecomputeSelect::kFirstQuery) {  // the first half, whatever their mass
            for (; t < std::min(mass[d].size(), (wanted + 1) / 2); ++t) rows[d].push_back(int32_t(t));
            wanted -= t;
        }
        for (; t < mass[d].size(); ++t) keys.push_back({mass[d][t], int32_t(d), int32_t(t)});
        if (per_document) take(keys, wanted);
        total += size_t(std::max(0, count[d]));
    }
    if (!per_document) take(keys, total);
    for (auto& r : rows) std::sort(r.begin(), r.end());
    return rows;
}

namespace {

// Every selection and its name, in the order the messages list them: the one table.
constexpr std::pair<RecomputeSelect, std::string_view> kSelections[] = {
    {RecomputeSelect::kFirst, "first"},         {RecomputeSelect::kRandom, "random"},
    {RecomputeSelect::kQuery, "query"},         {RecomputeSelect::kQueryAll, "query-all"},
    {RecomputeSelect::kDeviation, "deviation"}, {RecomputeSelect::kFirstQuery, "first-query"},
};

}  // namespace

std::string_view select_name(RecomputeSelect s) {
    for (const auto& [select, name] : kSelections) {
        if (select == s) return name;
    }
    return "?";
}

std::optional<RecomputeSelect> parse_select(std::string_view name) {
    for (const auto& [select, n] : kSelections) {
        if (n == name) return select;
    }
    return std::nullopt;
}

std::string select_names(std::string_view quote) {
    std::string s;
    for (const auto& [select, name] : kSelections) {
        s += (s.empty() ? "" : ", ") + std::string(quote) + std::string(name) + std::string(quote);
    }
    return s;
}

std::string DocumentReuse::name() const {
    std::string s;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : "+") + part; };
    if (anchored) add("anchor");
    if (neighbours > 0) add("neighbours=" + std::to_string(neighbours) + (neighbours_when_ready ? "@ready" : ""));
    if (logit_scale != 1.0f) add("scale=" + number(logit_scale));
    if (logit_bias != 0.0f) add("bias=" + number(logit_bias));
    if (recomputes()) {
        std::string part = "recompute=";
        part += recompute_share > 0.0 ? number(recompute_share * 100.0) + "%" : std::to_string(recompute_tokens);
        if (recompute_select != RecomputeSelect::kFirst) part += "@" + std::string(select_name(recompute_select));
        add(part);
    }
    if (damps()) add("damp=" + std::to_string(damp_tokens) + ":" + number(damp_bias));
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
        } else if (part.starts_with("neighbours=")) {
            std::string_view n = part.substr(11);
            if (n.ends_with("@ready")) {
                r.neighbours_when_ready = true;
                n.remove_suffix(6);
            }
            const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), r.neighbours);
            if (ec != std::errc() || end != n.data() + n.size()) {
                return invalid_argument(quoted(part) + ": not a count of neighbours");
            }
        } else if (part.starts_with("scale=")) {
            LA_ASSIGN_OR_RETURN(const double scale, parse_number(part, part.substr(6)));
            r.logit_scale = narrow_to_float(scale);
        } else if (part.starts_with("bias=")) {
            LA_ASSIGN_OR_RETURN(const double bias, parse_number(part, part.substr(5)));
            r.logit_bias = narrow_to_float(bias);
        } else if (part.starts_with("damp=")) {
            const std::string_view n = part.substr(5);
            const size_t colon = n.find(':');
            if (colon == std::string_view::npos) {
                return invalid_argument(quoted(part) + ": needs tokens and a bias, damp=N:B (e.g. damp=16:-2)");
            }
            const auto [end, ec] = std::from_chars(n.data(), n.data() + colon, r.damp_tokens);
            if (ec != std::errc() || end != n.data() + colon) {
                return invalid_argument(quoted(part) + ": not a token count before ':'");
            }
            LA_ASSIGN_OR_RETURN(const double bias, parse_number(part, n.substr(colon + 1)));
            r.damp_bias = narrow_to_float(bias);  // its range: validate()
        } else if (part.starts_with("recompute=")) {
            std::string_view n = part.substr(10);
            if (const size_t at = n.find('@'); at != std::string_view::npos) {
                const auto select = parse_select(n.substr(at + 1));
                if (!select) {
                    return invalid_argument(quoted(part) + ": unknown selection (" + select_names() + ")");
                }
                r.recompute_select = *select;
                n = n.substr(0, at);
            }
            if (n.ends_with('%')) {
                LA_ASSIGN_OR_RETURN(const double percent, parse_number(part, n.substr(0, n.size() - 1)));
                r.recompute_share = percent / 100.0;  // its range: validate()
            } else {
                const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), r.recompute_tokens);
                if (ec != std::errc() || end != n.data() + n.size()) {
                    return invalid_argument(quoted(part) + ": not a token count or a share P%");
                }
            }
        } else {
            return invalid_argument(
                "unknown document reuse setting " + quoted(part) +
                " (plain, or anchor, neighbours=K[@ready], scale=X, bias=X, recompute=N[@SELECT] or "
                "recompute=P%[@SELECT], damp=N:B joined by '+')");
        }
    }
    LA_RETURN_IF_ERROR(r.validate());
    return r;
}

Expected<ReuseVariant> parse_reuse_variant(std::string_view spec) {
    ReuseVariant v{std::string(spec), CacheMode::kLazy, {}, std::nullopt};
    if (const size_t at = spec.rfind('@'); at != std::string_view::npos) {
        const std::string_view kv = spec.substr(at + 1);
        const size_t comma = kv.find(',');
        const auto k = kernels::parse_kv_dtype(kv.substr(0, comma));
        const auto vt = comma == std::string_view::npos ? k : kernels::parse_kv_dtype(kv.substr(comma + 1));
        if (k && vt) {
            v.kv_types = kernels::KvTypes{*k, *vt};
            spec = spec.substr(0, at);
        } else if (!parse_select(kv) && kv != "ready") {  // "neighbours=K@ready" ends the spec
            return invalid_argument("'@" + text::clip_for_message(kv) +
                                    "' is neither KV types (TYPE or KTYPE,VTYPE of f32, f16, bf16, q8_0, q4_0) nor "
                                    "a recompute selection (" +
                                    select_names() + ")");
        }
    }
    const size_t colon = spec.find(':');
    LA_ASSIGN_OR_RETURN(v.mode, parse_cache_mode(spec.substr(0, colon)));
    if (colon != std::string_view::npos && spec.substr(colon + 1) == "default") {
        v.model_default = true;
    } else if (colon != std::string_view::npos) {
        LA_ASSIGN_OR_RETURN(v.reuse, parse_document_reuse(spec.substr(colon + 1)));
    }
    return v;
}

}  // namespace lazyattn::engine
