// The grammar engine: XGrammar's C++ core (docs/design.md "Structured output"), built from its
// PyPI source distribution by scripts/build_xgrammar.sh.
#include <dlpack/dlpack.h>

#include <xgrammar/xgrammar.h>
#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "backend/cpu/elementwise_cpu.h"
#include "grammar/constraint_compiler.h"
#include "grammar/grammar_engine.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::grammar {

bool engine_available() { return true; }

namespace {

// Every token's bytes as the tokenizer decodes them (byte-level BPE's and SentencePiece's
// spellings already undone, byte-fallback tokens as their byte), so XGrammar reads them RAW
// whichever family the model's tokenizer is. Control tokens decode to "" (XGrammar then treats
// them as special: never allowed, except those that end generation).
xgrammar::TokenizerInfo tokenizer_info(const tokenizer::Tokenizer& tok) {
    const int32_t n = tok.vocab_size();
    std::vector<std::string> vocab(static_cast<size_t>(n));
    std::vector<int32_t> stops;
    for (int32_t id = 0; id < n; ++id) {
        vocab[size_t(id)] = tok.token_to_piece(id, false);
        if (tok.is_end_of_generation(id)) stops.push_back(id);
    }
    if (stops.empty() && tok.eos_id() >= 0) stops.push_back(tok.eos_id());
    return xgrammar::TokenizerInfo(vocab, xgrammar::VocabType::RAW, n, stops, false);
}

// XGrammar's messages start with where in its sources the check failed; the reason follows.
std::string reason(const std::exception& e) {
    std::string m = e.what();
    const size_t colon = m.find(": ");
    if (m.rfind('[', 0) == 0 && colon != std::string::npos) m = m.substr(colon + 2);
    if (m.size() > 1000) m = m.substr(0, 1000) + "...";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
}

// A choice as a GBNF string literal: quotes, backslashes and control bytes escaped.
std::string gbnf_literal(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20 || c == 0x7f) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

// A structural tag with each json_schema part as the compact grammar the json_schema kind
// compiles (", " and ": " separators, no free whitespace): XGrammar's structural tags convert
// schemas with free whitespace, which a small model can wander into until max_tokens.
std::string compact_structural_tag(const std::string& text) {
    nlohmann::json tag = nlohmann::json::parse(text);
    std::function<void(nlohmann::json&)> walk = [&](nlohmann::json& j) {
        if (j.is_array()) {
            for (auto& v : j) walk(v);
            return;
        }
        if (!j.is_object()) return;
        if (j.contains("type") && j.at("type") == "json_schema" && j.contains("json_schema")) {
            const std::string ebnf =
                xgrammar::Grammar::FromJSONSchema(j.at("json_schema").dump(), false, std::nullopt, std::nullopt, true)
                    .ToString();
            j = {{"type", "grammar"}, {"grammar", ebnf}};
            return;
        }
        for (auto& [key, value] : j.items()) walk(value);
    };
    walk(tag);
    return tag.dump();
}

class XgrammarMatcher final : public ConstraintMatcher {
public:
    explicit XgrammarMatcher(const xgrammar::CompiledGrammar& compiled)
        : matcher_(compiled),
          vocab_size_(compiled.GetTokenizerInfo().GetVocabSize()),
          stops_(compiled.GetTokenizerInfo().GetStopTokenIds()),
          bits_(size_t(xgrammar::GetBitmaskSize(vocab_size_)), 0) {
        shape_ = int64_t(bits_.size());
        tensor_.data = bits_.data();
        tensor_.device = DLDevice{kDLCPU, 0};
        tensor_.ndim = 1;
        tensor_.dtype = xgrammar::GetBitmaskDLType();
        tensor_.shape = &shape_;
        tensor_.strides = nullptr;
        tensor_.byte_offset = 0;
    }

    void prepare() override {
        if (prepared_) return;
        // Terminated: only the stop tokens (mask_logits keeps them), nothing to fill.
        restricted_ = !matcher_.IsTerminated() && matcher_.FillNextTokenBitmask(&tensor_);
        prepared_ = true;
    }

    void mask_logits(std::span<float> logits) override {
        constexpr float kNegInf = -std::numeric_limits<float>::infinity();
        prepare();
        const size_t n = std::min(logits.size(), size_t(vocab_size_));
        for (size_t i = n; i < logits.size(); ++i) logits[i] = kNegInf;  // rows past the vocabulary
        if (matcher_.IsTerminated()) {
            std::vector<float> kept(stops_.size());
            for (size_t k = 0; k < stops_.size(); ++k) kept[k] = size_t(stops_[k]) < n ? logits[stops_[k]] : kNegInf;
            std::fill(logits.begin(), logits.begin() + n, kNegInf);
            for (size_t k = 0; k < stops_.size(); ++k) {
                if (size_t(stops_[k]) < n) logits[stops_[k]] = kept[k];
            }
            return;
        }
        if (!restricted_) return;  // everything allowed
        // The rule every backend applies (kernels::ref::apply_token_bitmask; CUDA's in sampling.h).
        backend::cpu::apply_token_bitmask(logits.data(), int32_t(n), bits_.data(), int32_t(bits_.size()));
    }

    bool accept(int32_t token) override {
        if (matcher_.IsTerminated()) return std::find(stops_.begin(), stops_.end(), token) != stops_.end();
        const bool ok = matcher_.AcceptToken(token);
        if (ok) prepared_ = false;  // a new state: its mask is computed again
        return ok;
    }

    bool terminated() const override { return matcher_.IsTerminated(); }
    int32_t stop_token() const override { return stops_.empty() ? -1 : stops_.front(); }

private:
    xgrammar::GrammarMatcher matcher_;
    int32_t vocab_size_;
    std::vector<int32_t> stops_;
    std::vector<int32_t> bits_;
    int64_t shape_ = 0;
    DLTensor tensor_{};
    bool prepared_ = false;    // bits_ hold the current state's mask
    bool restricted_ = false;  // ... and it excludes some token
};

class XgrammarCompiled final : public CompiledConstraint {
public:
    explicit XgrammarCompiled(xgrammar::CompiledGrammar compiled) : compiled_(std::move(compiled)) {}
    std::unique_ptr<ConstraintMatcher> new_matcher() const override {
        return std::make_unique<XgrammarMatcher>(compiled_);
    }
    size_t memory_bytes() const override { return compiled_.MemorySizeBytes(); }

private:
    xgrammar::CompiledGrammar compiled_;
};

class XgrammarEngine final : public GrammarEngine {
public:
    explicit XgrammarEngine(const tokenizer::Tokenizer& tok)
        // Two threads for the per-token work of one compile (this machine's cores); no cache of
        // its own: ConstraintCompiler keeps one, bounded in count and bytes.
        : compiler_(tokenizer_info(tok), 2, false) {}

    Expected<std::shared_ptr<const CompiledConstraint>> compile(const ConstraintSpec& spec) override {
        try {
            return std::shared_ptr<const CompiledConstraint>(std::make_shared<XgrammarCompiled>(compile_grammar(spec)));
        } catch (const std::exception& e) {
            return invalid_argument(reason(e));
        }
    }

private:
    xgrammar::CompiledGrammar compile_grammar(const ConstraintSpec& spec) {
        // Compact separators, no free whitespace: a small model cannot wander into endless
        // blank space, and every output has one layout.
        switch (spec.kind) {
            case ConstraintKind::kJsonObject:
                return compiler_.CompileJSONSchema(R"({"type": "object"})", false, std::nullopt, std::nullopt, false);
            case ConstraintKind::kJsonSchema:
                return compiler_.CompileJSONSchema(spec.text, false, std::nullopt, std::nullopt, spec.strict);
            case ConstraintKind::kGrammar:
                return compiler_.CompileGrammar(spec.text, "root");
            case ConstraintKind::kRegex:
                return compiler_.CompileRegex(spec.text);
            case ConstraintKind::kStructuralTag:
                return compiler_.CompileStructuralTag(compact_structural_tag(spec.text));
            case ConstraintKind::kChoice: {
                std::string g = "root ::= ";
                for (size_t i = 0; i < spec.choices.size(); ++i) {
                    if (i > 0) g += " | ";
                    g += gbnf_literal(spec.choices[i]);
                }
                return compiler_.CompileGrammar(g, "root");
            }
        }
        throw std::invalid_argument("unknown constraint kind");
    }

    xgrammar::GrammarCompiler compiler_;
};

}  // namespace

std::shared_ptr<GrammarEngine> make_grammar_engine(const tokenizer::Tokenizer& tokenizer) {
    return std::make_shared<XgrammarEngine>(tokenizer);
}

}  // namespace lazyattn::grammar
