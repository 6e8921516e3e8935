// A chat request's tools laid into its conversation for the served template (called by
// ServingFront::prepare, once the template is known):
// - the family is the template's (tool_format.h);
// - a template that reads `tools` gets them as its `tools` variable, and assistant tool calls and
//   tool results as the OpenAI message fields (it renders them its own way);
// - a template that renders no tools (SmolLM2's own, the ChatML and most built-in formats) gets
//   the definitions and the family's call format in the system message (appended to the
//   request's, or a new first message), earlier calls written into the assistant's content in
//   the family's markup, and tool results as user messages in <tool_response> tags;
// - tool_choice none: the tools are neither rendered nor parsed (earlier calls and results in
//   the conversation are still rendered);
// - a forced choice (required, a named function) sets the request's constraint
//   (tool_constraint.h); with another constraint (response_format ...) it is a 400.
#pragma once

#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::server::tool_calls {

std::optional<ApiError> prepare_chat_tools(GenerationRequest& gen, const tokenizer::ChatTemplate& chat);

// The system message text that offers the tools to a template that renders none.
std::string tool_instructions(const ToolRequest& request);

}  // namespace lazyattn::server::tool_calls
