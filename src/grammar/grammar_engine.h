// The seam between ConstraintCompiler (bounds, cache, time limit) and the grammar engine proper:
// xgrammar_engine.cpp with XGrammar, no_grammar_engine.cpp in a build without it.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "grammar/constraint.h"

namespace lazyattn::tokenizer {
class Tokenizer;
}

namespace lazyattn::grammar {

class GrammarEngine {
public:
    virtual ~GrammarEngine() = default;
    // Compiles one spec (already within the size and nesting bounds); kInvalidArgument with the
    // engine's reason. Thread-safe.
    virtual Expected<std::shared_ptr<const CompiledConstraint>> compile(const ConstraintSpec& spec) = 0;
};

// The vocabulary read from `tokenizer` (every token's bytes, the tokens that end generation) and
// a compiler over it; null when this build has no grammar engine.
std::shared_ptr<GrammarEngine> make_grammar_engine(const tokenizer::Tokenizer& tokenizer);

// The EBNF text the engine compiles for `spec` (its schema or regex converted, open-ended
// repetitions counted first: counted_repetition.h); not for structural tags. kInvalidArgument
// where the converter refuses the spec, kUnsupported in a build without the engine.
Expected<std::string> engine_ebnf(const ConstraintSpec& spec);

}  // namespace lazyattn::grammar
