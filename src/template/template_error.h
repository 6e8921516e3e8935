// The one error an interpreter step raises: thrown inside the template module only (lexer, parser,
// evaluator) and turned into a Status with the template line at the module's edge (template.cpp).
#pragma once

#include <stdexcept>
#include <string>

namespace lazyattn::tmpl {

class TemplateError : public std::runtime_error {
public:
    explicit TemplateError(const std::string& message, int line = 0) : std::runtime_error(message), line_(line) {}
    int line() const { return line_; }
    void set_line_if_unknown(int line) {
        if (line_ == 0) line_ = line;
    }

private:
    int line_;
};

// A limit the template ran into (loop iterations, output size, recursion): hostile or runaway input.
class TemplateLimitError : public TemplateError {
public:
    using TemplateError::TemplateError;
};

}  // namespace lazyattn::tmpl
