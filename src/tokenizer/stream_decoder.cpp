// StreamDecoder: emits every complete UTF-8 character as soon as its last byte arrives. Bytes
// that can never become valid (a stray continuation byte, an overlong lead) are emitted at once as
// U+FFFD rather than held, so one bad token cannot stall the stream.
#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {

using namespace text;  // core/utf8.h, core/byte_unicode.h

std::string StreamDecoder::push(TokenId id) {
    const bool shown = shown_ != nullptr && std::binary_search(shown_->begin(), shown_->end(), id);
    pending_ += tok_.token_to_piece(id, render_special_ || shown);
    const size_t held = utf8_incomplete_tail(pending_);
    std::string out = sanitize_utf8(std::string_view(pending_).substr(0, pending_.size() - held));
    pending_.erase(0, pending_.size() - held);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = sanitize_utf8(pending_);
    pending_.clear();
    return out;
}

}  // namespace lazyattn::tokenizer
