// Byte-level BPE training over a built-in sample. Pre-tokenization follows the spirit of GPT-2's
// split (a word is an optional leading space plus a run of letters, of digits, or of other
// symbols; whitespace runs stand alone), so every merge stays inside what a GPT-2-style
// pre-tokenizer produces and the learned merges are usable by the real tokenizer.
#include "synthetic/synthetic_vocab.h"

#include <map>
#include <set>
#include <utility>

#include "core/byte_unicode.h"

namespace lazyattn::synthetic {

namespace {

bool is_printable_in_gpt2(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
}

enum class CharClass { kLetter, kDigit, kSpace, kOtherSpace, kSymbol };

CharClass classify(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return CharClass::kLetter;
    if (c >= '0' && c <= '9') return CharClass::kDigit;
    if (c == ' ') return CharClass::kSpace;
    if (c == '\n' || c == '\t' || c == '\r') return CharClass::kOtherSpace;
    return CharClass::kSymbol;
}

// Splits text into pre-tokenizer words: " word", "word", " 42", ",", "\n\n", ...
std::vector<std::string> split_words(const std::string& text) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < text.size()) {
        size_t j = i;
        CharClass c = classify(static_cast<unsigned char>(text[j]));
        const bool lead_space = c == CharClass::kSpace && j + 1 < text.size() &&
                                classify(static_cast<unsigned char>(text[j + 1])) != CharClass::kSpace &&
                                classify(static_cast<unsigned char>(text[j + 1])) != CharClass::kOtherSpace;
        if (lead_space) c = classify(static_cast<unsigned char>(text[++j]));
        const bool spacey = c == CharClass::kSpace || c == CharClass::kOtherSpace;
        while (j < text.size()) {
            const CharClass d = classify(static_cast<unsigned char>(text[j]));
            const bool same = spacey ? (d == CharClass::kSpace || d == CharClass::kOtherSpace) : d == c;
            if (!same) break;
            ++j;
        }
        words.push_back(text.substr(i, j - i));
        i = j;
    }
    return words;
}

using Word = std::vector<std::string>;  // a word as its current symbols

std::map<Word, int> count_words(const std::string& text) {
    std::map<Word, int> counts;
    for (const std::string& w : split_words(text)) {
        Word symbols;
        for (unsigned char b : w) symbols.push_back(gpt2_byte_symbol(b));
        ++counts[symbols];
    }
    return counts;
}

// Most frequent adjacent pair (ties: smallest pair); count 0 when no word has two symbols.
std::pair<std::pair<std::string, std::string>, int> best_pair(const std::map<Word, int>& words) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [word, n] : words) {
        for (size_t k = 0; k + 1 < word.size(); ++k) pairs[{word[k], word[k + 1]}] += n;
    }
    std::pair<std::pair<std::string, std::string>, int> best{{}, 0};
    for (const auto& [pair, n] : pairs) {
        if (n > best.second) best = {pair, n};
    }
    return best;
}

std::map<Word, int> apply_merge(const std::map<Word, int>& words, const std::string& a, const std::string& b) {
    std::map<Word, int> out;
    for (const auto& [word, n] : words) {
        Word merged;
        for (size_t k = 0; k < word.size(); ++k) {
            if (k + 1 < word.size() && word[k] == a && word[k + 1] == b) {
                merged.push_back(a + b);
                ++k;
            } else {
                merged.push_back(word[k]);
            }
        }
        out[merged] += n;
    }
    return out;
}

}  // namespace

std::string gpt2_byte_symbol(uint8_t b) { return text::byte_to_unicode(b); }

std::vector<uint8_t> gpt2_byte_order() {
    std::vector<uint8_t> order;
    for (int b = 0; b < 256; ++b) {
        if (is_printable_in_gpt2(b)) order.push_back(static_cast<uint8_t>(b));
    }
    for (int b = 0; b < 256; ++b) {
        if (!is_printable_in_gpt2(b)) order.push_back(static_cast<uint8_t>(b));
    }
    return order;
}

SyntheticVocab build_synthetic_vocab(int max_merges) {
    SyntheticVocab v;
    std::set<std::string> known;
    for (uint8_t b : gpt2_byte_order()) {
        v.tokens.push_back(gpt2_byte_symbol(b));
        known.insert(v.tokens.back());
    }
    std::map<Word, int> words = count_words(synthetic_vocab_sample_text());
    for (int m = 0; m < max_merges; ++m) {
        const auto [pair, n] = best_pair(words);
        if (n < 2) break;
        v.merges.push_back(pair.first + " " + pair.second);
        // Two different merges can spell the same token ("a"+"bc", "ab"+"c"): one id serves both.
        if (known.insert(pair.first + pair.second).second) v.tokens.push_back(pair.first + pair.second);
        words = apply_merge(words, pair.first, pair.second);
    }
    v.token_types.assign(v.tokens.size(), 1);
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        v.tokens.push_back(special);
        v.token_types.push_back(3);
    }
    const auto n = static_cast<int32_t>(v.tokens.size());
    v.endoftext_id = n - 3;
    v.im_start_id = n - 2;
    v.im_end_id = n - 1;
    return v;
}

const std::string& synthetic_vocab_sample_text() {
    static const std::string kText =
        "The river runs past the old mill at the edge of the town. In the morning the water is "
        "cold and clear, and the light comes through the trees in long thin lines. People walk "
        "along the path beside the river to get to the market, where they sell bread, cheese, "
        "apples and fresh fish. The market opens at seven and closes at noon.\n\n"
        "A small model learns to predict the next word from the words that came before it. It "
        "reads a sentence one token at a time, and for each position it computes a score for "
        "every token in its vocabulary. The token with the highest score is often the right one, "
        "but not always. When the model is wrong, the training process changes its weights a "
        "little, so that the next time it sees a similar sentence it will do better.\n\n"
        "User: What is the capital of France?\n"
        "Assistant: The capital of France is Paris. It is known for the Eiffel Tower, the Louvre "
        "museum and the river Seine, which runs through the center of the city.\n\n"
        "User: Can you write a short poem about the sea?\n"
        "Assistant: The sea is wide, the sea is deep, it sings the sailors off to sleep. The "
        "waves come in, the waves go out, and that is what the sea is about.\n\n"
        "In 1969, three astronauts flew to the moon. Two of them walked on its surface while the "
        "third stayed in orbit. They collected 21 kilograms of rock and returned to Earth eight "
        "days after they had left. Millions of people watched the landing on television.\n\n"
        "To make a cup of tea, boil the water first. Put the tea in the pot, pour the hot water "
        "over it and wait for three to five minutes. Then pour the tea into a cup. Some people "
        "add milk or sugar; others prefer it plain. The important thing is not to let it stand "
        "for too long, or it will become bitter.\n\n"
        "The cache stores the keys and values of every document, so that when the same document "
        "appears again the model does not need to compute them a second time. This saves time "
        "and energy, and it makes the answer arrive sooner. The position of each token matters, "
        "because the attention layer uses it to decide how the tokens relate to each other.\n\n"
        "She opened the door and looked outside. The garden was quiet; the birds had stopped "
        "singing and the wind had gone still. \"Is anyone there?\" she asked. Nobody answered. "
        "She closed the door again, went back to the kitchen, and started to make dinner for "
        "the children, who would be home from school at four.\n\n"
        "Numbers such as 3, 14, 159 and 2653 appear in many texts. A computer stores them as "
        "bits, and a program can add, subtract, multiply or divide them very quickly. The "
        "answer to 12 times 12 is 144, and the answer to 100 divided by 4 is 25.\n\n"
        "User: How do plants make their food?\n"
        "Assistant: Plants make their food through a process called photosynthesis. They take in "
        "water through their roots and carbon dioxide through their leaves, and they use the "
        "energy of sunlight to turn them into sugar and oxygen. The sugar feeds the plant, and "
        "the oxygen is released into the air, where animals and people breathe it.\n\n"
        "The library in the centre of the village has thousands of books. Children come after "
        "school to read stories about dragons, pirates and distant planets, while their parents "
        "look for books about history, cooking and travel. The librarian knows every shelf and "
        "can usually find the book you want in less than a minute.\n\n"
        "Engineers who build a fast inference server think carefully about memory. Every request "
        "needs space for its keys and values, and the server must decide which requests to run "
        "together in each step. When memory runs out, some requests wait while others finish. "
        "Good scheduling keeps the hardware busy and the waiting time short for everyone.\n";
    return kText;
}

}  // namespace lazyattn::synthetic
