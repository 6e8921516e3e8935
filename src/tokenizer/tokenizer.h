// Tokenizer: built from a GGUF vocabulary by its tokenizer model: byte-level BPE ("gpt2") with the
// pre-tokenizer split rules of the common pre-tokenizer types, SentencePiece BPE ("llama") and
// SentencePiece-style BPE with a merge table ("gemma4"); special/control tokens and the BOS/EOS
// rules from metadata. Semantics follow llama.cpp's llama_tokenize/llama_token_to_piece so token
// ids match it exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::tokenizer {

using TokenId = int32_t;

struct VocabData;

// GGUF tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    kUndefined = 0,
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // kUnsupported naming the tokenizer model unless it is "gpt2", "llama" or "gemma4", or naming
    // the pre-tokenizer type when that is not implemented; kCorrupt for inconsistent tables.
    static Expected<std::unique_ptr<Tokenizer>> from_gguf(const loader::GgufFile& file);
    // The same from metadata already read (tests build vocabularies by hand).
    static Expected<std::unique_ptr<Tokenizer>> from_vocab(const VocabData& data);

    // add_special: add BOS (and EOS) as the metadata says (tokenizer.ggml.add_bos_token, ...).
    // parse_special: text spelling a special/control token ("<|im_start|>") becomes that token;
    // otherwise it is tokenized as plain text.
    virtual std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const = 0;
    // The bytes of one token (may be an incomplete UTF-8 sequence). Control tokens give "" unless
    // render_special.
    virtual std::string token_to_piece(TokenId id, bool render_special) const = 0;
    std::string decode(const std::vector<TokenId>& ids, bool render_special = false) const;

    virtual int32_t vocab_size() const = 0;
    virtual TokenId bos_id() const = 0;  // -1 if none
    virtual TokenId eos_id() const = 0;  // -1 if none
    virtual bool add_bos() const = 0;
    // End of generation: EOS, EOT, <|im_end|>, <|eot_id|> and the like.
    virtual bool is_end_of_generation(TokenId id) const = 0;
    virtual std::optional<TokenId> find_token(std::string_view text) const = 0;
    virtual std::string pre_type() const = 0;    // tokenizer.ggml.pre, as applied
    virtual std::string model_type() const = 0;  // tokenizer.ggml.model: "gpt2", "llama", "gemma4"
};

// Turns a stream of token ids into text, holding back the bytes of a UTF-8 character split
// across tokens until it is complete (so streamed output never contains broken characters).
class StreamDecoder {
public:
    // `shown`: control tokens whose text is emitted although render_special is off (sorted ids; a
    // tool family's markers, which the tool-call parser reads); null: none.
    explicit StreamDecoder(const Tokenizer& tok, bool render_special = false,
                           std::shared_ptr<const std::vector<TokenId>> shown = nullptr)
        : tok_(tok), render_special_(render_special), shown_(std::move(shown)) {}
    std::string push(TokenId id);  // the complete text this token finished, possibly ""
    std::string flush();           // whatever is held back (invalid bytes as U+FFFD)

private:
    const Tokenizer& tok_;
    bool render_special_;
    std::shared_ptr<const std::vector<TokenId>> shown_;
    std::string pending_;
};

}  // namespace lazyattn::tokenizer
