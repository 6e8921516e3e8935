// lazyattn's Jinja engine: the subset of Jinja that model chat templates use, rendered as Python's
// jinja2 renders it under Hugging Face's settings (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loop controls, raise_exception, strftime_now, transformers' tojson), so a GGUF's
// own tokenizer.chat_template gives the prompt the model was trained on, byte for byte.
//
// A template is untrusted input: parsing and rendering never crash; errors (syntax, undefined
// values used, raise_exception, a limit reached) come back as a Status naming the template line.
// A parsed Template is immutable and may be rendered from several threads at once.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "template/interpreter.h"
#include "template/value.h"

namespace lazyattn::tmpl {

class Template {
public:
    // kInvalidArgument "template line N: ..." for a syntax error, an unknown tag, filter or test.
    static Expected<Template> parse(std::string_view source);

    // Renders with `context` (a dict: messages, add_generation_prompt, bos_token, ...).
    // kInvalidArgument for an error the template raises or runs into (with its line), kOutOfRange
    // when it reaches one of `limits`. strftime_now() formats `now` in UTC.
    Expected<std::string> render(const Value& context, const RenderLimits& limits = {},
                                 std::time_t now = std::time(nullptr)) const;

private:
    std::shared_ptr<const Body> body_;
};

}  // namespace lazyattn::tmpl
