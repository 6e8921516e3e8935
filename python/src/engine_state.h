// The Python extension's engine state: the options an LLM is opened with, what it holds (model,
// engine, serving front) and how its failures reach Python (ValueError naming the argument, or
// lazyattn.Error). open_engine() starts it through the server's own start-up
// (server::open_serving_stack) and front, with the in-process defaults.
#pragma once

#include <nanobind/nanobind.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine_config.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/document_reuse.h"
#include "engine/request/quality_preset.h"
#include "engine/serving_engine.h"
#include "server/api_error.h"
#include "server/serving_front.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::python {

namespace nb = nanobind;

// An engine failure (lazyattn.Error); bad arguments are ValueError / TypeError.
struct EngineError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] inline void raise_value(const std::string& param, const std::string& message) {
    // A message that begins with the name ("max_tokens must ...", "'grammar' is not ...") says it already.
    if (param.empty() || message.rfind(param, 0) == 0 || message.rfind("'" + param + "'", 0) == 0) {
        throw nb::value_error(message.c_str());
    }
    throw nb::value_error((param + ": " + message).c_str());
}

// The server's face of a failure, raised: a 4xx is the caller's request (ValueError naming the
// field), anything else the engine's (lazyattn.Error).
[[noreturn]] inline void raise_api_error(const server::ApiError& e) {
    if (e.http_status == 400 || e.http_status == 404) raise_value(e.param, e.message);
    throw EngineError(e.message);
}

struct Options {
    std::string model;
    std::string cache_mode = "lazy";
    std::string kv_dtype = "f16";
    std::vector<std::string> kv_store;
    int threads = 0;
    int kv_cache_mb = 512;
    int max_num_seqs = 64;
    int max_model_len = 0;
    int max_batch_tokens = 512;
    std::string device = "cpu";
    std::string document_reuse;  // "": the model's default (as serve)
    std::string quality;         // fast, balanced, accurate ("": fast; as serve --quality)
    std::string chat_template;   // "": the model file's
};

// Everything one LLM holds; requests keep it alive while they are read.
struct State {
    engine::LoadedModel lm;
    std::unique_ptr<engine::ServingEngine> engine;
    std::unique_ptr<server::ServingFront> front;
    std::optional<tokenizer::ChatTemplate> chat;
    engine::EngineConfig config;
    engine::DocumentReuse default_reuse;
    engine::QualityPreset quality = engine::QualityPreset::kFast;  // as opened (the stack's)
    Options options;
    // Held shared by every call that uses the engine, whole by close() (taken with the GIL released).
    std::shared_mutex mu;
    bool closed = false;
    const pid_t owner = ::getpid();  // the process the engine's thread runs in

    // A process forked after the LLM started has none of its threads: every wait would hang (and
    // `mu` may have been held at the fork), so the engine is refused there before anything waits.
    bool forked() const { return ::getpid() != owner; }
    void require_own_process() const {
        if (forked()) {
            throw EngineError("this LLM was started in process " + std::to_string(owner) +
                              "; its engine thread does not exist after fork(): create a new LLM in this process");
        }
    }
    std::shared_lock<std::shared_mutex> hold() {
        require_own_process();
        return std::shared_lock<std::shared_mutex>(mu);
    }
    engine::ServingEngine& live() {
        if (closed) throw EngineError("the LLM is closed");
        return *engine;
    }
};

// In a forked child the engine is never destroyed: its destructor would join a thread that does
// not exist there. The child keeps it until it exits (only its memory, shared copy-on-write).
void keep_in_forked_child(std::shared_ptr<State> state);

// Opens the model, the engine and the front `o` names; raises on failure.
std::shared_ptr<State> open_engine(const Options& o);

}  // namespace lazyattn::python
