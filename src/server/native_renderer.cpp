#include "server/native_renderer.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/utf8.h"
#include "server/llama_telemetry.h"
#include "server/serving_front.h"
#include "server/sse.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

// llama-server's "random seed" (LLAMA_DEFAULT_SEED), reported when the request gave none.
constexpr uint64_t kAnySeed = 0xFFFFFFFFull;
// End-of-generation tokens listed in generation_settings.logit_bias under ignore_eos.
constexpr int32_t kMaxListedEog = 16;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// A token's text (invalid UTF-8 replaced: its exact bytes are in `bytes`) and bytes.
void describe_token(const tokenizer::Tokenizer& tok, int32_t id, json& out) {
    const std::string piece = tok.token_to_piece(id, true);
    json bytes = json::array();
    for (const unsigned char c : piece) bytes.push_back(int(c));
    out["id"] = id;
    out["token"] = text::is_valid_utf8(piece) ? piece : text::sanitize_utf8(piece);
    out["bytes"] = std::move(bytes);
}

// The end-of-generation tokens ignore_eos masks, as llama-server lists them (bias null: -inf).
json eog_biases(const tokenizer::Tokenizer& tok) {
    json out = json::array();
    for (int32_t id = 0; id < tok.vocab_size() && int32_t(out.size()) < kMaxListedEog; ++id) {
        if (tok.is_end_of_generation(id)) out.push_back({{"bias", nullptr}, {"token", id}});
    }
    return out;
}

}  // namespace

json native_generation_settings(const GenerationRequest& gen, const NativeOptions& o,
                                const tokenizer::Tokenizer& tokenizer, int32_t n_predict, int32_t n_ctx) {
    const engine::SamplingParams& s = gen.sampling;
    json bias = json::array();
    for (const auto& [id, b] : s.logit_bias) bias.push_back({{"bias", b}, {"token", id}});
    if (gen.ignore_eos) {
        for (auto& entry : eog_biases(tokenizer)) bias.push_back(std::move(entry));
    }
    return {{"n_ctx", n_ctx},
            {"n_predict", n_predict},
            {"seed", gen.seed_given ? s.seed : kAnySeed},
            {"temperature", s.temperature},
            {"dynatemp_range", 0.0},
            {"dynatemp_exponent", 1.0},
            {"top_k", s.top_k},
            {"top_p", s.top_p},
            {"min_p", s.min_p},
            {"top_n_sigma", -1.0},
            {"xtc_probability", 0.0},
            {"xtc_threshold", 0.1},
            {"typical_p", 1.0},
            {"repeat_last_n", s.repeat_last_n == INT32_MAX ? -1 : s.repeat_last_n},
            {"repeat_penalty", s.repetition_penalty},
            {"presence_penalty", s.presence_penalty},
            {"frequency_penalty", s.frequency_penalty},
            {"dry_multiplier", 0.0},
            {"dry_base", 1.75},
            {"dry_allowed_length", 2},
            {"dry_penalty_last_n", -1},
            {"mirostat", 0},
            {"mirostat_tau", 5.0},
            {"mirostat_eta", 0.1},
            {"adaptive_target", -1.0},
            {"adaptive_decay", 0.9},
            {"stop", gen.stop},
            {"max_tokens", n_predict},
            {"n_keep", 0},
            {"n_discard", 0},
            {"ignore_eos", gen.ignore_eos},
            {"stream", gen.stream},
            {"logit_bias", std::move(bias)},
            {"n_probs", o.n_probs},
            {"min_keep", 0},
            {"grammar", ""},
            // The order lazyattn applies (a request's `samplers` is checked, not applied).
            {"samplers", {"penalties", "top_k", "top_p", "min_p", "temperature"}},
            {"timings_per_token", gen.timings_per_token},
            {"post_sampling_probs", o.post_sampling_probs},
            {"backend_sampling", false},
            {"lora", json::array()}};
}

json native_probabilities(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                          const std::vector<float>& logprobs, const std::vector<engine::TopLogprobs>& top, size_t from,
                          bool post_sampling) {
    // post_sampling_probs: probabilities of the sampling chain's distribution (the engine's
    // logprobs are then of it: SamplingParams::post_sampling_probs), named as llama-server names them.
    const char* const value_key = post_sampling ? "prob" : "logprob";
    const char* const list_key = post_sampling ? "top_probs" : "top_logprobs";
    auto value = [post_sampling](float lp) { return post_sampling ? double(std::exp(lp)) : double(lp); };
    json out = json::array();
    for (size_t i = from; i < ids.size() && i < logprobs.size(); ++i) {
        json entry;
        describe_token(tokenizer, ids[i], entry);
        entry[value_key] = value(logprobs[i]);
        json alternatives = json::array();
        if (i < top.size()) {
            for (const auto& [id, lp] : top[i]) {
                json alt;
                describe_token(tokenizer, id, alt);
                alt[value_key] = value(lp);
                alternatives.push_back(std::move(alt));
            }
        }
        entry[list_key] = std::move(alternatives);
        out.push_back(std::move(entry));
    }
    return out;
}

std::string native_stop_type(engine::FinishReason reason, const std::string& stop_word) {
    switch (reason) {
        case engine::FinishReason::kLength:
            return "limit";
        case engine::FinishReason::kStop:
            return stop_word.empty() ? "eos" : "word";
        default:
            return "none";
    }
}

json native_timings(const engine::RequestStats& st) { return llama_timings(st); }

ApiError native_field_names(ApiError e) {
    static const std::pair<const char*, const char*> kNames[] = {
        {"max_tokens", "n_predict"}, {"logprobs", "n_probs"}, {"repetition_penalty", "repeat_penalty"}};
    for (const auto& [openai, native] : kNames) {
        if (e.param != openai) continue;
        e.param = native;
        const std::string quoted = std::string("'") + openai + "'";
        if (const size_t at = e.message.find(quoted); at != std::string::npos) {
            e.message.replace(at, quoted.size(), std::string("'") + native + "'");
        }
    }
    return e;
}

json select_response_fields(const json& body, const std::vector<std::string>& fields) {
    if (fields.empty()) return body;
    json out = json::object();
    for (const std::string& f : fields) {
        const size_t slash = f.find('/');
        if (slash == std::string::npos) {
            if (body.contains(f)) out[f] = body.at(f);
            continue;
        }
        const std::string outer = f.substr(0, slash), inner = f.substr(slash + 1);
        if (body.contains(outer) && body.at(outer).is_object() && body.at(outer).contains(inner)) {
            out[f] = body.at(outer).at(inner);
        }
    }
    return out;
}

NativeRenderer::NativeRenderer(const tokenizer::Tokenizer& tokenizer, NativeOptions options, NativeContext context)
    : tokenizer_(tokenizer), options_(std::move(options)), context_(std::move(context)) {}

json NativeRenderer::final_fields(engine::FinishReason reason, const std::string& stop_word,
                                  const engine::RequestStats& stats, bool has_new_line) const {
    const bool full = int64_t(stats.num_prompt_tokens) + stats.num_generated >= context_.n_ctx;
    return {{"index", context_.index},
            {"id_slot", context_.id_slot},
            {"stop", true},
            {"model", context_.model},
            {"tokens_predicted", stats.num_generated},
            {"tokens_evaluated", stats.num_prompt_tokens},
            {"generation_settings", context_.generation_settings},
            {"prompt", context_.prompt},
            {"has_new_line", has_new_line},
            {"truncated", reason == engine::FinishReason::kLength && full},
            {"stop_type", native_stop_type(reason, stop_word)},
            {"stopping_word", stop_word},
            {"tokens_cached", stats.reused_tokens},
            {"timings", native_timings(stats)}};
}

json NativeRenderer::result_json(const engine::RagResult& r) const {
    json body = final_fields(r.finish_reason, r.stop_word, r.stats, r.text.find('\n') != std::string::npos);
    body["content"] = r.text;
    body["tokens"] = options_.return_tokens ? json(r.token_ids) : json::array();
    if (options_.n_probs > 0) {
        body["completion_probabilities"] = native_probabilities(tokenizer_, r.token_ids, r.token_logprobs,
                                                                r.top_logprobs, 0, options_.post_sampling_probs);
    }
    return select_response_fields(body, options_.response_fields);
}

void NativeRenderer::prepared(const PreparedRequest& p) {
    std::vector<int32_t> evaluated;
    for (const auto& segment : p.rag.segments) evaluated.insert(evaluated.end(), segment.begin(), segment.end());
    evaluated.insert(evaluated.end(), p.rag.tail.begin(), p.rag.tail.end());
    context_.prompt = tokenizer_.decode(evaluated, true);
    context_.generation_settings =
        native_generation_settings(p.gen, options_, tokenizer_, p.rag.max_tokens, context_.n_ctx);
    timings_per_token_ = p.gen.timings_per_token;
}

std::string NativeRenderer::whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats&) {
    // One prompt, one choice (n is 1 on /completion); a list's results are joined by the route.
    if (choices.empty() || choices[0].result == nullptr) return "{}";
    last_result_ = result_json(*choices[0].result);
    return dump(last_result_);
}

void NativeRenderer::stream_open(size_t, const engine::RequestHandle&, std::string&) {}

void NativeRenderer::stream_progress(size_t, const engine::RequestEvent& e, std::string& out) {
    json chunk = {{"index", context_.index},
                  {"content", ""},
                  {"tokens", json::array()},
                  {"stop", false},
                  {"id_slot", context_.id_slot},
                  {"tokens_predicted", 0},
                  {"tokens_evaluated", e.timings.prompt_tokens},
                  {"prompt_progress", prompt_progress_json(e.timings)}};
    if (timings_per_token_) chunk["timings"] = llama_timings(e.timings);
    out += sse_event(dump(chunk));
}

void NativeRenderer::stream_token(size_t, const engine::RequestEvent& e, std::string& out) {
    timings_.note(e);
    if (e.token_id >= 0) {
        pending_ids_.push_back(e.token_id);
        pending_logprobs_.push_back(e.logprob);
        pending_top_.push_back(e.top_logprobs);
    }
    // Nothing to show yet (a partial character, a possible stop string, an end-of-generation
    // token): its tokens go out with the next text.
    if (e.text.empty()) return;
    has_new_line_ = has_new_line_ || e.text.find('\n') != std::string::npos;
    json chunk = {{"index", context_.index},
                  {"content", e.text},
                  {"tokens", pending_ids_},
                  {"stop", false},
                  {"id_slot", context_.id_slot}};
    if (options_.n_probs > 0) {
        chunk["completion_probabilities"] = native_probabilities(tokenizer_, pending_ids_, pending_logprobs_,
                                                                 pending_top_, 0, options_.post_sampling_probs);
    }
    if (timings_per_token_ && timings_.any) chunk["timings"] = llama_timings(timings_.latest);
    pending_ids_.clear();
    pending_logprobs_.clear();
    pending_top_.clear();
    out += sse_event(dump(chunk));
}

void NativeRenderer::stream_end(size_t, const engine::RequestEvent& e, const engine::RequestStats& stats,
                                std::string& out) {
    json last = final_fields(e.finish_reason, e.stop_word, stats, has_new_line_);
    last["content"] = "";
    last["tokens"] = json::array();
    out += sse_event(dump(last));
}

std::string NativeRenderer::error_body(const ApiError& e) const { return native_field_names(e).to_json(); }

void NativeRenderer::stream_close(const engine::RequestStats&, std::string&) {}

}  // namespace lazyattn::server
