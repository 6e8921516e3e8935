#include "server/openai_request.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "server/constraint_request.h"
#include "server/request_fields.h"
#include "tokenizer/chat_template_kwargs.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::read_string;
using fields::type_error;
using fields::value_error;

// A JSON number (a float with an integral value counts as an integer where one is wanted).
Err read_number(const json& body, const char* key, double& out) {
    if (absent(body, key)) return std::nullopt;
    const json& v = body.at(key);
    if (!v.is_number()) return type_error(key, "a number");
    out = v.get<double>();
    if (!std::isfinite(out)) return value_error(key, "must be finite");
    return std::nullopt;
}

Err read_integer(const json& body, const char* key, int64_t& out) {
    if (absent(body, key)) return std::nullopt;
    const json& v = body.at(key);
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) return value_error(key, "is too large");
    if (v.is_number_integer()) {
        out = v.get<int64_t>();
    } else if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
               std::fabs(v.get<double>()) < 9.0e18) {
        out = int64_t(v.get<double>());
    } else {
        return type_error(key, "an integer");
    }
    return std::nullopt;
}

Err read_bool(const json& body, const char* key, bool& out) {
    if (absent(body, key)) return std::nullopt;
    if (!body.at(key).is_boolean()) return type_error(key, "a boolean");
    out = body.at(key).get<bool>();
    return std::nullopt;
}

// Chat content: a string, or a list of {"type": "text", "text": ...} parts joined together (and
// kept as parts, which documents_from may read). A part may name a registered document by "id"
// instead of carrying text (documents_from parts only; RequestBuilder refuses it otherwise).
Err read_content(const json& v, const std::string& param, std::string& out, std::vector<ContentPart>& parts) {
    if (v.is_null()) return std::nullopt;
    if (v.is_string()) return read_string(v, param, out);
    if (!v.is_array()) return type_error(param, "a string or a list of text parts");
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string p = param + "[" + std::to_string(i) + "]";
        const json& part = v[i];
        const bool by_id = part.is_object() && !part.contains("text") && part.contains("id");
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
            (!part.contains("text") && !by_id)) {
            return invalid_request(
                "'" + p + "' must be a {\"type\": \"text\", \"text\": ...} part (only text is supported)", p,
                "unsupported_content");
        }
        ContentPart cp;
        if (part.contains("text")) {
            if (auto e = read_string(part["text"], p + ".text", cp.text)) return e;
        }
        if (part.contains("id")) {
            // A null id is not "no id": a part by id that names nothing is refused, not read as "".
            if (!part["id"].is_string()) return type_error(p + ".id", "a string (a registered document's id)");
            if (auto e = read_string(part["id"], p + ".id", cp.id)) return e;
            if (by_id && cp.id.empty()) return value_error(p + ".id", "must not be empty");
        }
        out += cp.text;
        parts.push_back(std::move(cp));
    }
    return std::nullopt;
}

// An assistant message's tool_calls ([{"id", "type": "function", "function": {"name",
// "arguments"}}], arguments a JSON string as OpenAI sends them, or an object) and a tool
// message's tool_call_id and name.
Err read_tool_fields(const json& m, const std::string& p, tokenizer::ChatMessage& msg) {
    if (!absent(m, "tool_calls")) {
        const json& calls = m.at("tool_calls");
        if (msg.role != "assistant") return value_error(p + ".tool_calls", "is only taken in an assistant message");
        if (!calls.is_array()) return type_error(p + ".tool_calls", "a list");
        if (calls.size() > tool_calls::kMaxTools) {
            return value_error(p + ".tool_calls",
                               "may hold at most " + std::to_string(tool_calls::kMaxTools) + " calls");
        }
        for (size_t k = 0; k < calls.size(); ++k) {
            const std::string c = p + ".tool_calls[" + std::to_string(k) + "]";
            const json& call = calls[k];
            if (!call.is_object() || !call.contains("function") || !call.at("function").is_object()) {
                return type_error(
                    c, "an object {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
            }
            tokenizer::ChatToolCall tc;
            if (!absent(call, "id")) {
                if (auto e = read_string(call.at("id"), c + ".id", tc.id)) return e;
            }
            const json& f = call.at("function");
            if (!f.contains("name")) {
                return invalid_request("'" + c + ".function.name' is required", c + ".function.name",
                                       "missing_required_parameter");
            }
            if (auto e = read_string(f.at("name"), c + ".function.name", tc.name)) return e;
            if (!tool_calls::valid_tool_name(tc.name)) {
                return value_error(c + ".function.name", "must match ^[a-zA-Z0-9_-]{1,64}$");
            }
            if (absent(f, "arguments")) {
                tc.arguments = "{}";
            } else if (f.at("arguments").is_object()) {
                tc.arguments = f.at("arguments").dump();
            } else if (auto e = read_string(f.at("arguments"), c + ".function.arguments", tc.arguments)) {
                return e;
            }
            msg.tool_calls.push_back(std::move(tc));
        }
    }
    if (!absent(m, "tool_call_id")) {
        if (msg.role != "tool") return value_error(p + ".tool_call_id", "is only taken in a tool message");
        if (auto e = read_string(m.at("tool_call_id"), p + ".tool_call_id", msg.tool_call_id)) return e;
    }
    if (msg.role == "tool" && !absent(m, "name")) {
        if (auto e = read_string(m.at("name"), p + ".name", msg.name)) return e;
    }
    return std::nullopt;
}

Err parse_messages(const json& body, GenerationRequest& out) {
    if (!body.contains("messages"))
        return invalid_request("'messages' is required", "messages", "missing_required_parameter");
    const json& msgs = body.at("messages");
    if (!msgs.is_array()) return type_error("messages", "a list");
    if (msgs.empty()) return value_error("messages", "must not be empty");
    for (size_t i = 0; i < msgs.size(); ++i) {
        const std::string p = "messages[" + std::to_string(i) + "]";
        const json& m = msgs[i];
        if (!m.is_object()) return type_error(p, "an object");
        if (!m.contains("role"))
            return invalid_request("'" + p + ".role' is required", p + ".role", "missing_required_parameter");
        tokenizer::ChatMessage msg;
        if (auto e = read_string(m.at("role"), p + ".role", msg.role)) return e;
        if (msg.role == "developer") msg.role = "system";
        if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
            return value_error(p + ".role", "must be system, developer, user, assistant or tool (got '" +
                                                clip_for_message(msg.role) + "')");
        }
        std::vector<ContentPart> parts;
        if (m.contains("content")) {
            if (auto e = read_content(m.at("content"), p + ".content", msg.content, parts)) return e;
        }
        if (auto e = read_tool_fields(m, p, msg)) return e;
        // Only an assistant message may leave its content out (it carries tool_calls instead):
        // a template given no content would render the turn empty, or fail on it.
        if (msg.role != "assistant" && (!m.contains("content") || m.at("content").is_null())) {
            return invalid_request("'" + p + ".content' is required in a " + msg.role + " message", p + ".content",
                                   "missing_required_parameter");
        }
        out.messages.push_back(std::move(msg));
        out.message_parts.push_back(std::move(parts));
    }
    // A final assistant message is continued (RequestBuilder: llama-server's assistant prefill);
    // a final tool message is answered (an agent loop's next turn).
    const std::string& last = out.messages.back().role;
    if (last != "user" && last != "assistant" && last != "tool") {
        return value_error("messages",
                           "must end with a user message, a tool result, or an assistant message to continue");
    }
    if (std::none_of(out.messages.begin(), out.messages.end(), [](const auto& m) { return m.role == "user"; })) {
        return value_error("messages", "must contain a user message");
    }
    return std::nullopt;
}

Err parse_token_list(const json& v, std::vector<int32_t>& out) {
    for (const json& t : v) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
            return type_error("prompt", "a string or a list of non-negative token ids");
        }
        out.push_back(int32_t(t.get<int64_t>()));
    }
    return std::nullopt;
}

// A string, a list of one string, a list of token ids or a list of one list of token ids.
Err parse_prompt(const json& body, GenerationRequest& out) {
    if (!body.contains("prompt"))
        return invalid_request("'prompt' is required", "prompt", "missing_required_parameter");
    // A list holding one prompt is that prompt (read in place: no copy of client JSON).
    const json& given = body.at("prompt");
    const bool wrapped = given.is_array() && given.size() == 1 && (given[0].is_string() || given[0].is_array());
    const json& p = wrapped ? given[0] : given;
    if (p.is_string()) {
        if (auto e = read_string(p, "prompt", out.prompt)) return e;
    } else if (p.is_array()) {
        if (!p.empty() && (p[0].is_string() || p[0].is_array())) {
            return value_error("prompt", "must be one prompt (batches of prompts are not supported)");
        }
        if (auto e = parse_token_list(p, out.prompt_tokens)) return e;
    } else {
        return type_error("prompt", "a string or a list of token ids");
    }
    if (out.prompt.empty() && out.prompt_tokens.empty()) return value_error("prompt", "must not be empty");
    return std::nullopt;
}

Err parse_stop(const json& body, std::vector<std::string>& out) {
    if (absent(body, "stop")) return std::nullopt;
    const json& v = body.at("stop");
    if (!v.is_string() && !v.is_array()) return type_error("stop", "a string or a list of strings");
    const size_t count = v.is_string() ? 1 : v.size();
    if (count > size_t(kMaxStopStrings)) {
        return value_error("stop", "may hold at most " + std::to_string(kMaxStopStrings) + " strings");
    }
    size_t bytes = 0;
    for (size_t i = 0; i < count; ++i) {
        const json& item = v.is_string() ? v : v[i];
        // Sized before it is copied: a megabyte stop string is refused without a copy.
        if (item.is_string() && (bytes += item.get_ref<const std::string&>().size()) > size_t(kMaxStopBytes)) {
            return value_error("stop", "may hold at most " + std::to_string(kMaxStopBytes) + " bytes in all");
        }
        std::string s;
        if (auto e = read_string(item, "stop", s)) return e;
        if (s.empty()) return value_error("stop", "strings must not be empty");
        out.push_back(std::move(s));
    }
    return std::nullopt;
}

// `logit_bias`: {"token id": bias} (OpenAI), bias in [-100, 100], at most kMaxLogitBias entries.
// Ids are checked against the vocabulary when the request is built.
Err parse_logit_bias(const json& body, engine::SamplingParams& s) {
    if (absent(body, "logit_bias")) return std::nullopt;
    const json& v = body.at("logit_bias");
    if (!v.is_object()) return type_error("logit_bias", "an object mapping token ids to biases");
    if (v.size() > size_t(kMaxLogitBias)) {
        return value_error("logit_bias", "may hold at most " + std::to_string(kMaxLogitBias) + " tokens");
    }
    for (const auto& [key, bias] : v.items()) {
        int64_t id = -1;
        bool ok = !key.empty() && key.size() <= 10;
        for (char c : key) ok = ok && c >= '0' && c <= '9';
        if (ok) id = std::stoll(key);
        if (!ok || id > INT32_MAX) {
            return value_error("logit_bias",
                               "keys must be token ids (non-negative integers), got '" + key.substr(0, 32) + "'");
        }
        if (!bias.is_number() || !std::isfinite(bias.get<double>())) {
            return type_error("logit_bias", "an object whose values are numbers");
        }
        const double b = bias.get<double>();
        if (b < -100 || b > 100) return value_error("logit_bias", "biases must be in [-100, 100]");
        s.logit_bias.emplace_back(int32_t(id), float(b));
    }
    return std::nullopt;
}

Err parse_sampling(const json& body, GenerationRequest& out) {
    engine::SamplingParams& s = out.sampling;
    double temperature = 1.0, top_p = 1.0, min_p = 0.0, rep = 1.0;
    int64_t top_k = 0, seed = 0;
    if (auto e = read_number(body, "temperature", temperature)) return e;
    if (temperature < 0 || temperature > 2) return value_error("temperature", "must be in [0, 2]");
    if (auto e = read_number(body, "top_p", top_p)) return e;
    if (top_p < 0 || top_p > 1) return value_error("top_p", "must be in [0, 1]");
    if (auto e = read_number(body, "min_p", min_p)) return e;
    if (min_p < 0 || min_p > 1) return value_error("min_p", "must be in [0, 1]");
    if (auto e = read_number(body, "repetition_penalty", rep)) return e;
    if (rep <= 0 || rep > 100) return value_error("repetition_penalty", "must be in (0, 100]");
    if (auto e = read_integer(body, "top_k", top_k)) return e;
    if (top_k < -1 || top_k > INT32_MAX) return value_error("top_k", "must be >= 0 (or -1 for off)");
    if (auto e = read_integer(body, "seed", seed)) return e;
    out.seed_given = !absent(body, "seed");
    s.temperature = top_p == 0 ? 0.0f : float(temperature);  // top_p 0 keeps only the best token
    s.top_p = top_p == 0 ? 1.0f : float(top_p);
    s.min_p = float(min_p);
    s.repetition_penalty = float(rep);
    s.top_k = top_k < 0 ? 0 : int32_t(top_k);
    s.seed = uint64_t(seed);
    double presence = 0, frequency = 0;
    if (auto e = read_number(body, "presence_penalty", presence)) return e;
    if (presence < -2 || presence > 2) return value_error("presence_penalty", "must be in [-2, 2]");
    if (auto e = read_number(body, "frequency_penalty", frequency)) return e;
    if (frequency < -2 || frequency > 2) return value_error("frequency_penalty", "must be in [-2, 2]");
    s.presence_penalty = float(presence);
    s.frequency_penalty = float(frequency);
    return parse_logit_bias(body, s);
}

Err parse_max_tokens(const json& body, GenerationRequest& out) {
    // llama-server's n_predict, then OpenAI's names (the newer wins); n_predict -1 is
    // llama-server's "no limit": the route's default (at most --max-tokens-cap) applies.
    for (const char* key : {"n_predict", "max_tokens", "max_completion_tokens"}) {
        int64_t v = -1;
        if (auto e = read_integer(body, key, v)) return e;
        if (absent(body, key) || (v == -1 && std::string_view(key) == "n_predict")) continue;
        // 0 scores the prompt without generating (echo + logprobs, as lm-evaluation-harness asks).
        if (v < 1 && !(v == 0 && out.echo)) return value_error(key, out.echo ? "must be >= 0" : "must be >= 1");
        out.max_tokens = int32_t(std::min<int64_t>(v, INT32_MAX));
    }
    return std::nullopt;
}

// Completions: `logprobs` is the number of alternatives (null: none) and `echo` returns the
// prompt. Chat: `logprobs` is a boolean and `top_logprobs` the number of alternatives.
Err parse_logprobs(const json& body, bool chat, GenerationRequest& out) {
    constexpr int64_t kMax = engine::SamplingParams::kMaxLogprobs;
    if (chat) {
        bool wanted = false;
        if (auto e = read_bool(body, "logprobs", wanted)) return e;
        int64_t top = 0;
        if (auto e = read_integer(body, "top_logprobs", top)) return e;
        if (top < 0 || top > kMax) return value_error("top_logprobs", "must be in [0, " + std::to_string(kMax) + "]");
        if (!wanted && !absent(body, "top_logprobs") && top > 0) {
            return value_error("top_logprobs", "needs 'logprobs': true");
        }
        out.logprobs = wanted ? int32_t(top) : -1;
        if (!absent(body, "echo") && body.at("echo") != false) {
            return invalid_request("'echo' is for /v1/completions", "echo", "unsupported");
        }
        return std::nullopt;
    }
    if (auto e = read_bool(body, "echo", out.echo)) return e;
    if (absent(body, "logprobs")) return std::nullopt;
    int64_t k = -1;
    if (auto e = read_integer(body, "logprobs", k)) return e;
    if (k < 0 || k > kMax) return value_error("logprobs", "must be in [0, " + std::to_string(kMax) + "]");
    out.logprobs = int32_t(k);
    return std::nullopt;
}

// Fields lazyattn cannot honour: refused unless they hold their no-op value.
Err parse_choices(const json& body, GenerationRequest& out) {
    int64_t n = 1;
    if (auto e = read_integer(body, "n", n)) return e;
    if (n < 1 || n > kMaxChoices) return value_error("n", "must be in [1, " + std::to_string(kMaxChoices) + "]");
    out.n = int32_t(n);
    return std::nullopt;
}

Err refuse_unsupported(const json& body, bool chat) {
    int64_t best_of = 1;
    if (auto e = read_integer(body, "best_of", best_of)) return e;
    if (best_of != 1) return invalid_request("'best_of' must be 1", "best_of", "unsupported");
    if (!absent(body, "suffix") && body.at("suffix") != "") {
        return invalid_request("'suffix' is not supported", "suffix", "unsupported");
    }
    if (!chat && !absent(body, "tools") && !(body.at("tools").is_array() && body.at("tools").empty())) {
        return invalid_request("'tools' is taken by /v1/chat/completions (a completion renders no template)", "tools",
                               "unsupported");
    }
    return std::nullopt;
}

Err parse_stream(const json& body, GenerationRequest& out) {
    if (auto e = read_bool(body, "stream", out.stream)) return e;
    if (absent(body, "stream_options")) return std::nullopt;
    const json& so = body.at("stream_options");
    if (!so.is_object()) return type_error("stream_options", "an object");
    if (auto e = read_bool(so, "include_usage", out.include_usage)) {
        e->param = "stream_options.include_usage";
        return e;
    }
    return std::nullopt;
}

// llama-server's telemetry switches (GenerationRequest::timings_per_token, ...).
Err parse_telemetry(const json& body, GenerationRequest& out) {
    if (auto e = read_bool(body, "timings_per_token", out.timings_per_token)) return e;
    if (auto e = read_bool(body, "return_progress", out.return_progress)) return e;
    if (absent(body, "verbose")) return std::nullopt;
    bool verbose = false;
    if (auto e = read_bool(body, "verbose", verbose)) return e;
    out.verbose = verbose;
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_token_ids(const json& value, const std::string& param, int32_t vocab_size,
                                        std::vector<int32_t>& out) {
    if (!value.is_array()) return type_error(param, "a list of token ids");
    for (const json& t : value) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab_size) {
            return value_error(param, "must hold token ids in [0, " + std::to_string(vocab_size) + ")");
        }
        out.push_back(int32_t(t.get<int64_t>()));
    }
    return std::nullopt;
}

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

namespace {

// The chat template's request fields (chat requests only).
Err parse_chat_template_fields(const json& body, GenerationRequest& out) {
    if (!absent(body, "add_generation_prompt")) {
        bool v = true;
        if (auto e = read_bool(body, "add_generation_prompt", v)) return e;
        out.add_generation_prompt = v;
    }
    if (!absent(body, "continue_final_message")) {
        const json& v = body.at("continue_final_message");
        if (v.is_boolean()) {
            out.continue_final_message = v.get<bool>();
        } else if (v == "content") {
            out.continue_final_message = true;
        } else {
            return value_error("continue_final_message",
                               "must be a boolean or \"content\" (continuing reasoning_content is not served)");
        }
    }
    if (out.continue_final_message.value_or(false) && out.add_generation_prompt.value_or(false)) {
        return invalid_request("Cannot set both add_generation_prompt and continue_final_message to true",
                               "continue_final_message", "invalid_value");
    }
    if (!absent(body, "chat_template_kwargs")) {
        auto kwargs =
            tokenizer::chat_template_kwargs_from_json(body.at("chat_template_kwargs"), "chat_template_kwargs");
        if (!kwargs.ok()) return invalid_request(kwargs.status().message(), "chat_template_kwargs", "invalid_value");
        out.chat_template_kwargs = std::move(kwargs).value();
    }
    if (!absent(body, "reasoning_format")) {
        const json& v = body.at("reasoning_format");
        const auto format = v.is_string() ? reasoning_format_from_name(v.get<std::string>()) : std::nullopt;
        if (!format) {
            return value_error("reasoning_format", std::string("must be one of ") + reasoning_format_names());
        }
        out.reasoning_format = format;
    }
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_generation_request(const json& body, bool chat, GenerationRequest& out) {
    if (!body.is_object()) return invalid_request("the request body must be a JSON object", "", "invalid_type");
    out.chat = chat;
    if (!absent(body, "model")) {
        if (auto e = read_string(body.at("model"), "model", out.model)) return e;
    }
    if (auto e = chat ? parse_messages(body, out) : parse_prompt(body, out)) return e;
    if (body.contains("documents")) {
        if (auto e = parse_documents(body.at("documents"), true, out.documents)) return e;
    }
    if (auto e = parse_sampling(body, out)) return e;
    if (auto e = parse_logprobs(body, chat, out)) return e;  // before max_tokens: echo allows 0
    if (auto e = parse_max_tokens(body, out)) return e;
    if (auto e = parse_choices(body, out)) return e;
    if (auto e = parse_stop(body, out.stop)) return e;
    if (auto e = read_bool(body, "ignore_eos", out.ignore_eos)) return e;
    if (auto e = parse_stream(body, out)) return e;
    if (auto e = parse_telemetry(body, out)) return e;
    if (auto e = parse_cache_salt(body, out.cache_salt)) return e;
    if (auto e = parse_document_reuse_field(body, out.document_reuse)) return e;
    if (auto e = parse_documents_from(body, out)) return e;
    if (chat) {
        if (auto e = parse_chat_template_fields(body, out)) return e;
    }
    if (auto e = parse_constraint(body, out.constraint)) return e;  // structured output
    if (chat) {
        std::optional<tool_calls::ToolRequest> tools;
        if (auto e = tool_calls::parse_openai_tools(body, tools)) return e;
        if (tools) out.tools = std::make_shared<const tool_calls::ToolRequest>(std::move(*tools));
    }
    return refuse_unsupported(body, chat);
}

}  // namespace lazyattn::server
