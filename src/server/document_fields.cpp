// The request fields that say which documents a request reads and how: `cache_salt`,
// `documents`, `document_reuse` and `documents_from` / `document_delimiter`. Every API's parser
// (OpenAI, native, Anthropic, Responses) reads them here, so each is spelled and checked once.
#include "server/document_fields.h"

#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "server/request_fields.h"

namespace lazyattn::server {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::read_string;
using fields::type_error;
using fields::value_error;

std::optional<ApiError> check_cache_salt(const std::string& salt) {
    if (!text::is_valid_utf8(salt))
        return invalid_request("'cache_salt' is not valid UTF-8", "cache_salt", "invalid_utf8");
    if (salt.size() > kMaxCacheSaltBytes) {
        return value_error("cache_salt", "must be at most " + std::to_string(kMaxCacheSaltBytes) + " bytes");
    }
    return std::nullopt;
}

std::optional<ApiError> parse_cache_salt(const json& body, std::string& out) {
    if (absent(body, "cache_salt")) return std::nullopt;
    if (!body.at("cache_salt").is_string()) return type_error("cache_salt", "a string");
    out = body.at("cache_salt").get<std::string>();
    return check_cache_salt(out);
}

std::optional<ApiError> parse_documents(const json& value, bool allow_ids, std::vector<DocumentRef>& out) {
    if (value.is_null()) return std::nullopt;
    if (!value.is_array()) return type_error("documents", "a list of strings or {\"text\", \"title\"} objects");
    for (size_t i = 0; i < value.size(); ++i) {
        const std::string p = "documents[" + std::to_string(i) + "]";
        const json& d = value[i];
        DocumentRef ref;
        if (d.is_string()) {
            if (auto e = read_string(d, p, ref.text)) return e;
        } else if (d.is_object()) {
            if (d.contains("text") && !d["text"].is_null()) {
                if (auto e = read_string(d["text"], p + ".text", ref.text)) return e;
            }
            if (d.contains("title") && !d["title"].is_null()) {
                if (auto e = read_string(d["title"], p + ".title", ref.title)) return e;
            }
            if (d.contains("id") && !d["id"].is_null()) {
                if (auto e = read_string(d["id"], p + ".id", ref.id)) return e;
            }
            if (d.contains("tokens") && !d["tokens"].is_null()) {
                // Range-checked against the vocabulary by the engine, which refuses the request.
                if (auto e = parse_token_ids(d["tokens"], p + ".tokens", INT32_MAX, ref.tokens)) return e;
                if (ref.tokens.empty()) return value_error(p + ".tokens", "must not be empty");
                if (!ref.text.empty() || !ref.title.empty())
                    return value_error(p, "takes 'tokens' or 'text', not both");
            }
            if (ref.text.empty() && ref.tokens.empty() && ref.id.empty())
                return value_error(p, "needs a non-empty 'text' or 'tokens' (or the 'id' of a cached document)");
            if (ref.by_id() && !allow_ids) return value_error(p, "needs 'text' or 'tokens' here");
        } else {
            return type_error(p, "a string or an object");
        }
        if (!ref.by_id() && ref.text.empty() && ref.tokens.empty()) return value_error(p, "must not be empty");
        out.push_back(std::move(ref));
    }
    return std::nullopt;
}

namespace {

// The JSON field each DocumentReuse setting came from, for naming it in an error: the parser
// checks syntax and types, DocumentReuse::check() the ranges (the one place they are written).
struct ReuseFieldNames {
    // The count has three spellings: "recompute_tokens", "recompute": n, {"tokens": n}.
    std::string recompute_tokens = "document_reuse.recompute_tokens";

    std::string of(engine::ReuseSetting setting) const {
        switch (setting) {
            case engine::ReuseSetting::kLogitScale:
                return "document_reuse.logit_scale";
            case engine::ReuseSetting::kLogitBias:
                return "document_reuse.logit_bias";
            case engine::ReuseSetting::kRecomputeTokens:
                return recompute_tokens;
            case engine::ReuseSetting::kRecomputeShare:
                return "document_reuse.recompute.share";
            case engine::ReuseSetting::kRecomputeSelect:
                return "document_reuse.recompute.select";
            case engine::ReuseSetting::kNeighbours:
                return "document_reuse.neighbours";
            case engine::ReuseSetting::kDampTokens:
                return "document_reuse.damp.tokens";
            case engine::ReuseSetting::kDampBias:
                return "document_reuse.damp.bias";
            case engine::ReuseSetting::kCombination:
                break;
        }
        return "document_reuse";
    }
};

// A setting's value read with its type checked and nothing else (DocumentReuse::check() has the
// ranges). Integers saturate at the int32 DocumentReuse keeps, numbers at the float range, so a
// value past either stays out of range and is refused instead of wrapping into it.
Err read_reuse_integer(const json& v, const std::string& param, int32_t& out) {
    int64_t wide = 0;
    if (v.is_number_unsigned()) {
        wide = int64_t(std::min<uint64_t>(v.get<uint64_t>(), uint64_t(INT64_MAX)));
    } else if (v.is_number_integer()) {
        wide = v.get<int64_t>();
    } else if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>()) {
        wide = int64_t(std::clamp(v.get<double>(), double(INT32_MIN) - 1, double(INT32_MAX) + 1));
    } else {
        return type_error(param, "an integer");
    }
    out = int32_t(std::clamp<int64_t>(wide, INT32_MIN, INT32_MAX));
    return std::nullopt;
}

Err read_reuse_number(const json& v, const std::string& param, double& out) {
    if (!v.is_number()) return type_error(param, "a number");
    out = v.get<double>();
    return std::nullopt;
}

// `document_reuse.recompute`: a token count, or {"tokens": n} / {"share": x} with an optional
// "select" (engine::select_names()). Every error names the field under document_reuse.
Err parse_recompute_field(const json& v, engine::DocumentReuse& reuse, ReuseFieldNames& names) {
    static const std::string kKey = "document_reuse.recompute";
    if (v.is_number()) {
        names.recompute_tokens = kKey;
        return read_reuse_integer(v, kKey, reuse.recompute_tokens);
    }
    if (!v.is_object()) return type_error(kKey, "a token count or an object {tokens|share, select}");
    for (const auto& [key, value] : v.items()) {
        if (key != "tokens" && key != "share" && key != "select") {
            return value_error(kKey, "has an unknown field '" + clip_for_message(key) + "' (tokens, share, select)");
        }
    }
    if (v.contains("tokens") == v.contains("share")) return value_error(kKey, "takes one of 'tokens' or 'share'");
    if (v.contains("tokens")) {
        names.recompute_tokens = kKey + ".tokens";
        if (auto e = read_reuse_integer(v.at("tokens"), kKey + ".tokens", reuse.recompute_tokens)) return e;
    } else {
        if (auto e = read_reuse_number(v.at("share"), kKey + ".share", reuse.recompute_share)) return e;
    }
    if (v.contains("select")) {
        const json& s = v.at("select");
        if (!s.is_string()) return type_error(kKey + ".select", "a string");
        const auto select = engine::parse_select(s.get<std::string>());
        if (!select) return value_error(kKey + ".select", "must be one of " + engine::select_names("\""));
        reuse.recompute_select = *select;
    }
    return std::nullopt;
}

// `document_reuse.damp`: {"tokens": n, "bias": b}, both required (damp=N:B in the string form).
Err parse_damp_field(const json& v, engine::DocumentReuse& reuse) {
    static const std::string kKey = "document_reuse.damp";
    if (!v.is_object()) return type_error(kKey, "an object {tokens, bias}");
    for (const auto& [key, value] : v.items()) {
        if (key != "tokens" && key != "bias") {
            return value_error(kKey, "has an unknown field '" + clip_for_message(key) + "' (tokens, bias)");
        }
    }
    if (!v.contains("tokens") || !v.contains("bias")) return value_error(kKey, "takes both 'tokens' and 'bias'");
    if (auto e = read_reuse_integer(v.at("tokens"), kKey + ".tokens", reuse.damp_tokens)) return e;
    double bias = 0.0;
    if (auto e = read_reuse_number(v.at("bias"), kKey + ".bias", bias)) return e;
    reuse.damp_bias = engine::narrow_to_float(bias);
    return std::nullopt;
}

}  // namespace

// `document_reuse`: "plain" / "anchor+scale=X+bias=Y+recompute=N+damp=N:B" (or recompute=P%@SELECT),
// or {"anchored": bool, "neighbours": k, "logit_scale": x, "logit_bias": y, "recompute_tokens": n,
//  "recompute": n | {"tokens": n | "share": x, "select": s}, "damp": {"tokens": n, "bias": b}}.
Err parse_document_reuse_field(const json& body, std::optional<engine::DocumentReuse>& out) {
    static const char* kKey = "document_reuse";
    if (absent(body, kKey)) return std::nullopt;
    const json& v = body.at(kKey);
    engine::DocumentReuse reuse;
    if (v.is_string()) {
        std::string spec;
        if (auto e = read_string(v, kKey, spec)) return e;
        auto parsed = engine::parse_document_reuse(spec);
        if (!parsed.ok()) return value_error(kKey, parsed.status().message());
        out = *parsed;
        return std::nullopt;
    }
    if (!v.is_object()) return type_error(kKey, "a string or an object");
    for (const auto& [key, value] : v.items()) {
        if (key != "anchored" && key != "neighbours" && key != "logit_scale" && key != "logit_bias" &&
            key != "recompute_tokens" && key != "recompute" && key != "damp") {
            return value_error(kKey, "has an unknown field '" + clip_for_message(key) +
                                         "' (anchored, neighbours, logit_scale, logit_bias, recompute_tokens, "
                                         "recompute, damp)");
        }
    }
    if (v.contains("recompute_tokens") && v.contains("recompute")) {
        return value_error(kKey, "takes 'recompute' or 'recompute_tokens', not both");
    }
    ReuseFieldNames names;
    const auto field = [](const char* name) { return std::string("document_reuse.") + name; };
    const auto given = [&](const char* name) { return v.contains(name) && !v.at(name).is_null(); };
    if (given("anchored")) {
        if (!v.at("anchored").is_boolean()) return type_error(field("anchored"), "a boolean");
        reuse.anchored = v.at("anchored").get<bool>();
    }
    double scale = reuse.logit_scale, bias = reuse.logit_bias;
    if (given("logit_scale")) {
        if (auto e = read_reuse_number(v.at("logit_scale"), field("logit_scale"), scale)) return e;
    }
    if (given("logit_bias")) {
        if (auto e = read_reuse_number(v.at("logit_bias"), field("logit_bias"), bias)) return e;
    }
    reuse.logit_scale = engine::narrow_to_float(scale);
    reuse.logit_bias = engine::narrow_to_float(bias);
    if (given("recompute_tokens")) {
        const std::string param = field("recompute_tokens");
        if (auto e = read_reuse_integer(v.at("recompute_tokens"), param, reuse.recompute_tokens)) return e;
    }
    if (given("neighbours")) {
        if (auto e = read_reuse_integer(v.at("neighbours"), field("neighbours"), reuse.neighbours)) return e;
    }
    if (given("recompute")) {
        if (auto e = parse_recompute_field(v.at("recompute"), reuse, names)) return e;
    }
    if (given("damp")) {
        if (auto e = parse_damp_field(v.at("damp"), reuse)) return e;
    }
    if (const auto error = reuse.check()) return value_error(names.of(error->setting), error->message);
    out = reuse;
    return std::nullopt;
}

// `documents_from`: "parts" | "delimiter" | "none", or {"source", "message", "delimiter"};
// `document_delimiter`: a literal or "regex:PATTERN" (implies the delimiter source).
Err parse_documents_from(const json& body, GenerationRequest& out) {
    auto set_delimiter = [&](const json& v, const std::string& param) -> Err {
        std::string spec;
        if (auto e = read_string(v, param, spec)) return e;
        auto d = Delimiter::compile(spec);
        if (!d.ok()) return value_error(param, d.status().message());
        out.document_delimiter = *d;
        return std::nullopt;
    };
    auto set_source = [&](const json& v, const std::string& param) -> Err {
        std::string name;
        if (auto e = read_string(v, param, name)) return e;
        auto src = parse_documents_from_name(name);
        if (!src.ok()) return value_error(param, src.status().message());
        // "known" alone keeps a delimiter given beside it (document_delimiter) as its source.
        if (src->first != DocumentsSource::kNone || !src->second || !out.documents_source)
            out.documents_source = src->first;
        out.documents_known = src->second;
        return std::nullopt;
    };
    if (!absent(body, "document_delimiter")) {
        if (auto e = set_delimiter(body.at("document_delimiter"), "document_delimiter")) return e;
        out.documents_source = DocumentsSource::kDelimiter;
    }
    if (absent(body, "documents_from")) return std::nullopt;
    const json& v = body.at("documents_from");
    if (v.is_string()) return set_source(v, "documents_from");
    if (!v.is_object()) return type_error("documents_from", "a string or an object");
    for (const auto& [key, value] : v.items()) {
        if (key != "source" && key != "message" && key != "delimiter" && key != "known") {
            return value_error("documents_from", "has an unknown field '" + clip_for_message(key) +
                                                     "' (source, message, delimiter, known)");
        }
    }
    if (!absent(v, "delimiter")) {
        if (auto e = set_delimiter(v.at("delimiter"), "documents_from.delimiter")) return e;
        out.documents_source = DocumentsSource::kDelimiter;
    }
    if (!absent(v, "source")) {
        if (auto e = set_source(v.at("source"), "documents_from.source")) return e;
    }
    if (!absent(v, "known")) {
        if (!v.at("known").is_boolean()) return type_error("documents_from.known", "a boolean");
        out.documents_known = v.at("known").get<bool>();
    }
    if (!absent(v, "message")) {
        const json& m = v.at("message");
        if (m.is_number_integer()) {
            if (m.get<int64_t>() < 0 || m.get<int64_t>() > 100000) {
                return value_error("documents_from.message", "must be a message index, auto, last_user or system");
            }
            out.documents_message = std::make_pair(DocumentsFrom::Message::kIndex, int32_t(m.get<int64_t>()));
        } else {
            std::string name;
            if (auto e = read_string(m, "documents_from.message", name)) return e;
            auto msg = parse_documents_message(name);
            if (!msg.ok()) return value_error("documents_from.message", msg.status().message());
            out.documents_message = *msg;
        }
    }
    return std::nullopt;
}

}  // namespace lazyattn::server
