#include "server/responses_request.h"

#include <cctype>

#include "core/utf8.h"
#include "server/request_fields.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::type_error;
using fields::unsupported;
using fields::value_error;

Err missing(const std::string& param) {
    return invalid_request("'" + param + "' is required", param, "missing_required_parameter");
}

// A text field, moved into `out` once it is known to be a UTF-8 string.
Err take_text(json& v, const std::string& param, json& out) {
    if (!v.is_string()) return type_error(param, "a string");
    if (!text::is_valid_utf8(v.get_ref<const std::string&>())) {
        return invalid_request("'" + param + "' is not valid UTF-8", param, "invalid_utf8");
    }
    out = std::move(v);
    return std::nullopt;
}

// The chat fields a Responses body carries as they are: the sampling settings both APIs share,
// lazyattn's extensions, and llama-server's and vLLM's constrained-output spellings.
constexpr const char* kChatFields[] = {
    "model", "temperature", "top_p", "stream", "documents", "cache_salt", "document_reuse", "documents_from",
    "document_delimiter", "stop", "seed", "top_k", "min_p", "repetition_penalty", "presence_penalty",
    "frequency_penalty", "logit_bias", "ignore_eos", "grammar", "json_schema", "guided_json", "guided_regex",
    "guided_choice", "guided_grammar", "guided_decoding_backend", "structured_outputs", "response_format",
    // llama-server's telemetry (llama_telemetry.h)
    "timings_per_token", "return_progress"};

// Chat Completions names a client may send here by mistake: each is refused with this API's name
// for it rather than ignored (an ignored max_tokens would run to the end of the context).
Err refuse_chat_names(const json& body) {
    for (const char* key : {"max_tokens", "max_completion_tokens", "n_predict"}) {
        if (!absent(body, key)) return unsupported(key, "not a Responses field; use 'max_output_tokens'");
    }
    if (!absent(body, "messages")) return unsupported("messages", "not a Responses field; send them as 'input'");
    if (!absent(body, "response_format")) {
        return unsupported("response_format", "not a Responses field; use 'text.format'");
    }
    if (!absent(body, "n") && body.at("n") != 1) return unsupported("n", "a response has one output");
    if (!absent(body, "logprobs") && body.at("logprobs") != false) {
        return unsupported("logprobs", "logprobs are not served on /v1/responses yet; use /v1/chat/completions");
    }
    return std::nullopt;
}

// One content part: input_text (output_text and refusal in an assistant turn a client sends
// back) becomes a chat text part; an input_text may name a registered document by "id" instead
// of carrying text (documents_from "parts", as in chat).
Err take_part(json& part, const std::string& p, json& parts) {
    if (!part.is_object()) return type_error(p, "an object (a content part)");
    if (absent(part, "type")) return missing(p + ".type");
    if (!part.at("type").is_string()) return type_error(p + ".type", "a string");
    const std::string type = part.at("type").get<std::string>();
    if (type == "input_image") return unsupported(p, "images are not supported (lazyattn serves text-only models)");
    if (type == "input_file") {
        return unsupported(p, "files are not supported; send their text as input_text or as 'documents'");
    }
    if (type == "input_audio") return unsupported(p, "audio is not supported (lazyattn serves text-only models)");
    if (type != "input_text" && type != "output_text" && type != "refusal") {
        return value_error(p + ".type",
                           "must be input_text, output_text or refusal (got '" + clip_for_message(type) + "')");
    }
    const std::string key = type == "refusal" ? "refusal" : "text";
    json text_part = {{"type", "text"}};
    if (type == "input_text" && absent(part, "text") && part.contains("id")) {
        if (!part.at("id").is_string()) return type_error(p + ".id", "a string (a registered document's id)");
        text_part["id"] = std::move(part.at("id"));
    } else {
        if (absent(part, key.c_str())) return missing(p + "." + key);
        if (auto e = take_text(part.at(key), p + "." + key, text_part["text"])) return e;
    }
    parts.push_back(std::move(text_part));
    return std::nullopt;
}

Err take_content(json& content, const std::string& p, json& out) {
    if (content.is_string()) return take_text(content, p, out);
    if (!content.is_array()) return type_error(p, "a string or a list of content parts");
    out = json::array();
    for (size_t j = 0; j < content.size(); ++j) {
        if (auto e = take_part(content[j], p + "[" + std::to_string(j) + "]", out)) return e;
    }
    return std::nullopt;
}

// A function_call item {call_id, name, arguments} -> a tool call of an assistant message (the
// previous message when it is an assistant's holding calls, so parallel calls stay one turn); a
// function_call_output item {call_id, output} -> a tool message.
Err take_function_item(json& item, const std::string& p, const std::string& type, json& messages) {
    if (absent(item, "call_id")) return missing(p + ".call_id");
    if (!item.at("call_id").is_string()) return type_error(p + ".call_id", "a string");
    if (type == "function_call_output") {
        if (absent(item, "output")) return missing(p + ".output");
        json text;
        if (auto e = take_text(item.at("output"), p + ".output", text)) return e;
        messages.push_back({{"role", "tool"}, {"tool_call_id", item.at("call_id")}, {"content", std::move(text)}});
        return std::nullopt;
    }
    if (absent(item, "name")) return missing(p + ".name");
    if (!item.at("name").is_string()) return type_error(p + ".name", "a string");
    if (!absent(item, "arguments") && !item.at("arguments").is_string())
        return type_error(p + ".arguments", "a string");
    json call = {
        {"id", item.at("call_id")},
        {"type", "function"},
        {"function",
         {{"name", item.at("name")}, {"arguments", absent(item, "arguments") ? json("{}") : item.at("arguments")}}}};
    if (!messages.empty() && messages.back().at("role") == "assistant" && messages.back().contains("tool_calls")) {
        messages.back()["tool_calls"].push_back(std::move(call));
    } else {
        messages.push_back(
            {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({std::move(call)})}});
    }
    return std::nullopt;
}

// Item types other than messages and function calls: each refused naming the item, saying what
// would be needed.
Err refuse_item_type(const std::string& type, const std::string& p) {
    const bool tool = type == "custom_tool_call" || type == "custom_tool_call_output" ||
                      (type.size() > 5 && type.compare(type.size() - 5, 5, "_call") == 0) ||
                      (type.size() > 12 && type.compare(type.size() - 12, 12, "_call_output") == 0);
    if (tool) {
        return unsupported(p, "a " + clip_for_message(type) +
                                  " item: only function tools are served (function_call, "
                                  "function_call_output)");
    }
    if (type == "reasoning") return unsupported(p, "reasoning items are not supported (this server returns none)");
    if (type == "item_reference") {
        return unsupported(p, "items are not kept by id; send the items themselves, not references");
    }
    return value_error(p + ".type", "must be message (got '" + clip_for_message(type) + "')");
}

// One input item -> one chat message {"role", "content"}.
Err take_item(json& item, size_t i, json& messages) {
    const std::string p = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return type_error(p, "an object (a message item)");
    if (!absent(item, "type")) {
        if (!item.at("type").is_string()) return type_error(p + ".type", "a string");
        const std::string type = item.at("type").get<std::string>();
        if (type == "function_call" || type == "function_call_output")
            return take_function_item(item, p, type, messages);
        if (type != "message") return refuse_item_type(type, p);
    }
    if (absent(item, "role")) return missing(p + ".role");
    if (!item.at("role").is_string()) return type_error(p + ".role", "a string");
    const std::string role = item.at("role").get<std::string>();
    if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
        return value_error(p + ".role",
                           "must be user, assistant, system or developer (got '" + clip_for_message(role) + "')");
    }
    if (!item.contains("content")) return missing(p + ".content");
    json message = {{"role", role}};
    if (auto e = take_content(item.at("content"), p + ".content", message["content"])) return e;
    messages.push_back(std::move(message));
    return std::nullopt;
}

// The turns of the response previous_response_id names, as chat messages.
Err take_previous(const json& body, const PreviousResponseLookup& previous, ResponsesRequest& out, json& messages) {
    if (absent(body, "previous_response_id")) return std::nullopt;
    const json& id = body.at("previous_response_id");
    if (!id.is_string()) return type_error("previous_response_id", "a string");
    out.echo.previous_response_id = id.get<std::string>();
    auto turns = previous ? previous(id.get<std::string>()) : std::nullopt;
    if (!turns) {
        return invalid_request("the response '" + clip_for_message(id.get<std::string>()) +
                                   "' is not kept here (store: false, deleted, evicted, or another API key's); "
                                   "send the conversation as input",
                               "previous_response_id", "previous_response_not_found");
    }
    for (tokenizer::ChatMessage& m : *turns) {
        // Function calls and their outputs stay in the conversation, as chat messages carry them
        // (an assistant's tool_calls, a tool message's tool_call_id): the agent loop continues.
        json message = {{"role", std::move(m.role)}, {"content", std::move(m.content)}};
        if (!m.tool_calls.empty()) {
            json calls = json::array();
            for (tokenizer::ChatToolCall& c : m.tool_calls) {
                calls.push_back({{"id", std::move(c.id)},
                                 {"type", "function"},
                                 {"function", {{"name", std::move(c.name)}, {"arguments", std::move(c.arguments)}}}});
            }
            message["tool_calls"] = std::move(calls);
        }
        if (!m.tool_call_id.empty()) message["tool_call_id"] = std::move(m.tool_call_id);
        if (!m.name.empty() && message["role"] == "tool") message["name"] = std::move(m.name);
        messages.push_back(std::move(message));
    }
    return std::nullopt;
}

// `instructions` (a system message first), the previous response's turns and `input` -> chat
// messages.
Err take_messages(json& body, ResponsesRequest& out, const PreviousResponseLookup& previous, json& messages) {
    messages = json::array();
    if (!absent(body, "instructions")) {
        json text;
        if (auto e = take_text(body.at("instructions"), "instructions", text)) return e;
        out.echo.instructions = text.get<std::string>();
        if (!out.echo.instructions->empty()) {
            messages.push_back({{"role", "system"}, {"content", std::move(text)}});
            out.instruction_messages = 1;
        }
    }
    if (auto e = take_previous(body, previous, out, messages)) return e;
    if (absent(body, "input")) return missing("input");
    json& input = body.at("input");
    if (input.is_string()) {
        json text;
        if (auto e = take_text(input, "input", text)) return e;
        messages.push_back({{"role", "user"}, {"content", std::move(text)}});
        return std::nullopt;
    }
    if (!input.is_array()) return type_error("input", "a string or a list of input items");
    if (input.empty()) return value_error("input", "must not be empty");
    for (size_t i = 0; i < input.size(); ++i) {
        if (auto e = take_item(input[i], i, messages)) return e;
    }
    if (messages.back().at("role") != "user" && messages.back().at("role") != "tool") {
        return value_error(
            "input", "must end with a user message or a function_call_output (an assistant turn is not continued)");
    }
    return std::nullopt;
}

Err check_bool(const json& body, const char* key) {
    if (!absent(body, key) && !body.at(key).is_boolean()) return type_error(key, "a boolean");
    return std::nullopt;
}

Err check_string(const json& body, const char* key) {
    if (!absent(body, key) && !body.at(key).is_string()) return type_error(key, "a string");
    return std::nullopt;
}

// `user` is echoed in the response: a name, not a payload.
constexpr size_t kMaxUserBytes = 256;

size_t utf8_chars(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

Err read_metadata(const json& body, ResponsesEcho& echo) {
    if (absent(body, "metadata")) return std::nullopt;
    const json& m = body.at("metadata");
    if (!m.is_object()) return type_error("metadata", "an object of strings");
    if (m.size() > kMaxMetadataPairs) {
        return value_error("metadata", "may hold at most " + std::to_string(kMaxMetadataPairs) + " pairs");
    }
    for (const auto& [key, value] : m.items()) {
        if (!text::is_valid_utf8(key) || utf8_chars(key) > kMaxMetadataKeyChars) {
            return value_error("metadata",
                               "keys must be UTF-8 of at most " + std::to_string(kMaxMetadataKeyChars) + " characters");
        }
        const std::string param = "metadata." + clip_for_message(key);
        if (!value.is_string()) return type_error(param, "a string");
        const std::string& v = value.get_ref<const std::string&>();
        if (!text::is_valid_utf8(v))
            return invalid_request("'" + param + "' is not valid UTF-8", param, "invalid_utf8");
        if (utf8_chars(v) > kMaxMetadataValueChars) {
            return value_error(param, "must be at most " + std::to_string(kMaxMetadataValueChars) + " characters");
        }
    }
    echo.metadata = m;
    return std::nullopt;
}

// text: {format, verbosity}. format json_object and json_schema ({name, schema, strict,
// description}, flat as Responses writes it) become chat's response_format, constrained as chat
// constrains it; the format is echoed in the response.
Err take_text_format(const json& body, ResponsesEcho& echo, json& chat) {
    if (absent(body, "text")) return std::nullopt;
    const json& t = body.at("text");
    if (!t.is_object()) return type_error("text", "an object");
    if (!absent(t, "verbosity")) {
        if (!t.at("verbosity").is_string()) return type_error("text.verbosity", "a string");
        if (t.at("verbosity") != "medium") {
            return unsupported("text.verbosity", "only \"medium\" (the model's own length) is served");
        }
    }
    if (absent(t, "format")) return std::nullopt;
    const json& f = t.at("format");
    if (!f.is_object() || !f.contains("type") || !f.at("type").is_string()) {
        return type_error("text.format", "an object with a string 'type'");
    }
    const std::string type = f.at("type").get<std::string>();
    if (type == "json_object") {
        chat["response_format"] = {{"type", "json_object"}};
    } else if (type == "json_schema") {
        json schema = json::object();
        for (const char* key : {"name", "schema", "strict", "description"}) {
            if (f.contains(key)) schema[key] = f.at(key);
        }
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
    } else if (type != "text") {
        return value_error("text.format.type",
                           "must be text, json_object or json_schema (got '" + clip_for_message(type) + "')");
    }
    echo.text_format = f;
    return std::nullopt;
}

// Responses' function tools ({"type": "function", "name", "description", "parameters", "strict"})
// and tool_choice ("auto" | "none" | "required" | {"type": "function", "name"}) in chat's
// spelling, which server/tool_calls/ reads; other tool types (web search, file search, MCP ...)
// are refused.
Err take_tools(json& body, json& chat) {
    if (!absent(body, "tools")) {
        json& tools = body.at("tools");
        if (!tools.is_array()) return type_error("tools", "a list of function tools");
        json list = json::array();
        for (size_t i = 0; i < tools.size(); ++i) {
            const std::string p = "tools[" + std::to_string(i) + "]";
            json& t = tools[i];
            if (!t.is_object()) return type_error(p, "an object {\"type\": \"function\", \"name\", \"parameters\"}");
            if (!t.contains("type") || t.at("type") != "function") {
                return unsupported(p + ".type", "only function tools are served");
            }
            json f = json::object();
            for (const char* key : {"name", "description", "parameters", "strict"}) {
                if (t.contains(key)) f[key] = std::move(t.at(key));
            }
            list.push_back({{"type", "function"}, {"function", std::move(f)}});
        }
        chat["tools"] = std::move(list);
    }
    if (!absent(body, "tool_choice")) {
        json& c = body.at("tool_choice");
        if (c.is_object() && c.contains("type") && c.at("type") == "function" && c.contains("name")) {
            chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", std::move(c.at("name"))}}}};
        } else {
            chat["tool_choice"] = std::move(c);
        }
    }
    if (!absent(body, "parallel_tool_calls")) chat["parallel_tool_calls"] = body.at("parallel_tool_calls");
    return std::nullopt;
}

// reasoning: accepted only where it asks for nothing.
Err check_tools_and_reasoning(const json& body) {
    if (auto e = check_bool(body, "parallel_tool_calls")) return e;
    if (absent(body, "reasoning")) return std::nullopt;
    const json& r = body.at("reasoning");
    if (!r.is_object()) return type_error("reasoning", "an object");
    if (!absent(r, "effort"))
        return unsupported("reasoning.effort", "reasoning effort is not a setting of this server");
    for (const char* key : {"summary", "generate_summary"}) {
        if (!absent(r, key)) {
            return unsupported(std::string("reasoning.") + key, "reasoning summaries are not produced by this server");
        }
    }
    return std::nullopt;
}

// What needs a stored response or conversation, or output this server does not produce.
Err check_state_and_extras(const json& body, ResponsesEcho& echo) {
    if (!absent(body, "conversation")) {
        return unsupported("conversation",
                           "conversations are not kept; send previous_response_id or the turns as input");
    }
    if (!absent(body, "prompt")) {
        return unsupported("prompt", "stored prompt templates are not served; send the text as instructions and input");
    }
    if (auto e = check_bool(body, "background")) return e;
    if (!absent(body, "background") && body.at("background") == true) {
        return unsupported("background", "background responses are not served; stream instead");
    }
    if (auto e = check_bool(body, "store")) return e;
    if (!absent(body, "store")) echo.store = body.at("store").get<bool>();
    if (!absent(body, "truncation")) {
        if (body.at("truncation") != "disabled" && body.at("truncation") != "auto") {
            return value_error("truncation", "must be \"disabled\" or \"auto\"");
        }
        echo.truncation = body.at("truncation").get<std::string>();
    }
    if (!absent(body, "top_logprobs")) {
        if (!body.at("top_logprobs").is_number_integer()) return type_error("top_logprobs", "an integer");
        if (body.at("top_logprobs") != 0) {
            return unsupported("top_logprobs",
                               "logprobs are not served on /v1/responses yet; use /v1/chat/completions");
        }
    }
    if (!absent(body, "include")) {
        const json& inc = body.at("include");
        if (!inc.is_array() || inc.size() > 64) return type_error("include", "a list of at most 64 strings");
        for (const json& s : inc) {
            if (!s.is_string()) return type_error("include", "a list of at most 64 strings");
            if (s == "message.output_text.logprobs") {
                return unsupported("include", "logprobs are not served on /v1/responses yet; use /v1/chat/completions");
            }
        }
    }
    if (!absent(body, "max_tool_calls") && !body.at("max_tool_calls").is_number_integer()) {
        return type_error("max_tool_calls", "an integer");
    }
    if (!absent(body, "stream_options")) {
        const json& so = body.at("stream_options");
        if (!so.is_object()) return type_error("stream_options", "an object");
        if (!absent(so, "include_obfuscation") && !so.at("include_obfuscation").is_boolean()) {
            return type_error("stream_options.include_obfuscation", "a boolean");
        }
    }
    for (const char* key :
         {"user", "safety_identifier", "prompt_cache_key", "service_tier", "prompt_cache_retention"}) {
        if (auto e = check_string(body, key)) return e;
    }
    if (!absent(body, "user")) {
        if (!text::is_valid_utf8(body.at("user").get_ref<const std::string&>())) {
            return invalid_request("'user' is not valid UTF-8", "user", "invalid_utf8");
        }
        if (body.at("user").get_ref<const std::string&>().size() > kMaxUserBytes) {
            return value_error("user", "must be at most " + std::to_string(kMaxUserBytes) + " bytes");
        }
        echo.user = body.at("user").get<std::string>();
    }
    return read_metadata(body, echo);
}

// A whole word in `text` (not part of a longer name) replaced by `to`.
void replace_word(std::string& text, const std::string& from, const std::string& to) {
    auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
        const size_t end = at + from.size();
        if ((at > 0 && name_char(text[at - 1])) || (end < text.size() && name_char(text[end]))) {
            at = end;
            continue;
        }
        text.replace(at, from.size(), to);
        at += to.size();
    }
}

}  // namespace

ApiError responses_field_names(ApiError e) {
    if (e.param == "max_tokens") e.param = "max_output_tokens";
    if (e.param.rfind("messages", 0) == 0) e.param = "input";
    if (e.param.rfind("response_format", 0) == 0) e.param = "text.format";
    // tools[i].function.name -> tools[i].name; tool_choice.function.name -> tool_choice.name.
    if (e.param.rfind("tool", 0) == 0) {
        const size_t at = e.param.find(".function.");
        if (at != std::string::npos) {
            const std::string from = e.param.substr(0, at + 10), to = e.param.substr(0, at + 1);
            e.param = to + e.param.substr(at + 10);
            for (size_t m = e.message.find(from); m != std::string::npos; m = e.message.find(from, m + to.size())) {
                e.message.replace(m, from.size(), to);
            }
        }
    }
    replace_word(e.message, "response_format", "text.format");
    replace_word(e.message, "max_tokens", "max_output_tokens");
    replace_word(e.message, "messages", "input");
    return e;
}

std::optional<ApiError> parse_responses_request(json& body, ResponsesRequest& out,
                                                const PreviousResponseLookup& previous) {
    if (!body.is_object()) return invalid_request("the request body must be a JSON object", "", "invalid_type");
    if (auto e = refuse_chat_names(body)) return e;
    if (auto e = check_tools_and_reasoning(body)) return e;
    if (auto e = check_state_and_extras(body, out.echo)) return e;
    json chat = json::object();
    if (auto e = take_text_format(body, out.echo, chat)) return e;
    if (auto e = take_messages(body, out, previous, chat["messages"])) return e;
    if (auto e = take_tools(body, chat)) return e;
    for (const char* key : kChatFields) {
        if (body.contains(key)) chat[key] = std::move(body.at(key));
    }
    if (body.contains("max_output_tokens")) chat["max_tokens"] = body.at("max_output_tokens");
    if (auto e = parse_generation_request(chat, true, out.gen)) return responses_field_names(std::move(*e));
    if (out.gen.max_tokens >= 0) out.echo.max_output_tokens = out.gen.max_tokens;
    if (!absent(chat, "temperature")) out.echo.temperature = chat.at("temperature").get<double>();
    if (!absent(chat, "top_p")) out.echo.top_p = chat.at("top_p").get<double>();
    return std::nullopt;
}

}  // namespace lazyattn::server
