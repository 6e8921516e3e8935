#include "cli/vocab_description.h"

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::cli {
namespace {

std::string vocabulary_kind(const std::string& model) {
    if (model == "gpt2") return "byte-level BPE";
    if (model == "llama") return "SentencePiece BPE";
    if (model == "gemma4") return "SentencePiece-style BPE with merges";
    return "unknown kind";
}

}  // namespace

std::string describe_vocabulary(const loader::GgufFile& file) {
    auto model = file.get_string("tokenizer.ggml.model");
    auto pre = file.get_string("tokenizer.ggml.pre");
    auto tok = tokenizer::Tokenizer::from_gguf(file);
    if (!tok.ok()) {
        return "tokenizer: '" + (model.ok() ? *model : std::string("?")) + "', pre-tokenizer '" +
               (pre.ok() ? *pre : std::string("default")) + "': refused: " + tok.status().message();
    }
    const tokenizer::Tokenizer& t = **tok;
    std::string line = "tokenizer: " + vocabulary_kind(t.model_type()) + " ('" + t.model_type() + "'), ";
    line += t.model_type() == "llama" ? "no pre-tokenizer" : "pre-tokenizer '" + t.pre_type() + "'";
    line += ", " + std::to_string(t.vocab_size()) + " tokens";
    line += t.add_bos() ? ", adds BOS " + std::to_string(t.bos_id()) : ", no BOS added";
    return line;
}

}  // namespace lazyattn::cli
