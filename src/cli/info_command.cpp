// `lazyattn info`: the model description read from the GGUF metadata, where the chat template
// comes from, and the file's tensor-type mix with how the CPU backend computes each type on this
// host.
#include <cstdio>
#include <iostream>
#include <map>

#include "backend/cpu/typed_matmul.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "cli/vocab_description.h"
#include "engine/engine_config.h"
#include "engine/loading/block_finetune.h"
#include "kernels/params/kv_dtype.h"
#include "loader/gguf_file.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::cli {

namespace {

// One line per tensor type: count, bytes, and how it runs (or that loading refuses it).
void print_type_mix(const loader::GgufFile& file) {
    struct Mix {
        int count = 0;
        uint64_t bytes = 0;
    };
    std::map<uint32_t, Mix> mix;
    for (const loader::GgufTensorInfo& t : file.tensors()) {
        Mix& m = mix[static_cast<uint32_t>(t.type)];
        ++m.count;
        m.bytes += t.num_bytes;
    }
    std::cout << "tensor types:\n";
    for (const auto& [type, m] : mix) {
        const auto t = static_cast<loader::GgmlType>(type);
        const std::string how = model::weight_type_in_place(t)
                                    ? backend::cpu::describe_weight_compute(static_cast<kernels::GgmlType>(type))
                                    : "refused at load (no kernel for this type)";
        char line[96];
        std::snprintf(line, sizeof line, "  %-7s %5d %-7s %10.1f MiB  ", loader::ggml_type_name(t), m.count,
                      m.count == 1 ? "tensor" : "tensors", double(m.bytes) / (1 << 20));
        std::cout << line << how << "\n";
    }
}

// Where the chat template comes from: the model file, an override, or nowhere; and whether the Jinja
// engine accepts it (a template it refuses would be refused at load by serve and generate too).
void print_chat_template(const loader::GgufFile& file, const std::string& choice) {
    auto chat = tokenizer::select_chat_template(choice, file);
    std::cout << "chat template: ";
    if (!chat.ok()) {
        std::cout << "refused: " << chat.status().message() << "\n";
    } else if (!*chat) {
        std::cout << "none (the model file has no tokenizer.chat_template; chat requests need --chat-template)\n";
    } else {
        std::cout << (*chat)->origin
                  << ((*chat)->kind == tokenizer::ChatTemplateKind::kJinja ? ", rendered by the Jinja engine" : "")
                  << "\n";
    }
}

// Whether the model was block fine-tuned (scripts/finetune/), for which layout, and so which
// document_reuse `serve` gives requests that do not say.
void print_block_finetuned(const loader::GgufFile& file) {
    auto layout = engine::block_finetuned_layout(file);
    std::cout << "block fine-tuned: ";
    if (!layout.ok()) {
        std::cout << "unreadable: " << layout.status().message() << "\n";
    } else if (!*layout) {
        std::cout << "no (" << engine::kBlockFinetunedKey << " absent; serve's default document_reuse: plain)\n";
    } else {
        std::cout << **layout << " (" << engine::kBlockFinetunedKey
                  << "; serve's default document_reuse: " << (**layout == "anchored" ? "anchor" : "plain") << ")\n";
    }
}

// What one cached token costs in each KV type (K and V of every layer, scales included) and how
// many tokens a pool of the server's default size holds: the arithmetic --kv-dtype trades on.
void print_kv_sizes(const model::ModelConfig& config) {
    const int32_t pool_mib = engine::EngineConfig{}.kv_cache_mb;
    std::cout << "KV per token (--kv-dtype; tokens in a " << pool_mib << " MiB pool):\n";
    for (const kernels::KvDtype t : {kernels::KvDtype::kF32, kernels::KvDtype::kF16, kernels::KvDtype::kBF16,
                                     kernels::KvDtype::kQ8_0, kernels::KvDtype::kQ4_0}) {
        const kv::KvShape shape = engine::kv_shape_for(config, engine::EngineConfig{}.block_size,
                                                       int64_t(pool_mib) << 20, kernels::same_kv_types(t));
        char line[128];
        if (config.head_dim % kernels::kv_dtype_group(t) != 0) {
            std::snprintf(line, sizeof line, "  %-5s refused: head_dim %d is not a multiple of %lld\n",
                          kernels::kv_dtype_name(t), config.head_dim, (long long)kernels::kv_dtype_group(t));
        } else {
            const double per_token = double(shape.bytes_per_block()) / shape.block_size;
            std::snprintf(line, sizeof line, "  %-5s %8.1f KiB  %9lld tokens\n", kernels::kv_dtype_name(t),
                          per_token / 1024.0, (long long)shape.num_blocks * shape.block_size);
        }
        std::cout << line;
    }
}

}  // namespace

int run_info(const CommonOptions& o, const std::string& chat_template) {
    const std::string path = o.model_path.empty() ? default_model_path() : o.model_path;
    auto file = open_model_gguf(path);
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
              << "\ntensors: " << (*file)->tensors().size() << "\n"
              << config->describe();
    std::cout << describe_vocabulary(**file) << "\n";
    print_chat_template(**file, chat_template);
    print_block_finetuned(**file);
    print_type_mix(**file);
    print_kv_sizes(*config);
    return 0;
}

namespace {

CLI::App* add_info_command(CLI::App& parent, InfoOptions& o) {
    CLI::App* i = parent.add_subcommand("info", "print the model description");
    add_common_options(i, o.common, false);
    i->add_option("--chat-template", o.chat_template,
                  "describe this chat template instead of the model file's: chatml | llama3 | a .jinja file");
    return i;
}

int run_info_options(const InfoOptions& o) { return run_info(o.common, o.chat_template); }

}  // namespace

std::unique_ptr<Command> info_command() { return make_command<InfoOptions>(add_info_command, run_info_options); }

}  // namespace lazyattn::cli
