#include "server/openai_renderer.h"

#include <random>

#include "server/serving_front.h"
#include "server/sse.h"

namespace lazyattn::server {

OpenAiRenderer::OpenAiRenderer(const tokenizer::Tokenizer& tokenizer, ResponseMeta meta)
    : tokenizer_(tokenizer), meta_(std::move(meta)) {}

void OpenAiRenderer::prepared(const PreparedRequest& request) {
    output_ = request.output;
    reasoning_ = meta_.chat ? request.gen.reasoning_format.value_or(ReasoningFormat::kNone) : ReasoningFormat::kNone;
    if (reasoning_ != ReasoningFormat::kNone) {
        // A template whose generation prompt opens the thoughts (DeepSeek-R1's "<think>\n").
        const std::vector<int32_t>& tail = request.rag.tail;
        const size_t last = std::min<size_t>(tail.size(), 16);
        prompt_opens_reasoning_ =
            prompt_opens_reasoning(tokenizer_.decode(std::vector<int32_t>(tail.end() - last, tail.end()), true));
    }
    StreamChoice fresh;
    fresh.reasoning = ReasoningStream(reasoning_, prompt_opens_reasoning_);
    streams_.assign(size_t(std::max<int32_t>(1, request.gen.n)), fresh);
    if (meta_.chat && request.gen.tools && request.gen.tools->active()) {
        tools_ = request.gen.tools;
        tool_id_seed_ = std::random_device{}() * 0x100000001ull + std::random_device{}();
        for (size_t i = 0; i < streams_.size(); ++i) streams_[i].tools.emplace(*tools_, tool_id_seed_ + i * 1000);
    }
    timings_per_token_ = request.gen.timings_per_token;
    timings_.assign(streams_.size(), StreamTimings{});
    if (request.gen.verbose.value_or(false)) {
        verbose_ = std::make_unique<VerboseReply>(tokenizer_, meta_.model);
        verbose_->prepared(request);
    }
}

ChoiceBody OpenAiRenderer::choice_body(const ChoiceResult& choice, size_t i) const {
    const engine::RagResult& r = *choice.result;
    ChoiceBody c;
    c.finish_reason = std::string(engine::finish_reason_name(r.finish_reason));
    c.text = output_.echo ? output_.echo_text + r.text : r.text;
    if (reasoning_ != ReasoningFormat::kNone) {
        ReasoningParts parts = split_reasoning(r.text, reasoning_, prompt_opens_reasoning_);
        c.text = std::move(parts.content);
        if (parts.has_reasoning) c.reasoning = std::move(parts.reasoning);
    }
    if (tools_) {
        tool_calls::ParsedReply parsed = tool_calls::parse_tool_calls(c.text, *tools_, tool_id_seed_ + i * 1000);
        if (!parsed.calls.empty()) {
            c.tool_calls = tool_calls::openai_tool_calls(parsed.calls);
            c.content_null = !parsed.content.has_value();
            c.text = parsed.content.value_or("");
            if (c.finish_reason == "stop") c.finish_reason = "tool_calls";
        } else {
            c.text = parsed.content.value_or("");
        }
    }
    if (!output_.logprobs) return c;
    TokenLogprobList tokens;
    if (output_.echo) append_prompt_logprobs(*choice.handle, output_.echo_tokens, tokens);
    for (size_t i = 0; i < r.token_ids.size() && i < r.token_logprobs.size(); ++i) {
        tokens.append(r.token_ids[i], r.token_logprobs[i], r.top_logprobs[i]);
    }
    c.logprobs = meta_.chat ? chat_logprobs_json(tokenizer_, tokens) : completion_logprobs_json(tokenizer_, tokens, 0);
    return c;
}

std::string OpenAiRenderer::whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) {
    std::vector<ChoiceBody> bodies;
    bodies.reserve(choices.size());
    for (size_t i = 0; i < choices.size(); ++i) bodies.push_back(choice_body(choices[i], i));
    if (!verbose_ || choices.empty()) return completion_body(meta_, bodies, usage);
    // llama-server's: one choice's object; here one per choice when there are several.
    nlohmann::json v = nlohmann::json::array();
    for (size_t i = 0; i < choices.size(); ++i) v.push_back(verbose_->whole(*choices[i].result, i));
    return with_fields(completion_body(meta_, bodies, usage), {{"__verbose", v.size() == 1 ? v[0] : v}});
}

nlohmann::json OpenAiRenderer::take_logprobs(StreamChoice& c) {
    if (!output_.logprobs) return nullptr;
    nlohmann::json j = meta_.chat ? chat_logprobs_json(tokenizer_, c.pending)
                                  : completion_logprobs_json(tokenizer_, c.pending, c.text_bytes);
    c.pending.clear();
    return j;
}

void OpenAiRenderer::stream_open(size_t i, const engine::RequestHandle& handle, std::string& out) {
    if (meta_.chat) {
        out += sse_event(chunk_body(meta_, int(i), "", true, "", output_.include_usage));
        return;
    }
    if (!output_.echo) return;
    // The echoed prompt with its tokens' logprobs; they are published once the prompt has run,
    // which the first event (a token, or the end of a max_tokens 0 request) guarantees.
    StreamChoice& c = streams_.at(i);
    if (output_.logprobs) append_prompt_logprobs(handle, output_.echo_tokens, c.pending);
    nlohmann::json lp = take_logprobs(c);
    out += sse_event(chunk_body(meta_, int(i), output_.echo_text, false, "", output_.include_usage, lp));
    c.text_bytes += int64_t(output_.echo_text.size());
}

void OpenAiRenderer::stream_progress(size_t i, const engine::RequestEvent& e, std::string& out) {
    nlohmann::json fields = {{"prompt_progress", prompt_progress_json(e.timings)}};
    if (timings_per_token_) fields["timings"] = llama_timings(e.timings);
    out += sse_event(with_fields(chunk_body(meta_, int(i), "", meta_.chat, "", output_.include_usage), fields));
}

void OpenAiRenderer::stream_token(size_t i, const engine::RequestEvent& e, std::string& out) {
    const size_t from = out.size();
    timings_.at(i).note(e);
    if (verbose_) verbose_->token(i, e);
    write_token(i, e, out);
    if (timings_per_token_ && timings_[i].any)
        set_event_fields(out, from, {{"timings", llama_timings(timings_[i].latest)}});
}

void OpenAiRenderer::write_token(size_t i, const engine::RequestEvent& e, std::string& out) {
    StreamChoice& c = streams_.at(i);
    if (output_.logprobs && e.token_id >= 0) c.pending.append(e.token_id, e.logprob, e.top_logprobs);
    if (e.text.empty()) return;  // held back (a partial character or a possible stop string)
    if (reasoning_ != ReasoningFormat::kNone) return send_split(c, int(i), c.reasoning.feed(e.text), out);
    send_content(c, int(i), e.text, out);
}

void OpenAiRenderer::send_content(StreamChoice& c, int i, const std::string& text, std::string& out) {
    if (c.tools) return send_tool_delta(c, i, c.tools->feed(text), out);
    if (text.empty()) return;
    nlohmann::json lp = take_logprobs(c);
    out += sse_event(chunk_body(meta_, i, text, false, "", output_.include_usage, lp));
    c.text_bytes += int64_t(text.size());
}

// Text outside the calls as content chunks; each completed call as its two tool_calls deltas.
void OpenAiRenderer::send_tool_delta(StreamChoice& c, int i, const tool_calls::ToolCallDelta& d, std::string& out) {
    if (!d.content.empty()) {
        nlohmann::json lp = take_logprobs(c);
        out += sse_event(chunk_body(meta_, i, d.content, false, "", output_.include_usage, lp));
    }
    const int first = int(c.tools->num_calls() - d.calls.size());
    for (size_t k = 0; k < d.calls.size(); ++k) {
        for (const nlohmann::json& delta : tool_calls::openai_tool_call_deltas(d.calls[k], first + int(k))) {
            out += sse_event(tool_call_chunk_body(meta_, i, delta, output_.include_usage));
        }
    }
}

// Thoughts and answer text as chunks of their own (the pending logprobs go with the first).
void OpenAiRenderer::send_split(StreamChoice& c, int i, const ReasoningStream::Delta& d, std::string& out) {
    if (!d.reasoning.empty()) {
        nlohmann::json lp = take_logprobs(c);
        out += sse_event(chunk_body(meta_, i, "", false, "", output_.include_usage, lp, d.reasoning));
    }
    send_content(c, i, d.content, out);
}

void OpenAiRenderer::stream_end(size_t i, const engine::RequestEvent& e, const engine::RequestStats& stats,
                                std::string& out) {
    const size_t from = out.size();
    write_end(i, e, out);  // text released at the end (held back until now), then the finishing chunk
    if (timings_per_token_) set_event_fields(out, from, {{"timings", llama_timings(stats)}});
    if (verbose_) set_event_fields(out, from, {{"__verbose", verbose_->streamed_end(i, e, stats)}}, true);
}

void OpenAiRenderer::write_end(size_t i, const engine::RequestEvent& e, std::string& out) {
    StreamChoice& c = streams_.at(i);
    if (reasoning_ != ReasoningFormat::kNone) send_split(c, int(i), c.reasoning.finish(), out);
    std::string reason(engine::finish_reason_name(e.finish_reason));
    if (c.tools) {
        send_tool_delta(c, int(i), c.tools->finish(), out);
        if (c.tools->num_calls() > 0 && reason == "stop") reason = "tool_calls";
    }
    nlohmann::json lp = c.pending.empty() ? nlohmann::json(nullptr) : take_logprobs(c);
    out += sse_event(chunk_body(meta_, int(i), "", false, reason, output_.include_usage, lp));
}

void OpenAiRenderer::stream_close(const engine::RequestStats& usage, std::string& out) {
    if (output_.include_usage && timings_per_token_) {
        out += sse_event(with_fields(usage_chunk_body(meta_, usage), {{"timings", llama_timings(usage)}}));
    } else if (output_.include_usage) {
        out += sse_event(usage_chunk_body(meta_, usage));
    }
    out += kSseDone;
}

void OpenAiRenderer::stream_error(const ApiError& e, std::string& out) {
    out += sse_event(e.to_json());
    out += kSseDone;
}

}  // namespace lazyattn::server
