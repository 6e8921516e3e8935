// lazyattn._lazyattn: the Python extension, a thin face of the serving engine (no second engine).
// A request is an OpenAI request body, read by the server's own parser and laid out by the
// server's RequestBuilder, so the module and `lazyattn serve` answer the same request the same
// way; the pure-Python package (python/lazyattn) builds the bodies and the result objects.
//
// Threads: the engine runs on its own thread; every wait here releases the GIL, so any number of
// Python threads may submit and wait at once. A wait polls for signals every kPollMs and, when one
// raised (Ctrl-C: KeyboardInterrupt), cancels its request before the exception propagates.
// asyncio (lazyattn.AsyncLLM): a request submitted with a Notifier never blocks. The engine's
// event callback copies each event into the request's Mailbox and, when the mailbox was empty,
// names the request on the Notifier, whose eventfd the event loop watches (loop.add_reader);
// Request.try_next() then takes what the mailbox holds. One fd per event loop, no thread.
// Errors: a bad request raises ValueError naming the field; an engine failure lazyattn.Error.
// Tools: a chat offering tools has its reply parsed by the server's own parser
// (server/tool_calls/): result() splits the whole text into content and calls, and the events
// carry the content with the calls completed at that token, as the HTTP stream sends them.
#include <unistd.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/device.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "engine/engine_config.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/document_reuse.h"
#include "engine/serving_engine.h"
#include "grammar/constraint.h"
#include "grammar/constraint_compiler.h"
#include "kernels/params/kv_dtype.h"
#include "server/api_error.h"
#include "server/api_keys.h"
#include "server/document_batch.h"
#include "server/openai_request.h"
#include "server/request_builder.h"
#include "server/serving_front.h"
#include "server/tool_calls/tool_call_parser.h"
#include "tokenizer/chat_template.h"

#include "async_notifier.h"
#include "engine_state.h"

#ifdef LAZYATTN_CUDA_BUILT
#include "backend/cuda/cuda_engine_backend.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace lazyattn::python {
namespace {

constexpr int kPollMs = 50;  // how often a wait looks for Ctrl-C

nlohmann::json parse_body(const std::string& text) {
    nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) raise_value("", "the request is not a JSON object");
    return body;
}

nb::dict usage_dict(const engine::RequestStats& s) {
    nb::dict d;
    for (const server::UsageField& f : server::usage_fields(s)) {
        if (f.is_count) {
            d[f.name] = int64_t(f.value);
        } else {
            d[f.name] = f.value;
        }
    }
    return d;
}

nb::bytes piece_bytes(const tokenizer::Tokenizer& tok, int32_t id) {
    const std::string piece = tok.token_to_piece(id, true);
    return nb::bytes(piece.data(), piece.size());
}

// One generated token's logprobs: (token bytes, logprob, [(id, bytes, logprob), ...] best first).
nb::tuple logprob_tuple(const tokenizer::Tokenizer& tok, int32_t id, float logprob, const engine::TopLogprobs& top) {
    nb::list alternatives;
    for (const auto& [alt, lp] : top) alternatives.append(nb::make_tuple(alt, piece_bytes(tok, alt), lp));
    return nb::make_tuple(piece_bytes(tok, id), logprob, alternatives);
}

// The Python API's regex= and choice= travel as vLLM's guided_regex / guided_choice (the body has
// no field of the Python names); a compile error names spec.field, so it names the argument the
// caller wrote. Their types were checked in Python (lazyattn/_llm.py, _constraint).
void name_python_argument(std::optional<grammar::ConstraintSpec>& constraint) {
    if (!constraint) return;
    if (constraint->field == "guided_regex") constraint->field = "regex";
    if (constraint->field == "guided_choice") constraint->field = "choice";
}

// Calls as the Python package reads them: [(id, name, arguments JSON text), ...].
nb::list call_list(const std::vector<server::tool_calls::ToolCall>& calls) {
    nb::list out;
    for (const server::tool_calls::ToolCall& c : calls) out.append(nb::make_tuple(c.id, c.name, c.arguments));
    return out;
}

// The tools a prepared chat request's reply is parsed for (null: none, or tool_choice none).
std::shared_ptr<const server::tool_calls::ToolRequest> parsed_tools(const server::PreparedRequest& p) {
    if (!p.gen.chat || !p.gen.tools || !p.gen.tools->active()) return nullptr;
    return p.gen.tools;
}

// One submitted request: its events, one at a time, or its whole result.
class Request {
public:
    Request(std::shared_ptr<State> state, std::shared_ptr<engine::RequestHandle> handle, bool chat, bool logprobs,
            std::shared_ptr<Mailbox> mailbox, std::shared_ptr<const server::tool_calls::ToolRequest> tools)
        : state_(std::move(state)),
          handle_(std::move(handle)),
          mailbox_(std::move(mailbox)),
          tools_(std::move(tools)),
          chat_(chat),
          logprobs_(logprobs) {
        if (tools_) {
            // One seed for the stream and the whole: a streamed call and result()'s have one id.
            tool_seed_ = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
            tool_stream_.emplace(*tools_, tool_seed_);
        }
    }

    // The next event: ("token", token id, text, logprobs, calls) or ("finished", finish reason,
    // error message); logprobs is None unless the request asked for them (see logprob_tuple), and
    // for text released without a token (id -1). With tools, text is the content outside the
    // calls and calls the ones completed now (call_list); what the parser held back comes at the
    // end as a token of id -1. Blocks with the GIL released; Ctrl-C cancels the request and
    // raises KeyboardInterrupt.
    nb::tuple next() {
        state_->require_own_process();
        for (;;) {
            if (done_) {
                if (auto rest = held_back_tuple()) return *rest;
                return finished_tuple();
            }
            if (auto e = poll(); e && e->kind == engine::RequestEvent::Kind::kToken) return token_tuple(*e);
            if (!done_) check_signals();
        }
    }

    // Async requests (submitted with a Notifier): every event ready now, in order, without
    // blocking; the finishing one last. Empty when none is ready.
    nb::list try_next() {
        state_->require_own_process();
        if (!mailbox_) throw EngineError("try_next: the request was submitted without a notifier");
        nb::list out;
        if (done_) return out;
        for (const engine::RequestEvent& e : mailbox_->take()) {
            if (e.kind == engine::RequestEvent::Kind::kToken) {
                out.append(token_tuple(e));
            } else {
                note_finished(e);
                if (auto rest = held_back_tuple()) out.append(*rest);
                out.append(finished_tuple());
                break;  // nothing follows the end
            }
        }
        return out;
    }

    // Waits for the end (GIL released, Ctrl-C cancels) and returns text, token_ids,
    // finish_reason, error and usage.
    nb::dict result() {
        state_->require_own_process();
        // Events not read by next() are passed over: the result holds them all.
        while (!done_) {
            (void)poll();
            check_signals();  // tokens may come faster than kPollMs: not only on a timeout
        }
        engine::RagResult r;
        {
            nb::gil_scoped_release unlocked;
            r = handle_->wait();
        }
        nb::dict d;
        std::string finish(engine::finish_reason_name(r.finish_reason));
        if (tools_) {
            // The HTTP API's split (openai_renderer.cpp): content outside the calls, and a reply
            // that stopped after calls finishes with "tool_calls".
            server::tool_calls::ParsedReply parsed = server::tool_calls::parse_tool_calls(r.text, *tools_, tool_seed_);
            r.text = parsed.content.value_or("");
            d["tool_calls"] = call_list(parsed.calls);
            if (!parsed.calls.empty() && finish == "stop") finish = "tool_calls";
        } else {
            d["tool_calls"] = nb::list();
        }
        d["text"] = nb::str(r.text.data(), r.text.size());
        d["token_ids"] = r.token_ids;
        if (logprobs_) {
            // Per generated token, as the events carried them (token_ids[i] with token_logprobs[i]).
            nb::list lps;
            const size_t n = std::min(r.token_ids.size(), r.token_logprobs.size());
            for (size_t i = 0; i < n; ++i) {
                static const engine::TopLogprobs kNone;
                lps.append(logprob_tuple(*state_->lm.tokenizer, r.token_ids[i], r.token_logprobs[i],
                                         i < r.top_logprobs.size() ? r.top_logprobs[i] : kNone));
            }
            d["logprobs"] = lps;
        } else {
            d["logprobs"] = nb::none();
        }
        d["finish_reason"] = finish;
        d["error"] = r.status.ok() ? std::string() : r.status.message();
        if (r.finish_reason == engine::FinishReason::kError) {
            // The server's face of it: a request the engine found bad is the caller's.
            const server::ApiError e = server::generation_error(r.status, chat_);
            d["error_is_request"] = e.http_status == 400 || e.http_status == 404;
            d["error_param"] = e.param;
        }
        d["usage"] = usage_dict(r.stats);
        return d;
    }

    void cancel() { handle_->cancel(); }
    uint64_t id() const { return handle_->id(); }
    // The name the Notifier gives this request (0: submitted without one).
    uint64_t key() const { return mailbox_ ? mailbox_->key : 0; }
    bool done() const { return done_; }

private:
    nb::tuple token_tuple(const engine::RequestEvent& e) {
        nb::object lp = nb::none();
        if (logprobs_ && e.token_id >= 0) {
            lp = logprob_tuple(*state_->lm.tokenizer, e.token_id, e.logprob, e.top_logprobs);
        }
        if (!tool_stream_) {
            return nb::make_tuple("token", e.token_id, nb::str(e.text.data(), e.text.size()), lp, nb::list());
        }
        const server::tool_calls::ToolCallDelta d = tool_stream_->feed(e.text);
        return nb::make_tuple("token", e.token_id, nb::str(d.content.data(), d.content.size()), lp, call_list(d.calls));
    }
    // Once finished: what the tool-call parser held back (text, a call left open), once.
    std::optional<nb::tuple> held_back_tuple() {
        if (!tool_stream_ || flushed_) return std::nullopt;
        flushed_ = true;
        const server::tool_calls::ToolCallDelta d = tool_stream_->finish();
        if (tool_stream_->num_calls() > 0 && finish_reason_ == "stop") finish_reason_ = "tool_calls";
        if (d.content.empty() && d.calls.empty()) return std::nullopt;
        return nb::make_tuple("token", -1, nb::str(d.content.data(), d.content.size()), nb::none(), call_list(d.calls));
    }
    nb::tuple finished_tuple() const { return nb::make_tuple("finished", finish_reason_, error_); }
    void note_finished(const engine::RequestEvent& e) {
        done_ = true;
        finish_reason_ = std::string(engine::finish_reason_name(e.finish_reason));
        if (!e.status.ok()) error_ = e.status.message();
    }

    // The next event within kPollMs (GIL released); the finishing one is kept for next() and
    // result().
    std::optional<engine::RequestEvent> poll() {
        std::optional<engine::RequestEvent> e;
        {
            nb::gil_scoped_release unlocked;
            e = handle_->next_event(kPollMs);
        }
        if (e && e->kind == engine::RequestEvent::Kind::kFinished) note_finished(*e);
        return e;
    }

    void check_signals() {
        if (PyErr_CheckSignals() != 0) {
            handle_->cancel();
            throw nb::python_error();
        }
    }

    std::shared_ptr<State> state_;
    std::shared_ptr<engine::RequestHandle> handle_;
    std::shared_ptr<Mailbox> mailbox_;                              // async requests only
    std::shared_ptr<const server::tool_calls::ToolRequest> tools_;  // a chat's tools to parse; null: none
    uint64_t tool_seed_ = 0;
    std::optional<server::tool_calls::ToolCallStream> tool_stream_;  // next()'s parser
    bool flushed_ = false;                                           // held_back_tuple() was taken
    bool chat_ = false;
    bool logprobs_ = false;  // the request asked for logprobs
    bool done_ = false;
    std::string finish_reason_, error_;
};

// Each method does its engine work with the GIL released, under a shared hold of the state
// (close() takes it whole), and makes Python objects only once the GIL is back: a thread never
// waits for a lock while it holds the GIL.
class Engine {
public:
    explicit Engine(const Options& o) : state_(open_engine(o)) {}
    ~Engine() { close(); }

    // `body_json`: an OpenAI /v1/completions (chat false) or /v1/chat/completions body.
    // `notifier`: an async request, read with try_next() when the notifier names it.
    Request submit(const std::string& body_json, bool chat, const Notifier* notifier) {
        std::shared_ptr<engine::RequestHandle> handle;
        std::shared_ptr<Mailbox> mailbox;
        if (notifier != nullptr) mailbox = std::make_shared<Mailbox>(notifier->core(), next_mailbox_key());
        bool logprobs = false;
        std::shared_ptr<const server::tool_calls::ToolRequest> tools;
        {
            nb::gil_scoped_release unlocked;
            auto lock = state_->hold();
            (void)state_->live();  // refused once closed
            const nlohmann::json body = parse_body(body_json);
            server::GenerationRequest gen;
            if (auto e = server::parse_generation_request(body, chat, gen)) raise_api_error(*e);
            name_python_argument(gen.constraint);
            if (gen.stream || gen.n != 1) raise_value("n", "one choice per request here (submit several)");
            logprobs = gen.logprobs >= 0;
            const std::string tenant = server::ApiKeys::tenant_of("", gen.cache_salt);
            server::PreparedRequest prepared;
            if (auto e = state_->front->prepare(std::move(gen), tenant, {}, prepared)) raise_api_error(*e);
            tools = parsed_tools(prepared);
            engine::RequestHandle::Callback on_event;
            if (mailbox) on_event = [mailbox](const engine::RequestEvent& e) { mailbox->post(e); };
            auto submitted = state_->front->submit(prepared, std::move(on_event));
            if (!submitted.ok()) raise_api_error(server::generation_error(submitted.status(), chat));
            handle = std::move(submitted->handles.front());
        }
        return Request(state_, std::move(handle), chat, logprobs, std::move(mailbox), std::move(tools));
    }

    std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool parse_special) {
        nb::gil_scoped_release unlocked;
        return state_->lm.tokenizer->encode(text, add_special, parse_special);
    }

    nb::str detokenize(const std::vector<int32_t>& ids, bool render_special) {
        std::string text;
        {
            nb::gil_scoped_release unlocked;
            const int32_t vocab = state_->lm.tokenizer->vocab_size();
            for (size_t i = 0; i < ids.size(); ++i) {
                if (ids[i] < 0 || ids[i] >= vocab) {
                    raise_value("ids", "ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                                           " is not in the vocabulary [0, " + std::to_string(vocab) + ")");
                }
            }
            text = state_->lm.tokenizer->decode(ids, render_special);
        }
        return nb::str(text.data(), text.size());
    }

    // `documents_json`: a JSON list as /v1/documents takes it. Computes every document (cached
    // from then on) and pins it when `pin`; a batch pins all its documents or none.
    std::vector<nb::dict> add_documents(const std::string& documents_json, const std::string& cache_salt, bool pin) {
        std::vector<engine::DocumentInfo> infos;
        {
            nb::gil_scoped_release unlocked;
            auto lock = state_->hold();
            engine::ServingEngine& eng = state_->live();
            const nlohmann::json value = nlohmann::json::parse(documents_json, nullptr, false);
            std::vector<server::DocumentRef> docs;
            if (auto e = server::parse_documents(value, false, docs)) raise_api_error(*e);
            if (auto e = server::check_cache_salt(cache_salt)) raise_api_error(*e);
            const std::string tenant = server::ApiKeys::tenant_of("", cache_salt);
            const auto mode = pin ? server::PinMode::kKeep : server::PinMode::kComputeOnly;
            if (auto e = server::pin_document_batch(state_->front->builder(), eng, docs, tenant, infos, mode)) {
                raise_api_error(*e);
            }
        }
        std::vector<nb::dict> out;
        for (const engine::DocumentInfo& info : infos) out.push_back(document_dict(info));
        return out;
    }

    void unpin(const std::string& id, const std::string& cache_salt) {
        nb::gil_scoped_release unlocked;
        auto lock = state_->hold();
        engine::ServingEngine& eng = state_->live();
        if (auto e = server::check_cache_salt(cache_salt)) raise_api_error(*e);
        const Status st = eng.unpin_document(server::ApiKeys::tenant_of("", cache_salt), id);
        if (!st.ok()) {
            server::ApiError e = server::api_error_from_status(st);
            e.param = "id";
            raise_api_error(e);
        }
    }

    std::vector<nb::dict> documents(const std::string& cache_salt) {
        std::vector<engine::DocumentInfo> infos;
        {
            nb::gil_scoped_release unlocked;
            auto lock = state_->hold();
            engine::ServingEngine& eng = state_->live();
            if (auto e = server::check_cache_salt(cache_salt)) raise_api_error(*e);
            infos = eng.list_documents(server::ApiKeys::tenant_of("", cache_salt));
        }
        std::vector<nb::dict> out;
        for (const engine::DocumentInfo& info : infos) out.push_back(document_dict(info));
        return out;
    }

    nb::dict info() {
        const model::ModelConfig& mc = state_->lm.model->config();
        const Options& o = state_->options;
        engine::SchedulerStats stats;
        {
            nb::gil_scoped_release unlocked;
            stats = state_->engine->stats();
        }
        nb::dict d;
        d["model"] = o.model;
        d["name"] = mc.name;
        d["architecture"] = mc.arch_name;
        d["num_layers"] = mc.num_layers;
        d["hidden_dim"] = mc.hidden_dim;
        d["num_heads"] = mc.num_heads;
        d["num_kv_heads"] = mc.num_kv_heads;
        d["vocab_size"] = state_->lm.tokenizer->vocab_size();
        d["context_length"] = state_->engine->context_length();
        d["cache_mode"] = o.cache_mode;
        d["kv_dtype"] = kernels::kv_types_name(state_->config.kv_types);
        d["kv_store"] = o.kv_store;
        d["device"] = o.device;
        d["block_size"] = state_->config.block_size;
        d["kv_blocks"] = int(stats.blocks_total);
        d["document_reuse"] = state_->default_reuse.name();
        d["quality"] = std::string(engine::quality_preset_name(state_->quality));
        d["chat_template"] = state_->chat ? state_->chat->origin : std::string();
        d["cpu_isa"] = std::string(cpu_isa_name(limit_cpu_features(probe_cpu_features(), cpu_isa_limit()).widest()));
        return d;
    }

    nb::dict stats() {
        engine::SchedulerStats s;
        grammar::ConstraintCompiler::Stats c;
        {
            nb::gil_scoped_release unlocked;
            s = state_->engine->stats();
            c = state_->front->constraint_stats();
        }
        nb::dict d;
        d["requests_finished"] = s.requests_finished;
        d["requests_cancelled"] = s.requests_cancelled;
        d["requests_failed"] = s.requests_failed;
        d["num_waiting"] = s.num_waiting;
        d["num_running"] = s.num_running;
        d["segment_hits"] = s.segment_hits;
        d["segment_misses"] = s.segment_misses;
        d["prompt_tokens_computed"] = s.prompt_tokens_computed;
        d["prompt_tokens_reused"] = s.prompt_tokens_reused;
        d["blocks_total"] = s.blocks_total;
        d["blocks_used"] = s.blocks_used;
        d["blocks_pinned"] = s.blocks_pinned;
        // Structured output: grammars compiled, requests served from the compiled cache, held.
        d["constraints_compiled"] = c.compiles;
        d["constraint_cache_hits"] = c.cache_hits;
        d["constraints_cached"] = c.cached;
        return d;
    }

    int32_t context_length() const { return state_->engine->context_length(); }

    // Cancels what runs and stops the engine thread; the LLM refuses work afterwards.
    void close() {
        if (!state_) return;
        if (state_->forked()) return keep_in_forked_child(state_);
        nb::gil_scoped_release unlocked;
        std::unique_lock lock(state_->mu);
        if (state_->closed) return;
        state_->closed = true;
        state_->engine->shutdown(true);
    }

private:
    static nb::dict document_dict(const engine::DocumentInfo& info) {
        nb::dict d;
        d["id"] = info.id;
        d["tokens"] = info.num_tokens;
        d["pinned"] = info.pinned;
        d["pin_count"] = info.pin_count;
        return d;
    }

    std::shared_ptr<State> state_;
};

}  // namespace
}  // namespace lazyattn::python

NB_MODULE(_lazyattn, m) {
    using namespace lazyattn::python;
    m.doc() = "lazyattn's engine (use the lazyattn package, not this module)";
#ifdef LAZYATTN_CUDA_BUILT
    lazyattn::backend::set_cuda_backend_factory(&lazyattn::backend::cuda::make_cuda_engine_backend);
    m.attr("cuda_built") = true;
#else
    m.attr("cuda_built") = false;
#endif
    nb::exception<EngineError>(m, "Error");
    // An LLM alive at interpreter exit is not a leak worth a warning.
    nb::set_leak_warnings(false);
    m.def(
        "set_log_level",
        [](const std::string& level) {
            auto parsed = lazyattn::log::parse_level(level);
            if (!parsed.ok()) raise_value("log_level", parsed.status().message());
            lazyattn::log::configure(*parsed, lazyattn::log::Format::kText);
        },
        "level"_a);

    nb::class_<Request>(m, "Request")
        .def("next", &Request::next)
        .def("try_next", &Request::try_next)
        .def("result", &Request::result)
        .def("cancel", &Request::cancel)
        .def_prop_ro("id", &Request::id)
        .def_prop_ro("key", &Request::key)
        .def_prop_ro("done", &Request::done);

    nb::class_<Notifier>(m, "Notifier")
        .def(nb::init<>())
        .def_prop_ro("fd", &Notifier::fd)
        .def("take", &Notifier::take)
        .def("close", &Notifier::close);

    nb::class_<Engine>(m, "Engine")
        .def(
            "__init__",
            [](Engine* self, const std::string& model, const std::string& cache_mode, const std::string& kv_dtype,
               const std::vector<std::string>& kv_store, int threads, int kv_cache_mb, int max_num_seqs,
               int max_model_len, int max_batch_tokens, const std::string& device, const std::string& document_reuse,
               const std::string& chat_template, const std::string& quality) {
                Options o;
                o.model = model;
                o.cache_mode = cache_mode;
                o.kv_dtype = kv_dtype;
                o.kv_store = kv_store;
                o.threads = threads;
                o.kv_cache_mb = kv_cache_mb;
                o.max_num_seqs = max_num_seqs;
                o.max_model_len = max_model_len;
                o.max_batch_tokens = max_batch_tokens;
                o.device = device;
                o.document_reuse = document_reuse;
                o.chat_template = chat_template;
                o.quality = quality;
                new (self) Engine(o);
            },
            "model"_a, "cache_mode"_a, "kv_dtype"_a, "kv_store"_a, "threads"_a, "kv_cache_mb"_a, "max_num_seqs"_a,
            "max_model_len"_a, "max_batch_tokens"_a, "device"_a, "document_reuse"_a, "chat_template"_a,
            "quality"_a = "")
        .def("submit", &Engine::submit, "body_json"_a, "chat"_a, "notifier"_a.none() = nb::none())
        .def("tokenize", &Engine::tokenize, "text"_a, "add_special"_a, "parse_special"_a)
        .def("detokenize", &Engine::detokenize, "ids"_a, "render_special"_a)
        .def("add_documents", &Engine::add_documents, "documents_json"_a, "cache_salt"_a, "pin"_a)
        .def("unpin", &Engine::unpin, "id"_a, "cache_salt"_a)
        .def("documents", &Engine::documents, "cache_salt"_a)
        .def("info", &Engine::info)
        .def("stats", &Engine::stats)
        .def_prop_ro("context_length", &Engine::context_length)
        .def("close", &Engine::close);
}
