// The lazyattn binary: parses the command line into each command's options struct (the only
// place configuration is read) and runs it. Bad arguments print usage and exit with code 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>

#include "cli/bench_store_command.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/precompute_command.h"

#ifdef LAZYATTN_CUDA_BUILT
#include "backend/device.h"
#include "backends/cuda/cuda_engine_backend.h"
#endif

int main(int argc, char** argv) {
    using namespace lazyattn::cli;
#ifdef LAZYATTN_CUDA_BUILT
    // --device cuda makes the CUDA backend this binary links (backend::make_backend).
    lazyattn::backend::set_cuda_backend_factory(&lazyattn::backends::cuda::make_cuda_engine_backend);
#endif
    CLI::App app{"lazyattn: a RAG inference engine with position-agnostic document KV caching"};
    app.require_subcommand(1);

    GenerateOptions gen;
    CLI::App* g = app.add_subcommand("generate", "generate text for one prompt");
    add_common_options(g, gen.common);
    g->add_option("--prompt", gen.prompt, "the prompt text")->required();
    g->add_flag("--chat", gen.chat, "wrap the prompt in the model's chat template");
    g->add_option("--system", gen.system, "system message (with --chat)");
    g->add_option("--chat-template", gen.chat_template,
                  "chat template: chatml | llama3 | a .jinja file (default: the model file's own)");
    g->add_option("--max-tokens", gen.max_tokens, "tokens to generate at most")->check(CLI::NonNegativeNumber);
    g->add_option("--temperature", gen.sampling.temperature, "0 = greedy")->check(CLI::NonNegativeNumber);
    g->add_option("--top-k", gen.sampling.top_k, "0 = off")->check(CLI::NonNegativeNumber);
    g->add_option("--top-p", gen.sampling.top_p, "1 = off")->check(CLI::Range(0.0, 1.0));
    g->add_option("--min-p", gen.sampling.min_p, "0 = off")->check(CLI::Range(0.0, 1.0));
    g->add_option("--repeat-penalty", gen.sampling.repetition_penalty, "1 = off")->check(CLI::PositiveNumber);
    g->add_option("--seed", gen.sampling.seed, "random seed");
    g->add_option("--stop", gen.stop, "stop string (repeatable)");
    g->add_flag("--ignore-eos", gen.ignore_eos, "keep generating past end-of-generation tokens");
    g->add_flag("--json", gen.json, "print one JSON object instead of streaming text");
    g->add_option("--kv-cache-mb", gen.kv_cache_mb, "KV cache pool size in MiB")->check(CLI::PositiveNumber);
    g->add_option("--doc", gen.doc_files, "a document file, cached as its own segment (repeatable)");
    g->add_option("--doc-text", gen.doc_texts, "a document given inline (repeatable)");
    g->add_option("--cache-mode", gen.cache_mode, cache_mode_help())->check(cache_mode_check());
    g->add_option("--repeat", gen.repeat, "run the request N times in one process")->check(CLI::Range(1, 100000));
    g->add_flag("--shuffle-docs", gen.shuffle_docs, "re-order the documents before each repeated run");

    CommonOptions info;
    std::string info_chat_template;
    CLI::App* i = app.add_subcommand("info", "print the model description");
    add_common_options(i, info, false);
    i->add_option("--chat-template", info_chat_template,
                  "describe this chat template instead of the model file's: chatml | llama3 | a .jinja file");

    TokenizeOptions tokenize;
    CLI::App* tk = app.add_subcommand("tokenize", "print the token ids of a text (as the server's /tokenize)");
    add_common_options(tk, tokenize.common, false);
    tk->add_option("text,--prompt", tokenize.text, "the text to tokenize")->required();
    tk->add_flag("--add-special", tokenize.add_special, "add BOS/EOS as the model's metadata asks");
    tk->add_flag("--parse-special", tokenize.parse_special, "special-token text becomes the special token");
    tk->add_flag("--pieces", tokenize.pieces, "print each token's text beside its id");
    tk->add_flag("--json", tokenize.json, "one JSON object: tokens, count, pieces");

    RagDemoOptions demo;
    CLI::App* d = app.add_subcommand("demo", "RAG demo: 2WikiMultihopQA questions, documents shuffled between runs");
    add_common_options(d, demo.common);
    d->add_option("--data", demo.data_path, "JSONL file of questions with documents");
    d->add_option("--questions", demo.num_questions, "questions to ask")->check(CLI::Range(1, 1000));
    d->add_option("--runs", demo.runs, "runs per question (documents shuffled after the first)")
        ->check(CLI::Range(1, 100));
    d->add_option("--modes", demo.modes, "cache modes to compare")
        ->check(cache_mode_check());

    BenchSpeedOptions speed;
    CLI::App* bench = app.add_subcommand("bench", "benchmarks");
    bench->require_subcommand(1);
    CLI::App* bs = bench->add_subcommand("speed", "prefill and decode tokens per second");
    add_common_options(bs, speed.common);
    bs->add_option("--prompt-tokens", speed.prompt_tokens, "prompt length")->check(CLI::Range(1, 1 << 20));
    bs->add_option("--gen-tokens", speed.gen_tokens, "decode steps")->check(CLI::Range(1, 1 << 20));
    bs->add_option("--reps", speed.reps, "repetitions")->check(CLI::Range(1, 1000));
    bs->add_flag("--json", speed.json, "one JSON line per repetition");

    BenchRagOptions rag;
    CLI::App* br = bench->add_subcommand("rag", "the RAG serving benchmark: every cache mode on one request stream");
    add_common_options(br, rag.common);
    br->add_option("--docs", rag.workload.num_docs, "documents in the pool")->check(CLI::Range(1, 1000000));
    br->add_option("--doc-tokens", rag.workload.doc_tokens, "tokens per document")->check(CLI::Range(1, 1000000));
    br->add_option("--k", rag.workload.docs_per_request, "documents per request")->check(CLI::Range(1, 1000));
    br->add_option("--zipf", rag.zipf, "Zipf exponent of document popularity (0 = uniform)")
        ->check(CLI::NonNegativeNumber);
    br->add_option("--tail-tokens", rag.workload.tail_tokens, "question tokens")->check(CLI::Range(1, 100000));
    br->add_option("--output-tokens", rag.workload.output_tokens, "tokens generated per request")
        ->check(CLI::Range(0, 100000));
    br->add_option("--requests", rag.workload.num_requests, "requests in the stream")->check(CLI::Range(1, 1000000));
    br->add_option("--clients", rag.clients, "concurrent clients (closed loop)")->check(CLI::Range(1, 4096));
    br->add_option("--seed", rag.workload.seed, "workload seed");
    br->add_option("--modes", rag.modes,
                   "cache modes, each optionally with document reuse settings: MODE[:REUSE], e.g. lazy:anchor "
                   "(see bench quality)");
    br->add_option("--preamble-tokens", rag.workload.preamble_tokens,
                   "a shared preamble (system prompt) of this many tokens before the documents")
        ->check(CLI::Range(0, 4096));
    br->add_option("--kv-cache-mb,--kv-budget-mib", rag.kv_cache_mb, "KV budget (the whole pool) per mode, in MiB")
        ->check(CLI::PositiveNumber);
    br->add_option("--kv-budget-docs", rag.kv_budget_docs,
                   "KV budget (the whole pool) in documents' worth, sized from the model's KV bytes per token "
                   "(replaces --kv-cache-mb)")
        ->check(CLI::PositiveNumber);
    br->add_option("--warmup-requests", rag.warmup_requests,
                   "the stream's first requests run (filling the cache) but are left out of the statistics")
        ->check(CLI::Range(0, 1000000));
    br->add_option("--max-batch-tokens", rag.max_batch_tokens, "rows per step")->check(CLI::PositiveNumber);
    br->add_option("--max-prefill-while-decoding", rag.max_prefill_while_decoding,
                   "prefill rows a step may carry while requests decode (0: up to --max-batch-tokens)")
        ->check(CLI::NonNegativeNumber);
    br->add_option("--data", rag.workload.passages_path, "QA file whose passages make up the documents");
    br->add_flag("!--no-floor", rag.floor, "skip the all-cached floor run");
    br->add_option("--budget-sweep-docs", rag.budget_sweep_docs,
                   "KV budgets in documents for the TTFT/throughput-vs-budget sweep")
        ->check(CLI::PositiveNumber);
    br->add_option("--skew-sweep", rag.skew_sweep, "Zipf exponents for the throughput-vs-skew sweep");
    br->add_option("--rates", rag.rates, "Poisson arrival rates (req/s) for the TTFT-vs-rate sweep");
    br->add_option("--capacity-docs", rag.capacity_docs, "pool capacities (in documents) for the capacity sweep");
    br->add_option("--sweep-requests", rag.sweep_requests, "requests per sweep point")->check(CLI::Range(1, 1000000));
    br->add_option("--sweep-warmup-requests", rag.sweep_warmup_requests,
                   "warm-up requests per sweep point (default: --warmup-requests)")
        ->check(CLI::Range(0, 1000000));
    br->add_option("--sweep-modes", rag.sweep_modes, "cache modes of the budget, skew and rate sweeps")
        ->check(cache_mode_check());
    br->add_option("--json", rag.json_path, "write all results to this JSON file");
    br->add_option("--export-workload", rag.export_workload_path, "write the request stream (token ids) as JSON");

    BenchStoreOptions store_bench;
    CLI::App* bst = add_bench_store_command(bench, store_bench);

    BenchQualityOptions quality;
    CLI::App* bq = bench->add_subcommand(
        "quality", "answer accuracy per cache mode and document reuse setting, with confidence intervals");
    add_common_options(bq, quality.common);
    bq->add_option("--data", quality.data_path, "QA JSONL file (its questions, and filler prose for the tasks)");
    bq->add_option("--variants", quality.variants,
                   "MODE[:REUSE], e.g. none lazy lazy:anchor lazy:anchor+bias=-1 (REUSE: anchor, scale=X, bias=X "
                   "joined by +)");
    bq->add_option("--questions", quality.num_questions, "synthetic questions (split over families x doc counts)")
        ->check(CLI::Range(1, 100000));
    bq->add_option("--seed", quality.seed, "seed of the synthetic questions");
    bq->add_option("--families", quality.families, "synthetic task families")
        ->check(CLI::IsMember({"kv", "hop", "agg"}));
    bq->add_option("--doc-counts", quality.doc_counts, "documents per synthetic question")->check(CLI::Range(2, 64));
    bq->add_option("--max-prompt-words", quality.max_prompt_words, "cap on a synthetic prompt's documents, in words")
        ->check(CLI::Range(100, 100000));
    bq->add_flag("!--no-wiki", quality.wiki, "leave out the 2Wiki sample's questions");
    bq->add_option("--concurrency", quality.concurrency, "requests in flight")->check(CLI::Range(1, 256));
    bq->add_flag("--fp32", quality.fp32, "dequantize all weights to fp32");
    bq->add_option("--json", quality.json_path, "write results (and every reply) to this JSON file");

    ServeOptions serve;
    CLI::App* sv = add_serve_command(app, serve);
    PrecomputeOptions precompute;
    CLI::App* pc = add_precompute_command(app, precompute);

    try {
        std::vector<std::string> args = normalize_arguments(argc, argv);
        args.erase(args.begin());                // CLI11 takes the arguments without the program name,
        std::reverse(args.begin(), args.end());  // in reverse order
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    if (g->parsed()) return configure_logging(gen.common), run_generate(gen);
    if (i->parsed()) return configure_logging(info), run_info(info, info_chat_template);
    if (tk->parsed()) return configure_logging(tokenize.common), run_tokenize(tokenize);
    if (sv->parsed()) return configure_logging(serve.common), run_serve(serve);
    if (pc->parsed()) return configure_logging(precompute.common), run_precompute(precompute);
    if (bs->parsed()) return configure_logging(speed.common), run_bench_speed(speed);
    if (br->parsed()) return configure_logging(rag.common), run_bench_rag(rag);
    if (bst->parsed()) return configure_logging(store_bench.common), run_bench_store(store_bench);
    if (bq->parsed()) return configure_logging(quality.common), run_bench_quality(quality);
    if (d->parsed()) return configure_logging(demo.common), run_rag_demo(demo);
    return 2;
}
