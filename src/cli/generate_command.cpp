// `lazyattn generate`: one prompt (raw or chat), optionally with documents as cached segments,
// run --repeat times in one process (documents re-shuffled between runs when asked), streamed to
// stdout or reported as one JSON object per run.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "cli/store_json.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/rag_prompt.h"
#include "engine/sync_engine.h"

namespace lazyattn::cli {
namespace {

Expected<std::optional<tokenizer::ChatTemplate>> chat_template_for(const GenerateOptions& o,
                                                                   const loader::GgufFile& gguf) {
    if (!o.chat) return std::optional<tokenizer::ChatTemplate>();
    LA_ASSIGN_OR_RETURN(auto tmpl, tokenizer::select_chat_template(o.chat_template, gguf));
    if (!tmpl) return not_found("the model has no chat template; name one with --chat-template");
    return tmpl;
}

Expected<std::vector<std::string>> read_documents(const GenerateOptions& o) {
    std::vector<std::string> docs;
    for (const auto& path : o.doc_files) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return not_found("cannot read document file '" + path + "'");
        std::stringstream ss;
        ss << in.rdbuf();
        docs.push_back(engine::format_document("", ss.str()));
    }
    for (const auto& text : o.doc_texts) docs.push_back(engine::format_document("", text));
    return docs;
}

nlohmann::json run_json(const engine::RagResult& r) {
    const auto& s = r.stats;
    return {{"text", r.text},
            {"token_ids", r.token_ids},
            {"finish_reason", std::string(engine::finish_reason_name(r.finish_reason))},
            {"num_prompt_tokens", s.num_prompt_tokens},
            {"num_generated_tokens", s.num_generated},
            {"ttft_ms", s.ttft_ms},
            {"decode_tok_per_s", s.decode_tok_per_s},
            {"prefill_tokens", s.prefill_tokens},
            {"reused_tokens", s.reused_tokens},
            {"segments_hit", s.segments_hit},
            {"segments_missed", s.segments_missed},
            {"segments_from_store", s.segments_from_store},
            {"peak_blocks", s.peak_blocks}};
}

int fail(const Status& st, int code = 1) {
    std::cerr << "error: " << st.to_string() << "\n";
    return code;
}

// One run's result: a JSON line (--json), else its statistics on stderr after the streamed text.
void report_run(const GenerateOptions& o, engine::SyncEngine& eng, const engine::RagResult& result, int run) {
    if (o.json) {
        auto j = run_json(result);
        j["run"] = run + 1;
        j["cache_mode"] = o.cache_mode;
        if (!o.common.kv_stores.empty()) j["store"] = store_stats_json(eng.scheduler().stats().store);
        std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
        return;
    }
    const auto& s = result.stats;
    std::printf("\n");
    std::fprintf(stderr,
                 "[run %d, %s: %d prompt tokens (%d prefilled, %d reused; segments hit %d (%d from the store), "
                 "missed %d), %d generated, TTFT %.1f ms, decode %.1f tok/s, %s]\n",
                 run + 1, o.cache_mode.c_str(), s.num_prompt_tokens, s.prefill_tokens, s.reused_tokens, s.segments_hit,
                 s.segments_from_store, s.segments_missed, s.num_generated, s.ttft_ms, s.decode_tok_per_s,
                 std::string(engine::finish_reason_name(result.finish_reason)).c_str());
}

}  // namespace

int run_generate(const GenerateOptions& o) {
    auto mode = engine::parse_cache_mode(o.cache_mode);
    if (!mode.ok()) return fail(mode.status(), 2);
    engine::EngineConfig ec = engine_config_for(o.common);
    ec.kv_cache_mb = o.kv_cache_mb;
    ec.cache_mode = *mode;
    if (Status st = ec.validate(); !st.ok()) return fail(st, 2);
    auto docs = read_documents(o);
    if (!docs.ok()) return fail(docs.status());

    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) return fail(no_model_found());
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
    if (!lm.ok()) return fail(lm.status());
    auto chat = chat_template_for(o, lm->model->gguf());
    if (!chat.ok()) return fail(chat.status());

    engine::RagPromptText text{o.system, *docs, o.prompt};
    auto created = engine::SyncEngine::create(*lm->model, *lm->tokenizer, ec);
    if (!created.ok()) return fail(created.status(), 2);  // e.g. a KV pool larger than memory
    engine::SyncEngine& eng = **created;
    std::mt19937_64 rng(o.sampling.seed);
    for (int run = 0; run < o.repeat; ++run) {
        if (run > 0 && o.shuffle_docs) std::shuffle(text.documents.begin(), text.documents.end(), rng);
        auto req = engine::build_rag_request(*lm->tokenizer, *chat, text);
        if (!req.ok()) return fail(req.status(), 2);
        req->sampling = o.sampling;
        req->max_tokens = o.max_tokens;
        req->stop = engine::make_stop_strings(o.stop);
        req->ignore_eos = o.ignore_eos;
        engine::TextCallback stream;
        if (!o.json && o.repeat > 1) std::printf("[run %d/%d] ", run + 1, o.repeat);  // which answer is which
        if (!o.json) {
            stream = [](std::string_view piece) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
            };
        }
        auto result = eng.run(*req, stream);
        if (!result.ok()) return fail(result.status());
        report_run(o, eng, *result, run);
    }
    // The documents' store writes finish before exit (the store's close would give them 1 s).
    if (store::SegmentStore* store = eng.core().kv_store().store()) store->flush();
    return 0;
}

namespace {

CLI::App* add_generate_command(CLI::App& parent, GenerateOptions& o) {
    CLI::App* g = parent.add_subcommand("generate", "generate text for one prompt");
    add_common_options(g, o.common);
    g->add_option("--prompt", o.prompt, "the prompt text")->required();
    g->add_flag("--chat", o.chat, "wrap the prompt in the model's chat template");
    g->add_option("--system", o.system, "system message (with --chat)");
    g->add_option("--chat-template", o.chat_template,
                  "chat template: a built-in name (llama-server's list), the template's text, or a .jinja file "
                  "(default: the model file's own)");
    g->add_option("--max-tokens", o.max_tokens, "tokens to generate at most")->check(CLI::NonNegativeNumber);
    g->add_option("--temperature", o.sampling.temperature, "0 = greedy")->check(CLI::NonNegativeNumber);
    g->add_option("--top-k", o.sampling.top_k, "0 = off")->check(CLI::NonNegativeNumber);
    g->add_option("--top-p", o.sampling.top_p, "1 = off")->check(CLI::Range(0.0, 1.0));
    g->add_option("--min-p", o.sampling.min_p, "0 = off")->check(CLI::Range(0.0, 1.0));
    g->add_option("--repeat-penalty", o.sampling.repetition_penalty, "1 = off")->check(CLI::PositiveNumber);
    g->add_option("--seed", o.sampling.seed, "random seed");
    g->add_option("--stop", o.stop, "stop string (repeatable)");
    g->add_flag("--ignore-eos", o.ignore_eos, "keep generating past end-of-generation tokens");
    g->add_flag("--json", o.json, "print one JSON object instead of streaming text");
    g->add_option("--kv-cache-mb", o.kv_cache_mb, "KV cache pool size in MiB")->check(CLI::PositiveNumber);
    g->add_option("--doc", o.doc_files, "a document file, cached as its own segment (repeatable)");
    g->add_option("--doc-text", o.doc_texts, "a document given inline (repeatable)");
    g->add_option("--cache-mode", o.cache_mode, cache_mode_help())->check(cache_mode_check());
    g->add_option("--repeat", o.repeat, "run the request N times in one process")->check(CLI::Range(1, 100000));
    g->add_flag("--shuffle-docs", o.shuffle_docs, "re-order the documents before each repeated run");
    return g;
}

}  // namespace

std::unique_ptr<Command> generate_command() {
    return make_command<GenerateOptions>(add_generate_command, run_generate);
}

}  // namespace lazyattn::cli
