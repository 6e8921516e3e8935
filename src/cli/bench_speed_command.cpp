// `lazyattn bench speed`: prefill tok/s for an N-token prompt and decode tok/s over M tokens,
// measured the way bench/peer/llama_cpp_bench.py measures llama.cpp, so the two compare.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"

namespace lazyattn::cli {
namespace {

// A deterministic prompt of exactly n tokens: ordinary English, repeated as needed.
std::vector<int32_t> make_prompt(const tokenizer::Tokenizer& tok, int32_t n) {
    const std::string text =
        "The history of the printing press begins in the fifteenth century, when movable type "
        "changed how books were made and read across Europe. Within decades, presses in dozens "
        "of cities produced pamphlets, bibles, grammars and scientific treatises, and the cost "
        "of a book fell so far that ordinary merchants could own a small library. ";
    std::vector<int32_t> ids;
    const auto piece = tok.encode(text, false, false);
    while (int32_t(ids.size()) < n) ids.insert(ids.end(), piece.begin(), piece.end());
    ids.resize(n);
    return ids;
}

}  // namespace

int run_bench_speed(const BenchSpeedOptions& o) {
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
    if (!lm.ok()) {
        std::cerr << "error: " << lm.status().to_string() << "\n";
        return 1;
    }
    // Recompute mode: every repetition prefills the whole prompt, as the peer does.
    engine::EngineConfig ec = engine_config_for(o.common);
    ec.cache_mode = engine::CacheMode::kNone;
    ec.max_batch_tokens = std::max(o.prompt_tokens, 1);
    ec.check_integrity = false;
    engine::SyncEngine gen(*lm->model, *lm->tokenizer, ec);
    engine::RagRequest req;
    req.tail = make_prompt(*lm->tokenizer, o.prompt_tokens);
    req.max_tokens = o.gen_tokens + 1;  // the first token comes from prefill; then gen_tokens decode steps
    req.ignore_eos = true;
    for (int rep = 0; rep < o.reps; ++rep) {
        auto r = gen.run(req);
        if (!r.ok()) {
            std::cerr << "error: " << r.status().to_string() << "\n";
            return 1;
        }
        const double prefill_tok_s = 1000.0 * o.prompt_tokens / r->stats.ttft_ms;
        const double decode_tok_s = 1000.0 * (r->token_ids.size() - 1) / r->stats.decode_ms;
        if (o.json) {
            nlohmann::json j = {{"engine", "lazyattn"},
                                {"prefill_tok_s", prefill_tok_s},
                                {"decode_tok_s", decode_tok_s},
                                {"prompt_tokens", o.prompt_tokens},
                                {"gen_tokens", int(r->token_ids.size()) - 1},
                                {"threads", lm->backend->num_threads()}};
            std::cout << j.dump() << std::endl;
        } else {
            std::printf("prefill %d tokens: %.1f tok/s   decode %zu tokens: %.1f tok/s\n", o.prompt_tokens,
                        prefill_tok_s, r->token_ids.size() - 1, decode_tok_s);
        }
    }
    return 0;
}

namespace {

CLI::App* add_bench_speed_command(CLI::App& parent, BenchSpeedOptions& o) {
    CLI::App* bs = parent.add_subcommand("speed", "prefill and decode tokens per second");
    add_common_options(bs, o.common);
    bs->add_option("--prompt-tokens", o.prompt_tokens, "prompt length")->check(CLI::Range(1, 1 << 20));
    bs->add_option("--gen-tokens", o.gen_tokens, "decode steps")->check(CLI::Range(1, 1 << 20));
    bs->add_option("--reps", o.reps, "repetitions")->check(CLI::Range(1, 1000));
    bs->add_flag("--json", o.json, "one JSON line per repetition");
    return bs;
}

}  // namespace

std::unique_ptr<Command> bench_speed_command() {
    return make_command<BenchSpeedOptions>(add_bench_speed_command, run_bench_speed);
}

}  // namespace lazyattn::cli
