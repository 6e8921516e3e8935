#include "tokenizer/bpe_tokenizer.h"

#include <cstdio>
#include <cstdlib>

#include "core/byte_unicode.h"
#include "core/utf8.h"
#include "tokenizer/special_partition.h"

namespace lazyattn::tokenizer {

using namespace text;  // core/utf8.h, core/byte_unicode.h
namespace {

// Bounds on the word cache: natural text repeats few thousand words; long words (base64, runs of
// one character) are rare and not worth keeping.
constexpr size_t kMaxCachedWords = 1 << 16;
constexpr size_t kMaxCachedWordBytes = 128;

// A normal token's text back to bytes through the byte alphabet. A code point outside the alphabet
// is written as llama.cpp's llama_decode_text writes it.
std::string decode_byte_text(const std::string& text) {
    std::string out;
    for (const char32_t cp : decode_utf8_lenient(text)) {
        const int byte = unicode_to_byte(cp);
        if (byte >= 0) {
            out.push_back(static_cast<char>(byte));
            continue;
        }
        out += "[UNK_BYTE_0x";
        for (const char c : encode_utf8(cp)) {
            char hex[3];
            std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
            out += hex;
        }
        out += text + "]";
    }
    return out;
}

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0;;) {
        const size_t hit = text.find(from, pos);
        out.append(text.substr(pos, hit - pos));
        if (hit == std::string_view::npos) return out;
        out.append(to);
        pos = hit + from.size();
    }
}

// "<0xAB>" -> "\xAB" for tokens of type byte.
std::string byte_token_piece(const std::string& text) {
    if (text.size() < 5) return {};
    const std::string hex = text.substr(3, 2);
    return std::string(1, static_cast<char>(std::strtol(hex.c_str(), nullptr, 16)));
}

}  // namespace

Expected<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(const VocabData& data, std::string_view pre_type) {
    const std::string_view pre_name = pre_type.empty() ? std::string_view(data.pre) : pre_type;
    LA_ASSIGN_OR_RETURN(const PreTokenizerInfo info, lookup_pre_tokenizer(pre_name));
    LA_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(info.kind));
    if (data.merges.empty()) return corrupt("BPE vocabulary has no tokenizer.ggml.merges");
    LA_ASSIGN_OR_RETURN(Vocab vocab, Vocab::build(data, info.add_bos, /*force_add_bos=*/info.spm_style));
    std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer(std::move(vocab), std::move(pre), BpeMerges::build(data.merges),
                                                       info, pre_name.empty() ? "default" : std::string(pre_name),
                                                       data.model));
    return tok;
}

BpeTokenizer::BpeTokenizer(Vocab vocab, PreTokenizer pre, BpeMerges merges, const PreTokenizerInfo& info,
                           std::string pre_type, std::string model_type)
    : vocab_(std::move(vocab)),
      pre_(std::move(pre)),
      merges_(std::move(merges)),
      ignore_merges_(info.ignore_merges),
      spm_style_(info.spm_style),
      pre_type_(std::move(pre_type)),
      model_type_(std::move(model_type)) {
    pieces_.reserve(vocab_.size());
    for (TokenId id = 0; id < vocab_.size(); ++id) pieces_.push_back(compute_piece(id));
}

std::string BpeTokenizer::compute_piece(TokenId id) const {
    const uint32_t attr = vocab_.attr(id);
    const std::string& text = vocab_.text(id);
    if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
    if (attr & kAttrNormal) return spm_style_ ? replace_all(text, kSpaceMark, " ") : decode_byte_text(text);
    if (attr & kAttrByte) return byte_token_piece(text);
    return {};  // unused and undefined tokens render as nothing, as in llama.cpp
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<TokenId> out;
    const TokenId bos = vocab_.special().bos;
    const TokenId eos = vocab_.special().eos;
    if (add_special && vocab_.add_bos() && bos >= 0) out.push_back(bos);
    for (const TextFragment& f : partition_special_tokens(text, vocab_, parse_special)) {
        if (f.is_token()) {
            out.push_back(f.token);
        } else {
            encode_text(text.substr(f.offset, f.length), out);
        }
    }
    if (add_special && vocab_.add_eos() && eos >= 0) out.push_back(eos);
    return out;
}

void BpeTokenizer::encode_text(std::string_view text, std::vector<TokenId>& out) const {
    if (spm_style_) {
        for (const std::string& piece : pre_.split(replace_all(text, " ", kSpaceMark))) encode_word(piece, out);
        return;
    }
    for (const std::string& piece : pre_.split(text)) encode_word(bytes_to_unicode(piece), out);
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<TokenId>& out) const {
    // Gemma 4's newline runs are tokens that no merge chain builds (llama.cpp PR 21343).
    const bool whole_newline_run = spm_style_ && word.find_first_not_of('\n') == std::string::npos;
    if (ignore_merges_ || whole_newline_run) {
        if (const auto id = vocab_.find(word)) {
            out.push_back(*id);
            return;
        }
    }
    const bool cacheable = word.size() <= kMaxCachedWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        const auto it = cache_.find(word);
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<TokenId> ids = merge_word(word);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kMaxCachedWords) cache_.clear();
        cache_.emplace(word, std::move(ids));
    }
}

std::vector<TokenId> BpeTokenizer::merge_word(const std::string& word) const {
    std::vector<TokenId> ids;
    for (const std::string_view symbol : merges_.merge(word)) {
        if (const auto id = vocab_.find(symbol)) {
            ids.push_back(*id);
            continue;
        }
        // llama.cpp looks each byte of the symbol up as a byte token (in a byte-level vocabulary
        // only ASCII symbols can match); bytes without one are dropped.
        for (const char c : symbol) {
            if (const auto id = byte_token(static_cast<uint8_t>(c))) ids.push_back(*id);
        }
    }
    return ids;
}

std::optional<TokenId> BpeTokenizer::byte_token(uint8_t byte) const {
    if (!spm_style_) return vocab_.find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
    char text[7];
    std::snprintf(text, sizeof(text), "<0x%02X>", static_cast<unsigned>(byte));
    return vocab_.find(text);
}

std::string BpeTokenizer::token_to_piece(TokenId id, bool render_special) const {
    if (!vocab_.contains(id)) return {};
    if (!render_special && (vocab_.attr(id) & (kAttrUnknown | kAttrControl))) return {};
    return pieces_[id];
}

std::optional<TokenId> BpeTokenizer::find_token(std::string_view text) const { return vocab_.find(text); }

}  // namespace lazyattn::tokenizer
