// Tokenizer factory and the model-independent parts of the interface.
#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyattn::tokenizer {

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const loader::GgufFile& file) {
    LA_ASSIGN_OR_RETURN(const VocabData data, read_vocab_data(file));
    return from_vocab(data);
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(const VocabData& data) {
    if (data.model == "gpt2") {
        LA_ASSIGN_OR_RETURN(auto tok, BpeTokenizer::create(data));
        return std::unique_ptr<Tokenizer>(std::move(tok));
    }
    if (data.model == "llama") {
        LA_ASSIGN_OR_RETURN(auto tok, SpmTokenizer::create(data));
        return std::unique_ptr<Tokenizer>(std::move(tok));
    }
    if (data.model == "gemma4") {  // llama.cpp ignores tokenizer.ggml.pre for this model
        LA_ASSIGN_OR_RETURN(auto tok, BpeTokenizer::create(data, "gemma4"));
        return std::unique_ptr<Tokenizer>(std::move(tok));
    }
    std::string what = "tokenizer model '" + data.model + "'";
    if (data.model == "bert") what += " (WordPiece)";
    if (data.model == "t5") what += " (Unigram)";
    return unsupported(what + " is not supported; 'gpt2' (byte-level BPE), 'llama' (SentencePiece) and 'gemma4' are");
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
    std::string out;
    for (const TokenId id : ids) out += token_to_piece(id, render_special);
    return out;
}

}  // namespace lazyattn::tokenizer
