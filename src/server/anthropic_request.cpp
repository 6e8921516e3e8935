#include "server/anthropic_request.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/utf8.h"
#include "server/constraint_request.h"
#include "server/request_fields.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using Err = std::optional<ApiError>;
using fields::absent;
using fields::read_string;
using fields::type_error;
using fields::unsupported;
using fields::value_error;

// Every top-level field either route reads. Anthropic refuses fields it does not define; so does
// this route, so that a feature a client relies on (a beta field, a constraint) is never quietly
// missing from the answer.
constexpr std::array<std::string_view, 31> kKnownFields = {
    "model", "max_tokens", "messages", "system", "stop_sequences", "stream", "metadata", "service_tier",
    "cache_control", "inference_geo", "speed", "diagnostics", "user_profile_id", "workspace_id", "tools", "tool_choice",
    "thinking", "mcp_servers", "container", "output_format", "output_config", "context_management",
    // Sampling: dropped from the current API (its SDK sends them through extra_body), still sent
    // by older clients and llama-server's; honoured.
    "temperature", "top_p", "top_k",
    // lazyattn's extensions, as chat completions reads them.
    "documents", "cache_salt", "document_reuse", "documents_from", "document_delimiter", "seed"};

Err refuse_unknown_fields(const json& body) {
    for (const auto& [key, value] : body.items()) {
        if (std::find(kKnownFields.begin(), kKnownFields.end(), key) != kKnownFields.end()) continue;
        return invalid_request("'" + clip_for_message(key) +
                                   "' is not a field of the Messages API (lazyattn refuses what it would "
                                   "otherwise ignore)",
                               clip_for_message(key), "unknown_field");
    }
    return std::nullopt;
}

// `cache_control`: accepted on any block and changes nothing (lazyattn caches every document and
// prompt prefix without being asked); only its shape is checked.
Err check_cache_control(const json& block, const std::string& p) {
    if (absent(block, "cache_control")) return std::nullopt;
    const json& c = block.at("cache_control");
    if (!c.is_object() || !c.contains("type") || !c.at("type").is_string())
        return type_error(p.empty() ? "cache_control" : p + ".cache_control", "an object {\"type\": \"ephemeral\"}");
    return std::nullopt;
}

// `citations` on a document: {"enabled": bool}, accepted; answers carry no citations.
Err check_citations(const json& block, const std::string& p) {
    if (absent(block, "citations")) return std::nullopt;
    const json& c = block.at("citations");
    if (!c.is_object() || (!absent(c, "enabled") && !c.at("enabled").is_boolean()))
        return type_error(p + ".citations", "an object {\"enabled\": boolean}");
    return std::nullopt;
}

std::string block_type(const json& b) {
    return b.contains("type") && b.at("type").is_string() ? b.at("type").get<std::string>() : std::string();
}

// A block no Messages request may carry here, by its type; nullopt for the served types.
Err refuse_block_type(const std::string& type, const std::string& p) {
    if (type == "image") return unsupported(p, "images are not served (lazyattn serves text models)");
    if (type == "tool_use" || type == "tool_result") return std::nullopt;  // client tools (server/tool_calls/)
    if (type == "server_tool_use" || type.ends_with("_tool_result") || type.starts_with("mcp_tool")) {
        return unsupported(p, "server tools and MCP are not served (blocks of type '" + clip_for_message(type) + "')");
    }
    if (type == "thinking" || type == "redacted_thinking")
        return unsupported(p, "extended thinking is not served (blocks of type '" + type + "')");
    if (type == "text" || type == "document") return std::nullopt;
    if (type.empty()) return type_error(p + ".type", "a string (text or document)");
    return unsupported(p, "content blocks of type '" + clip_for_message(type) + "' are not served (text, document)");
}

Err read_text_block(const json& b, const std::string& p, std::string& out) {
    if (!b.contains("text"))
        return invalid_request("'" + p + ".text' is required", p + ".text", "missing_required_parameter");
    if (auto e = check_cache_control(b, p)) return e;
    return read_string(b.at("text"), p + ".text", out);
}

// A document source's text: {"type": "text", "media_type": "text/plain", "data"} or
// {"type": "content", "content": a string or text blocks (joined by line breaks)}.
Err read_document_source(const json& b, const std::string& p, std::string& out) {
    const std::string sp = p + ".source";
    if (!b.contains("source")) return invalid_request("'" + sp + "' is required", sp, "missing_required_parameter");
    const json& s = b.at("source");
    if (!s.is_object()) return type_error(sp, "an object");
    const std::string type = block_type(s);
    if (type == "text") {
        if (!absent(s, "media_type") && s.at("media_type") != "text/plain")
            return value_error(sp + ".media_type", "must be text/plain");
        if (!s.contains("data"))
            return invalid_request("'" + sp + ".data' is required", sp + ".data", "missing_required_parameter");
        return read_string(s.at("data"), sp + ".data", out);
    }
    if (type == "content") {
        if (!s.contains("content"))
            return invalid_request("'" + sp + ".content' is required", sp + ".content", "missing_required_parameter");
        const json& c = s.at("content");
        if (c.is_string()) return read_string(c, sp + ".content", out);
        if (!c.is_array()) return type_error(sp + ".content", "a string or a list of text blocks");
        for (size_t i = 0; i < c.size(); ++i) {
            const std::string cp = sp + ".content[" + std::to_string(i) + "]";
            if (!c[i].is_object()) return type_error(cp, "a content block");
            const std::string t = block_type(c[i]);
            if (t != "text") {
                if (auto e = refuse_block_type(t, cp)) return e;
                return unsupported(cp, "a document's content holds text blocks only");
            }
            std::string piece;
            if (auto e = read_text_block(c[i], cp, piece)) return e;
            if (!piece.empty()) append_text_part(out, piece);
        }
        return std::nullopt;
    }
    if (type == "base64" || type == "url" || type == "file") {
        return unsupported(sp + ".type", "documents of source type '" + type +
                                             "' (PDF, URL, uploaded file) are not served: send their text "
                                             "(source type text or content)");
    }
    return value_error(sp + ".type", "must be text or content");
}

// A document block -> a cached document. Its `context` (text about the document) stays text of
// the message where the block was, so the document's cached segment is the same with or without it.
Err read_document_block(const json& b, const std::string& p, DocumentRef& doc, std::string& context) {
    if (auto e = read_document_source(b, p, doc.text)) return e;
    if (doc.text.empty()) return value_error(p + ".source", "must hold some text");
    if (!absent(b, "title")) {
        if (auto e = read_string(b.at("title"), p + ".title", doc.title)) return e;
    }
    if (!absent(b, "context")) {
        if (auto e = read_string(b.at("context"), p + ".context", context)) return e;
    }
    if (auto e = check_citations(b, p)) return e;
    return check_cache_control(b, p);
}

// An assistant's tool_use block {id, name, input} -> one of its tool calls.
Err read_tool_use(const json& b, const std::string& p, tokenizer::ChatMessage& msg) {
    tokenizer::ChatToolCall call;
    if (!absent(b, "id")) {
        if (auto e = read_string(b.at("id"), p + ".id", call.id)) return e;
    }
    if (!b.contains("name"))
        return invalid_request("'" + p + ".name' is required", p + ".name", "missing_required_parameter");
    if (auto e = read_string(b.at("name"), p + ".name", call.name)) return e;
    if (!tool_calls::valid_tool_name(call.name)) return value_error(p + ".name", "must match ^[a-zA-Z0-9_-]{1,64}$");
    if (!absent(b, "input") && !b.at("input").is_object()) return type_error(p + ".input", "an object");
    call.arguments = absent(b, "input") ? "{}" : b.at("input").dump();
    msg.tool_calls.push_back(std::move(call));
    return std::nullopt;
}

// A user's tool_result block {tool_use_id, content: a string or text blocks, is_error?} -> a tool
// message (the conversation's `tool` turn, rendered by the template).
Err read_tool_result(const json& b, const std::string& p, tokenizer::ChatMessage& out) {
    out.role = "tool";
    if (!b.contains("tool_use_id"))
        return invalid_request("'" + p + ".tool_use_id' is required", p + ".tool_use_id", "missing_required_parameter");
    if (auto e = read_string(b.at("tool_use_id"), p + ".tool_use_id", out.tool_call_id)) return e;
    if (!absent(b, "is_error") && !b.at("is_error").is_boolean()) return type_error(p + ".is_error", "a boolean");
    if (auto e = check_cache_control(b, p)) return e;
    if (absent(b, "content")) return std::nullopt;
    const json& c = b.at("content");
    if (c.is_string()) return read_string(c, p + ".content", out.content);
    if (!c.is_array()) return type_error(p + ".content", "a string or a list of text blocks");
    for (size_t i = 0; i < c.size(); ++i) {
        const std::string cp = p + ".content[" + std::to_string(i) + "]";
        if (!c[i].is_object() || block_type(c[i]) != "text") {
            return unsupported(cp, "a tool result holds text blocks only (send passages as document blocks)");
        }
        std::string piece;
        if (auto e = read_text_block(c[i], cp, piece)) return e;
        if (!piece.empty()) append_text_part(out.content, piece);
    }
    return std::nullopt;
}

// One message's content: a string, or blocks. Text blocks become the message's text (and its
// parts, which documents_from "parts" reads as in chat); document blocks become documents;
// tool_use blocks the assistant's tool calls; tool_result blocks tool messages of their own
// (`results`, placed before the message).
Err read_content(const json& v, const std::string& p, bool user, tokenizer::ChatMessage& msg,
                 std::vector<ContentPart>& parts, std::vector<DocumentRef>& documents,
                 std::vector<tokenizer::ChatMessage>& results) {
    if (v.is_string()) return read_string(v, p, msg.content);
    if (!v.is_array()) return type_error(p, "a string or a list of content blocks");
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string bp = p + "[" + std::to_string(i) + "]";
        const json& b = v[i];
        if (!b.is_object()) return type_error(bp, "a content block (an object with a type)");
        const std::string type = block_type(b);
        if (auto e = refuse_block_type(type, bp)) return e;
        if (type == "tool_use") {
            if (user) return unsupported(bp, "tool_use blocks belong in assistant messages");
            if (auto e = read_tool_use(b, bp, msg)) return e;
            continue;
        }
        if (type == "tool_result") {
            if (!user) return unsupported(bp, "tool_result blocks belong in user messages");
            tokenizer::ChatMessage result;
            if (auto e = read_tool_result(b, bp, result)) return e;
            results.push_back(std::move(result));
            continue;
        }
        if (type == "document") {
            if (!user) return unsupported(bp, "document blocks belong in user messages");
            DocumentRef doc;
            std::string context;
            if (auto e = read_document_block(b, bp, doc, context)) return e;
            documents.push_back(std::move(doc));
            if (!context.empty()) {
                append_text_part(msg.content, context);
                parts.push_back(ContentPart{std::move(context), {}});
            }
            continue;
        }
        ContentPart part;
        if (auto e = read_text_block(b, bp, part.text)) return e;
        append_text_part(msg.content, part.text);
        parts.push_back(std::move(part));
    }
    return std::nullopt;
}

Err parse_messages(const json& body, GenerationRequest& out, std::vector<DocumentRef>& documents) {
    if (!body.contains("messages"))
        return invalid_request("'messages' is required", "messages", "missing_required_parameter");
    const json& msgs = body.at("messages");
    if (!msgs.is_array()) return type_error("messages", "a list");
    // An empty list is answered, as llama-server answers it (Anthropic's API refuses it): the
    // template's text for no turns, e.g. the system prompt and the assistant's opening.
    for (size_t i = 0; i < msgs.size(); ++i) {
        const std::string p = "messages[" + std::to_string(i) + "]";
        const json& m = msgs[i];
        if (!m.is_object()) return type_error(p, "an object {\"role\", \"content\"}");
        if (!m.contains("role"))
            return invalid_request("'" + p + ".role' is required", p + ".role", "missing_required_parameter");
        tokenizer::ChatMessage msg;
        if (auto e = read_string(m.at("role"), p + ".role", msg.role)) return e;
        if (msg.role == "system")
            return value_error(p + ".role", "must be user or assistant (the system prompt is the top-level 'system')");
        if (msg.role != "user" && msg.role != "assistant")
            return value_error(p + ".role", "must be user or assistant (got '" + clip_for_message(msg.role) + "')");
        if (!m.contains("content"))
            return invalid_request("'" + p + ".content' is required", p + ".content", "missing_required_parameter");
        std::vector<ContentPart> parts;
        std::vector<tokenizer::ChatMessage> results;
        if (auto e = read_content(m.at("content"), p + ".content", msg.role == "user", msg, parts, documents, results))
            return e;
        for (auto& r : results) {
            out.messages.push_back(std::move(r));
            out.message_parts.emplace_back();
        }
        // A user turn of tool results alone is those results.
        if (!results.empty() && msg.content.empty() && parts.empty()) continue;
        out.messages.push_back(std::move(msg));
        out.message_parts.push_back(m.at("content").is_string() ? std::vector<ContentPart>{} : std::move(parts));
    }
    // A final assistant message is the start of the answer (Anthropic's prefill): the template
    // leaves that turn open and the answer continues it.
    if (!out.messages.empty() && out.messages.back().role == "assistant") out.continue_final_message = true;
    return std::nullopt;
}

// `system`: a string or text blocks, the first message of the conversation.
Err parse_system(const json& body, GenerationRequest& out) {
    if (absent(body, "system")) return std::nullopt;
    const json& s = body.at("system");
    tokenizer::ChatMessage msg{"system", ""};
    if (s.is_string()) {
        if (auto e = read_string(s, "system", msg.content)) return e;
    } else if (s.is_array()) {
        for (size_t i = 0; i < s.size(); ++i) {
            const std::string p = "system[" + std::to_string(i) + "]";
            if (!s[i].is_object()) return type_error(p, "a text block");
            const std::string type = block_type(s[i]);
            if (type != "text") {
                if (auto e = refuse_block_type(type, p)) return e;
                return unsupported(p, "the system prompt holds text blocks only");
            }
            std::string piece;
            if (auto e = read_text_block(s[i], p, piece)) return e;
            msg.content += piece;
        }
    } else {
        return type_error("system", "a string or a list of text blocks");
    }
    out.messages.insert(out.messages.begin(), std::move(msg));
    out.message_parts.insert(out.message_parts.begin(), std::vector<ContentPart>{});
    return std::nullopt;
}

// Anthropic's tools: [{name, description?, input_schema, cache_control?, type?: "custom"}] and
// tool_choice {type: auto | any | tool (with name) | none, disable_parallel_tool_use?}, onto the
// one ToolRequest (server/tool_calls/). Server tools (web search, code execution ...) are refused.
Err parse_tools(const json& body, GenerationRequest& out) {
    tool_calls::ToolRequest r;
    if (!absent(body, "tools")) {
        const json& list = body.at("tools");
        if (!list.is_array()) return type_error("tools", "a list of tool definitions");
        if (list.size() > tool_calls::kMaxTools)
            return value_error("tools", "may hold at most " + std::to_string(tool_calls::kMaxTools) + " tools");
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string p = "tools[" + std::to_string(i) + "]";
            const json& t = list[i];
            if (!t.is_object()) return type_error(p, "an object {\"name\", \"input_schema\"}");
            const std::string type = block_type(t);
            if (!type.empty() && type != "custom") {
                return unsupported(p + ".type", "server tools ('" + clip_for_message(type) +
                                                    "') are not served; client tools (name, input_schema) are");
            }
            tool_calls::ToolDefinition d;
            d.name_field = p + ".name";
            d.parameters_field = p + ".input_schema";
            if (!t.contains("name"))
                return invalid_request("'" + p + ".name' is required", p + ".name", "missing_required_parameter");
            if (auto e = read_string(t.at("name"), p + ".name", d.name)) return e;
            if (!absent(t, "description")) {
                if (auto e = read_string(t.at("description"), p + ".description", d.description)) return e;
            }
            // Strict tool use: checked as chat's `strict` is (tool_choice any / tool enforce the
            // schema with a grammar; an auto call is parsed and checked to be an object).
            if (!absent(t, "strict") && !t.at("strict").is_boolean()) return type_error(p + ".strict", "a boolean");
            if (!t.contains("input_schema"))
                return invalid_request("'" + p + ".input_schema' is required", p + ".input_schema",
                                       "missing_required_parameter");
            d.parameters = t.at("input_schema");
            if (auto e = check_cache_control(t, p)) return e;
            r.tools.push_back(std::move(d));
        }
    }
    if (!absent(body, "tool_choice")) {
        const json& tc = body.at("tool_choice");
        if (!tc.is_object())
            return type_error("tool_choice", "an object {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
        const std::string type = block_type(tc);
        r.choice_field = "tool_choice";
        if (type == "auto") {
            r.choice = tool_calls::ToolChoice::kAuto;
        } else if (type == "any") {
            r.choice = tool_calls::ToolChoice::kRequired;
        } else if (type == "none") {
            r.choice = tool_calls::ToolChoice::kNone;
        } else if (type == "tool") {
            r.choice = tool_calls::ToolChoice::kNamed;
            r.choice_field = "tool_choice.name";
            if (!tc.contains("name"))
                return invalid_request("'tool_choice.name' is required", "tool_choice.name",
                                       "missing_required_parameter");
            if (auto e = read_string(tc.at("name"), "tool_choice.name", r.named)) return e;
        } else {
            return value_error("tool_choice.type", "must be auto, any, tool or none");
        }
        if (!absent(tc, "disable_parallel_tool_use")) {
            if (!tc.at("disable_parallel_tool_use").is_boolean())
                return type_error("tool_choice.disable_parallel_tool_use", "a boolean");
            r.parallel = !tc.at("disable_parallel_tool_use").get<bool>();
        }
    }
    if (auto e = tool_calls::check_tool_request(r, "tools")) return e;
    if (!r.tools.empty()) out.tools = std::make_shared<const tool_calls::ToolRequest>(std::move(r));
    return std::nullopt;
}

// Structured outputs in Anthropic's spellings: output_config.format (the current one) or the beta
// output_format (structured-outputs-2025-11-13), both {"type": "json_schema", "schema": {...}}.
// Read by chat's response_format reader (constraint_request.h: the same schema rules, compiler
// and bounds), then every name in it is the field the client wrote.
Err parse_output_format(const json& body, GenerationRequest& out) {
    const json* format = nullptr;
    std::string field;
    if (!absent(body, "output_format")) {
        format = &body.at("output_format");
        field = "output_format";
    }
    if (!absent(body, "output_config") && !absent(body.at("output_config"), "format")) {
        if (format != nullptr) {
            return invalid_request(
                "'output_config.format' and 'output_format' both constrain the output; a request may use one of them",
                "output_config.format", "invalid_value");
        }
        format = &body.at("output_config").at("format");
        field = "output_config.format";
    }
    if (format == nullptr) return std::nullopt;
    if (!format->is_object()) return type_error(field, "an object {\"type\": \"json_schema\", \"schema\": {...}}");
    if (!format->contains("type") || !format->at("type").is_string() || format->at("type") != "json_schema") {
        return value_error(field + ".type", "must be \"json_schema\"");
    }
    if (!format->contains("schema") || !format->at("schema").is_object()) {
        return format->contains("schema") ? type_error(field + ".schema", "a JSON schema object")
                                          : invalid_request("'" + field + ".schema' is required", field + ".schema",
                                                            "missing_required_parameter");
    }
    const auto named = [&field](std::string s) {
        for (size_t at = s.find("response_format"); at != std::string::npos; at = s.find("response_format", at)) {
            s.replace(at, 15, field);
            at += field.size();
        }
        return s;
    };
    std::optional<grammar::ConstraintSpec> spec;
    if (auto e = parse_constraint(json{{"response_format", *format}}, spec)) {
        e->param = named(e->param);
        e->message = named(e->message);
        return e;
    }
    spec->field = named(spec->field);  // a schema that does not compile is a 400 naming it
    out.constraint = std::move(spec);
    return std::nullopt;
}

// Features whose fields exist in the API but are not served: refused naming the field unless they
// hold their "off" value.
Err refuse_unserved(const json& body) {
    if (!absent(body, "thinking")) {
        const json& t = body.at("thinking");
        if (!t.is_object() || block_type(t) != "disabled")
            return unsupported("thinking", "extended thinking is not served (only {\"type\": \"disabled\"})");
    }
    if (!absent(body, "mcp_servers") && !(body.at("mcp_servers").is_array() && body.at("mcp_servers").empty()))
        return unsupported("mcp_servers", "MCP servers are not served");
    if (!absent(body, "container")) return unsupported("container", "code execution containers are not served");
    if (!absent(body, "context_management")) return unsupported("context_management", "context editing is not served");
    if (!absent(body, "output_config")) {
        const json& oc = body.at("output_config");
        if (!oc.is_object()) return type_error("output_config", "an object");
        for (const auto& [key, value] : oc.items()) {
            if (value.is_null() || key == "format") continue;  // format: parse_output_format
            return unsupported("output_config." + clip_for_message(key), "not served");
        }
    }
    if (!absent(body, "metadata")) {
        const json& m = body.at("metadata");
        if (!m.is_object()) return type_error("metadata", "an object");
        if (!absent(m, "user_id") && !m.at("user_id").is_string()) return type_error("metadata.user_id", "a string");
    }
    // Accepted and meaningless here (one local model, no workspaces or regions): checked as strings.
    for (const char* key : {"service_tier", "inference_geo", "speed", "user_profile_id", "workspace_id"}) {
        if (!absent(body, key) && !body.at(key).is_string()) return type_error(key, "a string");
    }
    // Top-level cache_control (cache the longest prefix): what lazyattn does unasked.
    if (auto e = check_cache_control(body, "")) return e;
    // Diagnostics ask for a cache-miss report this server does not write; asking changes nothing.
    if (!absent(body, "diagnostics") && !body.at("diagnostics").is_object())
        return type_error("diagnostics", "an object");
    return std::nullopt;
}

// Anthropic's ranges where they are narrower than OpenAI's (temperature in [0, 1], top_k >= 0).
Err check_anthropic_ranges(const json& body) {
    if (!absent(body, "temperature")) {
        const json& t = body.at("temperature");
        if (!t.is_number()) return type_error("temperature", "a number");
        if (t.get<double>() < 0 || t.get<double>() > 1) return value_error("temperature", "must be in [0, 1]");
    }
    if (!absent(body, "top_k") && body.at("top_k").is_number() && body.at("top_k").get<double>() < 0)
        return value_error("top_k", "must be >= 0");
    if (!absent(body, "stop_sequences")) {
        const json& s = body.at("stop_sequences");
        if (!s.is_array()) return type_error("stop_sequences", "a list of strings");
        if (s.size() > size_t(kMaxStopStrings))
            return value_error("stop_sequences", "may hold at most " + std::to_string(kMaxStopStrings) + " strings");
    }
    return std::nullopt;
}

// An error from the chat-completions parser, its field renamed to this API's spelling.
ApiError renamed(ApiError e) {
    if (e.param == "stop") {
        e.param = "stop_sequences";
        if (const size_t at = e.message.find("'stop'"); at != std::string::npos)
            e.message.replace(at, 6, "'stop_sequences'");
    }
    return e;
}

// The fields the two APIs share, checked by the chat-completions parser (one set of rules): the
// sampling settings and lazyattn's extensions are copied into an OpenAI-shaped body around a
// stand-in message (the messages themselves are read above, not copied).
Err parse_shared_fields(const json& body, AnthropicRoute route, GenerationRequest& out) {
    json o = json::object();
    o["messages"] = json::array({json{{"role", "user"}, {"content", "-"}}});
    for (const char* key : {"model", "temperature", "top_p", "top_k", "stream", "seed", "cache_salt", "document_reuse",
                            "documents_from", "document_delimiter"}) {
        if (body.contains(key)) o[key] = body.at(key);
    }
    if (route == AnthropicRoute::kMessages && body.contains("max_tokens")) o["max_tokens"] = body.at("max_tokens");
    if (!absent(body, "stop_sequences")) o["stop"] = body.at("stop_sequences");
    GenerationRequest shared;
    if (auto e = parse_generation_request(o, true, shared)) return renamed(std::move(*e));
    shared.messages.clear();
    shared.message_parts.clear();
    out = std::move(shared);
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_anthropic_request(const json& body, AnthropicRoute route, GenerationRequest& out) {
    if (!body.is_object()) return invalid_request("the request body must be a JSON object", "", "invalid_type");
    if (auto e = refuse_unknown_fields(body)) return e;
    if (!body.contains("model") || !body.at("model").is_string())
        return body.contains("model") ? type_error("model", "a string")
                                      : invalid_request("'model' is required", "model", "missing_required_parameter");
    if (route == AnthropicRoute::kMessages && absent(body, "max_tokens"))
        return invalid_request("'max_tokens' is required", "max_tokens", "missing_required_parameter");
    if (auto e = check_anthropic_ranges(body)) return e;
    if (auto e = refuse_unserved(body)) return e;
    if (auto e = parse_shared_fields(body, route, out)) return e;
    if (route == AnthropicRoute::kCountTokens) out.stream = false;
    std::vector<DocumentRef> block_documents;
    if (auto e = parse_messages(body, out, block_documents)) return e;
    if (auto e = parse_system(body, out)) return e;
    if (auto e = parse_tools(body, out)) return e;
    if (auto e = parse_output_format(body, out)) return e;
    // The `documents` extension first, then the document blocks in the order they came.
    if (body.contains("documents")) {
        if (auto e = parse_documents(body.at("documents"), true, out.documents)) return e;
    }
    for (DocumentRef& d : block_documents) out.documents.push_back(std::move(d));
    out.chat = true;
    out.n = 1;
    return std::nullopt;
}

const char* anthropic_error_type(int http_status) {
    switch (http_status) {
        case 400:
            return "invalid_request_error";
        case 401:
            return "authentication_error";
        case 403:
            return "permission_error";
        case 404:
            return "not_found_error";
        case 413:
            return "request_too_large";
        case 429:
            return "rate_limit_error";
        case 503:
        case 529:
            return "overloaded_error";
        default:
            return http_status < 500 ? "invalid_request_error" : "api_error";
    }
}

std::string anthropic_error_json(const ApiError& e) {
    json error = {{"type", anthropic_error_type(e.http_status)}, {"message", e.message}};
    if (!e.param.empty()) error["param"] = e.param;
    if (!e.code.empty()) error["code"] = e.code;
    if (e.n_prompt_tokens >= 0) error["n_prompt_tokens"] = e.n_prompt_tokens;
    if (e.n_ctx >= 0) error["n_ctx"] = e.n_ctx;
    return json{{"type", "error"}, {"error", error}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace lazyattn::server
