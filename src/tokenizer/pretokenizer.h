// PreTokenizer: splits text into the words BPE runs on, by the rules of a GGUF pre-tokenizer type
// (tokenizer.ggml.pre). Each type is a sequence of regular expressions applied as llama.cpp's
// unicode_regex_split does: every expression splits every piece left by the previous one, and the
// text between matches is kept as pieces too, so nothing is ever dropped. Matching is done on one
// piece at a time, so look-aheads and '$' see the end of the piece, not of the text.
//
// The expressions are llama.cpp's, compiled with PCRE2 in UTF + UCP mode. "\s" is rewritten to
// llama.cpp's whitespace set (Unicode White_Space: \t-\r, U+0085 and the Z categories), which
// PCRE2's own \s lacks U+0085 from. Text is first decoded leniently exactly as llama.cpp does
// (invalid bytes become U+FFFD), so splits agree on malformed input as well.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace lazyattn::tokenizer {

enum class PreTokenizerKind {
    kDefault,        // "default" or absent: punctuation runs, GPT-2 rules, digit runs, 3-digit groups
    kGpt2,           // "gpt-2", "gpt2", "phi-2", "mpt", "olmo", ...
    kLlama3,         // "llama3", "llama-bpe", "dbrx", "smaug-bpe", ...: numbers in groups of 1-3
    kQwen2,          // "qwen2", "stablelm2", "deepseek-r1-qwen", "megrez": single digits
    kQwen35,         // "qwen35": as qwen2, with combining marks kept in letter runs
    kStarcoder,      // "starcoder", "smollm", "refact", "command-r", ...: single digits, then GPT-2
    kFalcon,         // "falcon"
    kDeepseekCoder,  // "deepseek-coder"
    kGemma4,         // "gemma4": only newline runs are split off (SentencePiece-style BPE)
};

// What a tokenizer.ggml.pre name implies, as llama.cpp's vocabulary loader sets it.
struct PreTokenizerInfo {
    PreTokenizerKind kind = PreTokenizerKind::kDefault;
    bool ignore_merges = false;  // a word that is itself a token is not split by BPE
    bool add_bos = false;        // default for tokenizer.ggml.add_bos_token when it is absent
    // SentencePiece-style BPE (Gemma 4): symbols are raw UTF-8 with spaces spelled U+2581, bytes
    // without a token fall back to "<0xXX>" tokens, and BOS is added whatever the metadata says.
    bool spm_style = false;
};

// kUnsupported naming the type when it is not one lazyattn implements.
Expected<PreTokenizerInfo> lookup_pre_tokenizer(std::string_view pre_type);

class PreTokenizer {
public:
    static Expected<PreTokenizer> create(PreTokenizerKind kind);
    static Expected<PreTokenizer> create(std::string_view pre_type);

    // The pieces of `text` in order; their concatenation is `text` after lenient UTF-8 decoding
    // (equal to `text` when it is valid UTF-8). Pieces are never empty. Thread-safe.
    std::vector<std::string> split(std::string_view text) const;

    PreTokenizerKind kind() const { return kind_; }

private:
    class Regex;  // one compiled PCRE2 expression (defined in pretokenizer.cpp)

    PreTokenizerKind kind_ = PreTokenizerKind::kDefault;
    std::vector<std::shared_ptr<const Regex>> stages_;
};

// Rewrites an expression in llama.cpp's dialect for PCRE2: "\s" and "\S" become explicit classes of
// llama.cpp's whitespace set, "\p{L}", "\p{N}", "\p{P}" and "\p{M}" gain the code points Unicode 15.1 added
// (llama.cpp's tables are 15.1, PCRE2 10.42's are 14.0), and an unescaped '$' outside a class
// becomes "\z" (ECMAScript's '$' without multiline). Exposed for tests.
std::string pcre2_pattern_from_llama(std::string_view pattern);

}  // namespace lazyattn::tokenizer
