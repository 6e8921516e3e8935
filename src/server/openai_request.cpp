#include "server/openai_request.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "server/constraint_request.h"
#include "server/document_fields.h"
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

// Chat content: a string, or a list of {"type": "text", "text": ...} parts joined by
// append_text_part (and kept as parts, which documents_from may read, and which RequestBuilder
// joins again when the message is the prefill the answer continues). A part may name a
// registered document by "id" instead of carrying text (documents_from parts only;
// RequestBuilder refuses it otherwise).
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
        append_text_part(out, cp.text);
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
