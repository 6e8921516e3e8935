// `lazyattn tokenize`: the token ids (and pieces) of a text under a model's tokenizer, read from
// the GGUF without loading weights, exactly as the server's /tokenize and completions tokenize.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::cli {

int run_tokenize(const TokenizeOptions& o) {
    auto file = open_model_gguf(o.common.model_path);
    if (!file.ok()) {
        std::cerr << "error: " << file.status().to_string() << "\n";
        return 1;
    }
    auto tok = tokenizer::Tokenizer::from_gguf(**file);
    if (!tok.ok()) {
        std::cerr << "error: " << tok.status().to_string() << "\n";
        return 1;
    }
    const std::vector<int32_t> ids = (*tok)->encode(o.text, o.add_special, o.parse_special);
    if (o.json) {
        nlohmann::json pieces = nlohmann::json::array();
        for (int32_t id : ids) pieces.push_back({{"id", id}, {"piece", (*tok)->token_to_piece(id, true)}});
        std::cout << nlohmann::json{{"tokens", ids}, {"count", ids.size()}, {"pieces", pieces}}.dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
        return 0;
    }
    for (int32_t id : ids) {
        std::cout << id;
        if (o.pieces)
            std::cout << "\t"
                      << nlohmann::json((*tok)->token_to_piece(id, true))
                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        std::cout << "\n";
    }
    return 0;
}

namespace {

CLI::App* add_tokenize_command(CLI::App& parent, TokenizeOptions& o) {
    CLI::App* tk = parent.add_subcommand("tokenize", "print the token ids of a text (as the server's /tokenize)");
    add_common_options(tk, o.common, false);
    tk->add_option("text,--prompt", o.text, "the text to tokenize")->required();
    tk->add_flag("--add-special", o.add_special, "add BOS/EOS as the model's metadata asks");
    tk->add_flag("--parse-special", o.parse_special, "special-token text becomes the special token");
    tk->add_flag("--pieces", o.pieces, "print each token's text beside its id");
    tk->add_flag("--json", o.json, "one JSON object: tokens, count, pieces");
    return tk;
}

}  // namespace

std::unique_ptr<Command> tokenize_command() {
    return make_command<TokenizeOptions>(add_tokenize_command, run_tokenize);
}

}  // namespace lazyattn::cli
