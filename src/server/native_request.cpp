#include "server/native_request.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>

#include "core/utf8.h"
#include "server/request_fields.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::read_string;
using fields::type_error;
using fields::value_error;

// The most bytes of text logit_bias may name (each text becomes its tokens).
constexpr size_t kMaxLogitBiasTextBytes = 64 * 1024;
// llama-server's "any seed" (LLAMA_DEFAULT_SEED); -1 means the same.
constexpr int64_t kAnySeed = 0xFFFFFFFFll;

Err unsupported(const std::string& param, const std::string& why) {
    return invalid_request("'" + param + "' " + why, param, "unsupported");
}

bool is_integer(const json& v) {
    return v.is_number_integer() || (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
                                     std::fabs(v.get<double>()) < 9.0e18);
}

int64_t integer_of(const json& v) {
    if (v.is_number_unsigned()) return int64_t(std::min<uint64_t>(v.get<uint64_t>(), uint64_t(INT64_MAX)));
    return v.is_number_integer() ? v.get<int64_t>() : int64_t(v.get<double>());
}

Err read_int(const json& body, const char* key, int64_t& out) {
    if (absent(body, key)) return std::nullopt;
    if (!is_integer(body.at(key))) return type_error(key, "an integer");
    out = integer_of(body.at(key));
    return std::nullopt;
}

Err read_num(const json& body, const char* key, double& out) {
    if (absent(body, key)) return std::nullopt;
    if (!body.at(key).is_number()) return type_error(key, "a number");
    out = body.at(key).get<double>();
    return std::nullopt;
}

Err read_flag(const json& body, const char* key, bool& out) {
    if (absent(body, key)) return std::nullopt;
    if (!body.at(key).is_boolean()) return type_error(key, "a boolean");
    out = body.at(key).get<bool>();
    return std::nullopt;
}

// ---- prompt -------------------------------------------------------------------------------

// Token ids and strings in one list: one prompt; each string becomes its tokens where it sits.
Err read_mixed_prompt(const json& v, const std::string& param, const tokenizer::Tokenizer& tok, NativePrompt& out) {
    const int32_t vocab = tok.vocab_size();
    for (size_t i = 0; i < v.size(); ++i) {
        const json& piece = v[i];
        if (is_integer(piece)) {
            const int64_t id = integer_of(piece);
            if (id < 0 || id >= vocab) {
                return value_error(param, "must hold token ids in [0, " + std::to_string(vocab) + ")");
            }
            out.tokens.push_back(int32_t(id));
        } else if (piece.is_string()) {
            std::string text;
            if (auto e = read_string(piece, param + "[" + std::to_string(i) + "]", text)) return e;
            const auto ids = tok.encode(text, false, false);
            out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
        } else {
            return type_error(param, "a string, token ids, or token ids and strings mixed");
        }
    }
    return std::nullopt;
}

// A string, token ids (strings mixed in), or {"prompt_string", "multimodal_data"}.
Err read_one_prompt(const json& v, const std::string& param, const tokenizer::Tokenizer& tok, NativePrompt& out) {
    if (v.is_string()) {
        if (auto e = read_string(v, param, out.text)) return e;
    } else if (v.is_array()) {
        if (auto e = read_mixed_prompt(v, param, tok, out)) return e;
    } else if (v.is_object()) {
        if (!absent(v, "multimodal_data") && !(v.at("multimodal_data").is_array() && v.at("multimodal_data").empty())) {
            return unsupported(param + ".multimodal_data", "is not served: this is a text-only server");
        }
        if (absent(v, "prompt_string")) {
            return invalid_request("'" + param + ".prompt_string' is required", param + ".prompt_string",
                                   "missing_required_parameter");
        }
        if (auto e = read_string(v.at("prompt_string"), param + ".prompt_string", out.text)) return e;
    } else {
        return type_error(param, "a string, a list of token ids (and strings), or {\"prompt_string\"}");
    }
    if (out.text.empty() && out.tokens.empty()) return value_error(param, "must not be empty");
    return std::nullopt;
}

// One prompt, or a list of them: a list holding no number is a list of prompts (llama-server's rule:
// ["a", "b"] is two prompts, [12, "a", 34] one).
Err parse_prompts(const json& body, const tokenizer::Tokenizer& tok, NativeRequest& out) {
    if (absent(body, "prompt")) return invalid_request("'prompt' is required", "prompt", "missing_required_parameter");
    const json& p = body.at("prompt");
    const bool list =
        p.is_array() && !p.empty() && std::none_of(p.begin(), p.end(), [](const json& e) { return e.is_number(); });
    if (!list) {
        out.prompts.emplace_back();
        return read_one_prompt(p, "prompt", tok, out.prompts.back());
    }
    if (p.size() > size_t(kMaxNativePrompts)) {
        return value_error("prompt", "may hold at most " + std::to_string(kMaxNativePrompts) + " prompts");
    }
    for (size_t i = 0; i < p.size(); ++i) {
        out.prompts.emplace_back();
        if (auto e = read_one_prompt(p[i], "prompt[" + std::to_string(i) + "]", tok, out.prompts.back())) return e;
    }
    out.prompt_list = out.prompts.size() > 1;
    return std::nullopt;
}

// ---- logit_bias ---------------------------------------------------------------------------

struct BiasBudget {
    size_t entries = 0;
    size_t text_bytes = 0;
};

// One entry: a token id, or a text whose every token gets the bias; the bias a number in
// [-100, 100], or false (never: the lowest bias).
Err add_bias(const json& key, const json& bias, const tokenizer::Tokenizer& tok, BiasBudget& budget,
             engine::SamplingParams& s) {
    constexpr const char* kKey = "logit_bias";
    float value = 0;
    if (bias.is_boolean()) {
        if (bias.get<bool>()) return value_error(kKey, "takes a number or false as a bias");
        value = -100.0f;
    } else if (bias.is_number() && std::isfinite(bias.get<double>())) {
        const double b = bias.get<double>();
        if (b < -100 || b > 100) return value_error(kKey, "biases must be in [-100, 100]");
        value = float(b);
    } else {
        return type_error(kKey, "a list of [token id or text, bias] pairs, or an object of biases");
    }
    std::vector<int32_t> ids;
    if (is_integer(key)) {
        const int64_t id = integer_of(key);
        if (id < 0 || id >= tok.vocab_size()) {
            return value_error(kKey, "names token " + std::to_string(id) + ", outside the vocabulary [0, " +
                                         std::to_string(tok.vocab_size()) + ")");
        }
        ids.push_back(int32_t(id));
    } else if (key.is_string()) {
        const std::string& text = key.get_ref<const std::string&>();
        // A key of digits is a token id (OpenAI's form), however long.
        const bool digits =
            !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits && text.size() > 10) return value_error(kKey, "names a token id outside the vocabulary");
        if (digits) return add_bias(json(std::stoll(text)), bias, tok, budget, s);
        if ((budget.text_bytes += text.size()) > kMaxLogitBiasTextBytes) {
            return value_error(kKey, "may name at most " + std::to_string(kMaxLogitBiasTextBytes) + " bytes of text");
        }
        if (!text::is_valid_utf8(text)) return invalid_request("'logit_bias' is not valid UTF-8", kKey, "invalid_utf8");
        ids = tok.encode(text, false, false);
    } else {
        return type_error(kKey, "keyed by token ids or texts");
    }
    for (int32_t id : ids) {
        if (++budget.entries > size_t(kMaxLogitBias)) {
            return value_error(kKey, "may bias at most " + std::to_string(kMaxLogitBias) + " tokens");
        }
        s.logit_bias.emplace_back(id, value);
    }
    return std::nullopt;
}

Err parse_logit_bias(const json& body, const tokenizer::Tokenizer& tok, engine::SamplingParams& s) {
    if (absent(body, "logit_bias")) return std::nullopt;
    const json& v = body.at("logit_bias");
    BiasBudget budget;
    if (v.is_object()) {
        if (v.size() > size_t(kMaxLogitBias)) {
            return value_error("logit_bias", "may bias at most " + std::to_string(kMaxLogitBias) + " tokens");
        }
        for (const auto& [key, bias] : v.items()) {
            if (auto e = add_bias(json(key), bias, tok, budget, s)) return e;
        }
        return std::nullopt;
    }
    if (!v.is_array()) return type_error("logit_bias", "a list of [token id or text, bias] pairs, or an object");
    if (v.size() > size_t(kMaxLogitBias)) {
        return value_error("logit_bias", "may bias at most " + std::to_string(kMaxLogitBias) + " tokens");
    }
    for (const json& pair : v) {
        if (!pair.is_array() || pair.size() != 2) {
            return type_error("logit_bias", "a list of [token id or text, bias] pairs");
        }
        if (auto e = add_bias(pair[0], pair[1], tok, budget, s)) return e;
    }
    return std::nullopt;
}

// ---- fields lazyattn cannot honour ---------------------------------------------------------

// A number field that changes the output unless it holds its no-op value.
struct NoOpNumber {
    const char* key;
    bool (*is_noop)(double);
    const char* why;
};

constexpr const char* kNotServed = "is not served here (sampling is temperature, top_k, top_p, min_p and penalties)";

const std::array<NoOpNumber, 10> kNoOpNumbers = {{
    {"mirostat", [](double v) { return v == 0; }, kNotServed},
    {"dry_multiplier", [](double v) { return v == 0; }, kNotServed},
    {"xtc_probability", [](double v) { return v == 0; }, kNotServed},
    {"typical_p", [](double v) { return v >= 1; }, kNotServed},
    {"dynatemp_range", [](double v) { return v == 0; }, kNotServed},
    {"top_n_sigma", [](double v) { return v <= 0; }, kNotServed},
    {"adaptive_target", [](double v) { return v < 0; }, kNotServed},
    {"min_keep", [](double v) { return v == 0; }, kNotServed},
    {"n_indent", [](double v) { return v == 0; }, "is not served (no code-completion indentation rule)"},
    {"t_max_predict_ms", [](double v) { return v <= 0; }, "is not served (generation has no time limit)"},
}};

Err refuse_unhonoured(const json& body) {
    for (const NoOpNumber& f : kNoOpNumbers) {
        double v = 0;
        if (auto e = read_num(body, f.key, v)) return e;
        if (!absent(body, f.key) && !f.is_noop(v)) return unsupported(f.key, f.why);
    }
    if (!absent(body, "lora") && !(body.at("lora").is_array() && body.at("lora").empty())) {
        return unsupported("lora", "is not served: merge the adapter into the GGUF");
    }
    for (const char* key : {"n_cmpl", "n"}) {
        int64_t n = 1;
        if (auto e = read_int(body, key, n)) return e;
        if (n != 1)
            return unsupported(key, "must be 1 on /completion (send a list of prompts, or use /v1/completions)");
    }
    return std::nullopt;
}

// ---- native-only fields --------------------------------------------------------------------

Err read_names(const json& body, const char* key, std::vector<std::string>& out) {
    if (absent(body, key)) return std::nullopt;
    const json& v = body.at(key);
    if (!v.is_array()) return type_error(key, "a list of strings");
    if (v.size() > size_t(kMaxNativeNames)) {
        return value_error(key, "may hold at most " + std::to_string(kMaxNativeNames) + " names");
    }
    for (const json& name : v) {
        std::string s;
        if (auto e = read_string(name, key, s)) return e;
        if (s.size() > 256) return value_error(key, "names must be at most 256 bytes");
        out.push_back(std::move(s));
    }
    return std::nullopt;
}

// `samplers`: names, or one string of sampler letters. Checked, not applied: lazyattn's order is
// fixed (penalties, top_k, top_p, min_p, temperature).
Err parse_samplers(const json& body, std::vector<std::string>& out) {
    if (!absent(body, "samplers") && body.at("samplers").is_string()) {
        const std::string& letters = body.at("samplers").get_ref<const std::string&>();
        if (letters.size() > size_t(kMaxNativeNames)) {
            return value_error("samplers", "may hold at most " + std::to_string(kMaxNativeNames) + " letters");
        }
        for (char c : letters) {
            if (std::string("dkypsmxtiea").find(c) == std::string::npos) {
                return value_error("samplers", "has an unknown sampler letter (dkypsmxtiea)");
            }
            out.emplace_back(1, c);
        }
        return std::nullopt;
    }
    if (auto e = read_names(body, "samplers", out)) return e;
    for (const std::string& name : out) {
        if (!is_native_sampler_name(name)) {
            return value_error("samplers", "names an unknown sampler '" + clip_for_message(name) +
                                               "' (dry, top_k, typ_p, top_p, top_n_sigma, min_p, xtc, temperature, "
                                               "infill, penalties, adaptive_p)");
        }
    }
    return std::nullopt;
}

Err parse_native_fields(const json& body, int32_t num_slots, NativeOptions& o) {
    if (auto e = read_flag(body, "return_tokens", o.return_tokens)) return e;
    bool ignored = false;  // accepted: they change nothing lazyattn answers
    for (const char* key : {"cache_prompt", "backend_sampling"}) {
        if (auto e = read_flag(body, key, ignored)) return e;
    }
    if (auto e = read_flag(body, "post_sampling_probs", o.post_sampling_probs)) return e;
    int64_t n_probs = 0;
    if (auto e = read_int(body, "n_probs", n_probs)) return e;
    constexpr int64_t kMax = engine::SamplingParams::kMaxLogprobs;
    if (n_probs < 0 || n_probs > kMax) return value_error("n_probs", "must be in [0, " + std::to_string(kMax) + "]");
    o.n_probs = int32_t(n_probs);
    int64_t id_slot = -1;
    if (auto e = read_int(body, "id_slot", id_slot)) return e;
    if (id_slot < -1 || id_slot >= num_slots) {
        return value_error("id_slot", "must be -1 (any) or a slot in [0, " + std::to_string(num_slots) + ")");
    }
    o.id_slot = int32_t(id_slot);
    if (auto e = parse_samplers(body, o.samplers)) return e;
    return read_names(body, "response_fields", o.response_fields);
}

// The body as the OpenAI parser reads it: native names renamed, native-only fields left out.
json openai_shape(const json& body) {
    json oai = json::object();
    for (const auto& [key, value] : body.items()) {
        if (key == "prompt" || key == "logit_bias" || key == "n_probs" || key == "logprobs" || key == "echo" ||
            key == "n" || key == "best_of" || key == "suffix" || key == "samplers") {
            continue;
        }
        oai[key] = value;
    }
    oai["prompt"] = "-";  // each prompt replaces it (NativeRequest::request_for)
    if (body.contains("repeat_penalty") && !body.contains("repetition_penalty")) {
        oai["repetition_penalty"] = body.at("repeat_penalty");
    }
    // llama-server: a negative temperature samples greedily; top_k <= 0 and seed -1 are "off".
    if (oai.contains("temperature") && oai["temperature"].is_number() && oai["temperature"].get<double>() < 0) {
        oai["temperature"] = 0;
    }
    if (oai.contains("top_k") && is_integer(oai["top_k"]) && integer_of(oai["top_k"]) < 0) oai["top_k"] = 0;
    if (oai.contains("seed") && is_integer(oai["seed"]) &&
        (integer_of(oai["seed"]) == -1 || integer_of(oai["seed"]) == kAnySeed)) {
        oai.erase("seed");
    }
    if (oai.contains("n_predict") && is_integer(oai["n_predict"]) && integer_of(oai["n_predict"]) < -1) {
        oai["n_predict"] = 0;  // refused by the OpenAI parser, naming n_predict
    }
    return oai;
}

// An OpenAI parser error, named as the native body named the field.
ApiError native_names(ApiError e, const json& body) {
    if (e.param == "repetition_penalty" && !body.contains("repetition_penalty")) {
        e.param = "repeat_penalty";
        const std::string from = "'repetition_penalty'";
        if (const size_t at = e.message.find(from); at != std::string::npos)
            e.message.replace(at, from.size(), "'repeat_penalty'");
    }
    if (e.param == "prompt") e.message += " (/completion)";
    return e;
}

}  // namespace

bool is_native_sampler_name(const std::string& name) {
    static const char* const kNames[] = {"dry",         "top_k",       "top_p",  "top_n_sigma", "typ_p",      "min_p",
                                         "temperature", "xtc",         "infill", "penalties",   "adaptive_p", "top-k",
                                         "top-p",       "top-n-sigma", "typ-p",  "min-p",       "adaptive-p", "topk",
                                         "topp",        "topnsigma",   "typp",   "minp",        "adaptivep",  "nucleus",
                                         "temp",        "typ"};
    std::string lower = name;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return lower == n; });
}

GenerationRequest NativeRequest::request_for(size_t i) const {
    GenerationRequest gen = base;
    gen.prompt = prompts[i].text;
    gen.prompt_tokens = prompts[i].tokens;
    return gen;
}

std::optional<ApiError> parse_native_request(const json& body, const tokenizer::Tokenizer& tokenizer, int32_t num_slots,
                                             NativeRequest& out) {
    if (!body.is_object()) return invalid_request("the request body must be a JSON object", "", "invalid_type");
    if (auto e = parse_prompts(body, tokenizer, out)) return e;
    if (auto e = parse_native_fields(body, num_slots, out.options)) return e;
    if (auto e = refuse_unhonoured(body)) return e;
    const json oai = openai_shape(body);
    if (auto e = parse_generation_request(oai, false, out.base)) return native_names(std::move(*e), body);
    if (auto e = parse_logit_bias(body, tokenizer, out.base.sampling)) return e;
    int64_t repeat_last_n = out.base.sampling.repeat_last_n;
    if (auto e = read_int(body, "repeat_last_n", repeat_last_n)) return e;
    if (repeat_last_n < -1 || repeat_last_n > INT32_MAX) {
        return value_error("repeat_last_n", "must be >= 0 (or -1: the whole context)");
    }
    out.base.sampling.repeat_last_n = repeat_last_n == -1 ? INT32_MAX : int32_t(repeat_last_n);
    if (out.options.n_probs > 0) out.base.logprobs = out.options.n_probs;
    out.base.sampling.post_sampling_probs = out.options.post_sampling_probs;
    if (out.prompt_list && out.base.stream) {
        return unsupported("stream", "is not served for a list of prompts: send each prompt as its own request");
    }
    out.options.stream = out.base.stream;
    out.options.n_predict = out.base.max_tokens;
    return std::nullopt;
}

}  // namespace lazyattn::server
