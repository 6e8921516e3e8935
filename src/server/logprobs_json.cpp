#include "server/logprobs_json.h"

#include <cmath>

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

json logprob_value(float v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json byte_list(const std::string& s) {
    json out = json::array();
    for (unsigned char c : s) out.push_back(int(c));
    return out;
}

}  // namespace

void TokenLogprobList::append(int32_t id, float logprob, engine::TopLogprobs alternatives) {
    ids.push_back(id);
    logprobs.push_back(logprob);
    top.push_back(std::move(alternatives));
}

void TokenLogprobList::clear() {
    ids.clear();
    logprobs.clear();
    top.clear();
}

void append_prompt_logprobs(const engine::RequestHandle& handle, const std::vector<int32_t>& tokens,
                            TokenLogprobList& out) {
    std::vector<float> lp;
    std::vector<engine::TopLogprobs> top;
    handle.prompt_logprobs(&lp, &top);
    for (size_t t = 0; t < tokens.size(); ++t) {
        out.append(tokens[t], t < lp.size() ? lp[t] : NAN, t < top.size() ? top[t] : engine::TopLogprobs{});
    }
}

json chat_logprobs_json(const tokenizer::Tokenizer& tok, const TokenLogprobList& t) {
    json content = json::array();
    for (size_t i = 0; i < t.ids.size(); ++i) {
        const std::string piece = tok.token_to_piece(t.ids[i], true);
        json alternatives = json::array();
        for (const auto& [id, lp] : t.top[i]) {
            const std::string p = tok.token_to_piece(id, true);
            alternatives.push_back({{"token", p}, {"logprob", logprob_value(lp)}, {"bytes", byte_list(p)}});
        }
        content.push_back({{"token", piece},
                           {"logprob", logprob_value(t.logprobs[i])},
                           {"bytes", byte_list(piece)},
                           {"top_logprobs", alternatives}});
    }
    return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs_json(const tokenizer::Tokenizer& tok, const TokenLogprobList& t, int64_t first_offset) {
    json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
    int64_t offset = first_offset;
    for (size_t i = 0; i < t.ids.size(); ++i) {
        const std::string piece = tok.token_to_piece(t.ids[i], true);
        tokens.push_back(piece);
        logprobs.push_back(logprob_value(t.logprobs[i]));
        offsets.push_back(offset);
        offset += int64_t(piece.size());
        if (!std::isfinite(t.logprobs[i]) && t.top[i].empty()) {
            top.push_back(nullptr);
            continue;
        }
        json alternatives = json::object();
        for (const auto& [id, lp] : t.top[i]) alternatives[tok.token_to_piece(id, true)] = logprob_value(lp);
        top.push_back(alternatives);
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

}  // namespace lazyattn::server
