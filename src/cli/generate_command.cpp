// `lazyattn generate`: one prompt (raw or chat), streamed to stdout or reported as JSON.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "engine/engine.h"
#include "engine/loaded_model.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::cli {
namespace {

Expected<std::string> render_chat(const GenerateOptions& o, const loader::GgufFile& gguf) {
    tokenizer::ChatTemplate tmpl;
    if (!o.chat_template.empty()) {
        LA_ASSIGN_OR_RETURN(tmpl.kind, tokenizer::chat_template_from_name(o.chat_template));
    } else {
        auto jinja = gguf.get_string("tokenizer.chat_template");
        if (!jinja.ok()) return not_found("the model has no chat template; name one with --chat-template");
        LA_ASSIGN_OR_RETURN(tmpl, tokenizer::chat_template_from_jinja(*jinja));
    }
    std::vector<tokenizer::ChatMessage> messages;
    if (!o.system.empty()) messages.push_back({"system", o.system});
    messages.push_back({"user", o.prompt});
    return tmpl.apply(messages, true);
}

}  // namespace

int run_generate(const GenerateOptions& o) {
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) {
        std::cerr << "error: no model found; run `make run` once or pass --model FILE\n";
        return 1;
    }
    auto lm = engine::load_model(path, o.common.num_threads);
    if (!lm.ok()) {
        std::cerr << "error: " << lm.status().to_string() << "\n";
        return 1;
    }
    std::string text = o.prompt;
    if (o.chat) {
        auto rendered = render_chat(o, lm->model->gguf());
        if (!rendered.ok()) {
            std::cerr << "error: " << rendered.status().to_string() << "\n";
            return 1;
        }
        text = *rendered;
    }
    engine::RagRequest req;
    // A rendered chat template already holds any BOS text it wants (Llama-3 writes one itself).
    req.tail = lm->tokenizer->encode(text, /*add_special=*/!o.chat, /*parse_special=*/o.chat);
    req.sampling = o.sampling;
    req.max_tokens = o.max_tokens;
    req.stop = o.stop;
    req.ignore_eos = o.ignore_eos;

    engine::EngineConfig ec;
    ec.kv_cache_mb = o.kv_cache_mb;
    if (Status st = ec.validate(); !st.ok()) {
        std::cerr << "error: " << st.to_string() << "\n";
        return 2;
    }
    engine::Engine gen(*lm->model, *lm->tokenizer, ec);
    if (req.tail.empty()) {
        std::cerr << "error: the prompt is empty\n";
        return 2;
    }
    engine::TextCallback stream;
    if (!o.json) {
        stream = [](std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
    }
    auto result = gen.run(req, stream);
    if (!result.ok()) {
        std::cerr << "\nerror: " << result.status().to_string() << "\n";
        return 1;
    }
    if (o.json) {
        nlohmann::json j = {
            {"text", result->text},
            {"token_ids", result->token_ids},
            {"num_prompt_tokens", result->stats.num_prompt_tokens},
            {"num_generated_tokens", result->token_ids.size()},
            {"finish_reason", result->finish_reason},
            {"ttft_ms", result->stats.ttft_ms},
            {"decode_tok_per_s", result->stats.decode_tok_per_s},
        };
        std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
        std::printf("\n");
        std::fprintf(stderr, "[%d prompt tokens, %zu generated, TTFT %.1f ms, decode %.1f tok/s, %s]\n",
                     result->stats.num_prompt_tokens, result->token_ids.size(), result->stats.ttft_ms,
                     result->stats.decode_tok_per_s, result->finish_reason.c_str());
    }
    return 0;
}

int run_info(const CommonOptions& o) {
    const std::string path = o.model_path.empty() ? default_model_path() : o.model_path;
    if (path.empty()) {
        std::cerr << "error: no model found; run `make run` once or pass --model FILE\n";
        return 1;
    }
    auto file = loader::GgufFile::open(path);
    if (!file.ok()) {
        std::cerr << "error: " << file.status().to_string() << "\n";
        return 1;
    }
    auto config = model::ModelConfig::from_gguf(**file);
    if (!config.ok()) {
        std::cerr << "error: " << config.status().to_string() << "\n";
        return 1;
    }
    std::cout << "file: " << path << "\nGGUF version: " << (*file)->version()
              << "\ntensors: " << (*file)->tensors().size() << "\n" << config->describe();
    auto pre = (*file)->get_string("tokenizer.ggml.pre");
    auto tok_model = (*file)->get_string("tokenizer.ggml.model");
    std::cout << "tokenizer: " << (tok_model.ok() ? *tok_model : "?") << " (pre-tokenizer "
              << (pre.ok() ? *pre : "default") << ")\n";
    return 0;
}

}  // namespace lazyattn::cli
