// The grammar engine: XGrammar's C++ core (docs/design.md "Structured output"), built from its
// PyPI source distribution by scripts/build_xgrammar.sh.
#include <dlpack/dlpack.h>

#include <xgrammar/converters/json_schema_converter.h>
#include <xgrammar/converters/regex_converter.h>
#include <xgrammar/xgrammar.h>
#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "backend/cpu/elementwise_cpu.h"
#include "grammar/constraint_compiler.h"
#include "grammar/counted_repetition.h"
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

// A JSON schema as the EBNF the json_schema kind compiles: XGrammar's converter with ", " and ": "
// separators and no free whitespace (a small model cannot wander into endless blank space, and
// every output has one layout), its open-ended repetitions counted first (counted_repetition.h).
std::string schema_ebnf(const std::string& schema, bool strict) {
    return with_counted_repetitions_first(
        xgrammar::JSONSchemaToEBNF(schema, false, std::nullopt, std::nullopt, strict, std::nullopt));
}

// A structural tag with each json_schema part as the compact grammar the json_schema kind
// compiles (schema_ebnf): XGrammar's structural tags convert schemas with free whitespace, which
// a small model can wander into until max_tokens.
std::string compact_structural_tag(const std::string& text) {
    nlohmann::json tag = nlohmann::json::parse(text);
    std::function<void(nlohmann::json&)> walk = [&](nlohmann::json& j) {
        if (j.is_array()) {
            for (auto& v : j) walk(v);
            return;
        }
        if (!j.is_object()) return;
        if (j.contains("type") && j.at("type") == "json_schema" && j.contains("json_schema")) {
            j = {{"type", "grammar"}, {"grammar", schema_ebnf(j.at("json_schema").dump(), true)}};
            return;
        }
        for (auto& [key, value] : j.items()) walk(value);
    };
    walk(tag);
    return tag.dump();
}

// The EBNF text XGrammar compiles for every kind but the structural tag (whose parts
// schema_ebnf writes), its open-ended repetitions counted first (counted_repetition.h).
std::string ebnf_text(const ConstraintSpec& spec) {
    switch (spec.kind) {
        case ConstraintKind::kJsonObject:
            return schema_ebnf(R"({"type": "object"})", false);
        case ConstraintKind::kJsonSchema:
            return schema_ebnf(spec.text, spec.strict);
        case ConstraintKind::kGrammar:
            return with_counted_repetitions_first(spec.text);
        case ConstraintKind::kRegex:
            return with_counted_repetitions_first(xgrammar::RegexToEBNF(spec.text));
        case ConstraintKind::kChoice: {
            std::string g = "root ::= ";
            for (size_t i = 0; i < spec.choices.size(); ++i) {
                if (i > 0) g += " | ";
                g += gbnf_literal(spec.choices[i]);
            }
            return g;
        }
        case ConstraintKind::kStructuralTag:
            break;
    }
    throw std::invalid_argument(std::string("no EBNF text for a ") + constraint_kind_name(spec.kind));
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
        if (matcher_.IsTerminated()) {
            // Complete: the stop tokens alone.
            std::fill(bits_.begin(), bits_.end(), 0);
            for (const int32_t t : stops_) {
                if (t >= 0 && t < vocab_size_) bits_[size_t(t) / 32] |= int32_t(1u << (t % 32));
            }
        } else if (!matcher_.FillNextTokenBitmask(&tensor_)) {
            // Nothing excluded: every token of the vocabulary.
            std::fill(bits_.begin(), bits_.end(), int32_t(0xffffffffu));
        }
        // One mask for every state and every backend: bits past the vocabulary are clear.
        if (const int32_t tail = vocab_size_ % 32; tail != 0) bits_.back() &= int32_t((1u << tail) - 1u);
        prepared_ = true;
    }

    std::span<const int32_t> bitmask() const override { return bits_; }

    void mask_logits(std::span<float> logits) override {
        prepare();
        // The rule every backend applies (kernels::ref::apply_token_bitmask; CUDA's in sampling.h).
        backend::cpu::apply_token_bitmask(logits.data(), int32_t(logits.size()), bits_.data(), int32_t(bits_.size()));
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
    bool prepared_ = false;  // bits_ hold the current state's mask
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
        if (spec.kind == ConstraintKind::kStructuralTag) {
            return compiler_.CompileStructuralTag(compact_structural_tag(spec.text));
        }
        return compiler_.CompileGrammar(ebnf_text(spec), "root");
    }

    xgrammar::GrammarCompiler compiler_;
};

}  // namespace

std::shared_ptr<GrammarEngine> make_grammar_engine(const tokenizer::Tokenizer& tokenizer) {
    return std::make_shared<XgrammarEngine>(tokenizer);
}

Expected<std::string> engine_ebnf(const ConstraintSpec& spec) {
    try {
        return ebnf_text(spec);
    } catch (const std::exception& e) {
        return invalid_argument(reason(e));
    }
}

}  // namespace lazyattn::grammar
