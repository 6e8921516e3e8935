#include "model/model_weights.h"

#include <algorithm>
#include <string>

#include "loader/dequantize.h"
#include "loader/gguf_file.h"

namespace lazyattn::model {
namespace {

std::string shape_string(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

// Dequantizes tensor `name`, which must have exactly `dims` (ggml order).
Expected<std::vector<float>> read_tensor(const loader::GgufFile& file, const std::string& name,
                                         const std::vector<int64_t>& dims) {
    const loader::GgufTensorInfo* info = file.find_tensor(name);
    if (info == nullptr) return not_found("tensor '" + name + "' is missing from the model file");
    std::vector<int64_t> have = info->dims;
    while (have.size() > dims.size() && have.back() == 1) have.pop_back();
    if (have != dims) {
        return corrupt("tensor '" + name + "' has shape " + shape_string(info->dims) + ", expected " +
                       shape_string(dims));
    }
    std::vector<float> out(info->num_elements);
    const Status st = loader::dequantize_row(info->type, file.tensor_data(*info), out.data(), info->num_elements);
    if (!st.ok()) return Status(st.code(), "tensor '" + name + "': " + st.message());
    return out;
}

// Matrices of these types are computed on in place (kernels::GgmlType); any other type is
// refused rather than widened to fp32, which would multiply the memory a file needs.
constexpr loader::GgmlType kInPlaceTypes[] = {
    loader::GgmlType::kF32,  loader::GgmlType::kF16,  loader::GgmlType::kBF16, loader::GgmlType::kQ4_0,
    loader::GgmlType::kQ4_1, loader::GgmlType::kQ5_0, loader::GgmlType::kQ5_1, loader::GgmlType::kQ8_0,
    loader::GgmlType::kQ2_K, loader::GgmlType::kQ3_K, loader::GgmlType::kQ4_K, loader::GgmlType::kQ5_K,
    loader::GgmlType::kQ6_K,
};

Status refuse_type(const loader::GgufTensorInfo& info) {
    std::string list;
    for (loader::GgmlType t : kInPlaceTypes) list += std::string(list.empty() ? "" : ", ") + loader::ggml_type_name(t);
    return unsupported("tensor '" + info.name + "' has type " + loader::ggml_type_name(info.type) +
                       ", which lazyattn cannot compute on; supported weight types: " + list);
}

Expected<Linear> read_linear(const loader::GgufFile& file, const std::string& prefix, int64_t in_dim, int64_t out_dim,
                             bool with_bias, const WeightOptions& options) {
    Linear lin;
    lin.in_dim = in_dim;
    lin.out_dim = out_dim;
    const loader::GgufTensorInfo* info = file.find_tensor(prefix + ".weight");
    if (info != nullptr && !weight_type_in_place(info->type)) return refuse_type(*info);
    if (info != nullptr && !options.dequantize_all) {
        if (info->dims.size() < 2 || info->dims[0] != in_dim || info->dims[1] != out_dim) {
            return corrupt("tensor '" + info->name + "' has shape " + shape_string(info->dims) + ", expected " +
                           shape_string({in_dim, out_dim}));
        }
        lin.type = static_cast<kernels::GgmlType>(info->type);
        lin.w_quant = file.tensor_data(*info);
    } else {
        LA_ASSIGN_OR_RETURN(lin.w_f32, read_tensor(file, prefix + ".weight", {in_dim, out_dim}));
    }
    if (with_bias) {
        LA_ASSIGN_OR_RETURN(lin.bias, read_tensor(file, prefix + ".bias", {out_dim}));
    }
    return lin;
}

// Rows [row_begin, row_begin + rows) of `whole` as a matrix of its own: a view into the file for
// in-place types (rows of every type are whole blocks), a copy for the fp32 copies.
Linear row_range(const Linear& whole, int64_t row_begin, int64_t rows) {
    Linear part;
    part.in_dim = whole.in_dim;
    part.out_dim = rows;
    part.type = whole.type;
    if (whole.w_quant != nullptr) {
        const size_t row_bytes = loader::ggml_row_size(static_cast<loader::GgmlType>(whole.type), whole.in_dim);
        part.w_quant = static_cast<const uint8_t*>(whole.w_quant) + size_t(row_begin) * row_bytes;
    } else {
        part.w_f32.assign(whole.w_f32.begin() + row_begin * whole.in_dim,
                          whole.w_f32.begin() + (row_begin + rows) * whole.in_dim);
    }
    if (!whole.bias.empty()) part.bias.assign(whole.bias.begin() + row_begin, whole.bias.begin() + row_begin + rows);
    return part;
}

Status read_attention(const loader::GgufFile& file, const ModelConfig& c, const std::string& p, LayerWeights& lw,
                      const WeightOptions& o) {
    const int64_t hidden = c.hidden_dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();
    if (c.fused_qkv) {
        LA_ASSIGN_OR_RETURN(Linear qkv, read_linear(file, p + "attn_qkv", hidden, q_dim + 2 * kv_dim, c.qkv_bias, o));
        lw.wq = row_range(qkv, 0, q_dim);
        lw.wk = row_range(qkv, q_dim, kv_dim);
        lw.wv = row_range(qkv, q_dim + kv_dim, kv_dim);
    } else {
        if (file.find_tensor(p + "attn_q.weight") == nullptr) {
            return not_found("tensor '" + p + "attn_q.weight' is missing from the model file (nor is there a fused '" +
                             p + "attn_qkv.weight')");
        }
        LA_ASSIGN_OR_RETURN(lw.wq, read_linear(file, p + "attn_q", hidden, q_dim, c.qkv_bias, o));
        LA_ASSIGN_OR_RETURN(lw.wk, read_linear(file, p + "attn_k", hidden, kv_dim, c.qkv_bias, o));
        LA_ASSIGN_OR_RETURN(lw.wv, read_linear(file, p + "attn_v", hidden, kv_dim, c.qkv_bias, o));
    }
    LA_ASSIGN_OR_RETURN(lw.wo, read_linear(file, p + "attn_output", q_dim, hidden, false, o));
    if (c.traits().qk_norm) {
        LA_ASSIGN_OR_RETURN(lw.q_norm, read_tensor(file, p + "attn_q_norm.weight", {c.head_dim}));
        LA_ASSIGN_OR_RETURN(lw.k_norm, read_tensor(file, p + "attn_k_norm.weight", {c.head_dim}));
    }
    if (c.traits().post_norms) {
        LA_ASSIGN_OR_RETURN(lw.attn_post_norm, read_tensor(file, p + "post_attention_norm.weight", {hidden}));
    }
    return {};
}

Status read_ffn(const loader::GgufFile& file, const ModelConfig& c, const std::string& p, LayerWeights& lw,
                const WeightOptions& o) {
    const int64_t hidden = c.hidden_dim;
    LA_ASSIGN_OR_RETURN(lw.ffn_norm, read_tensor(file, p + "ffn_norm.weight", {hidden}));
    if (c.traits().fused_gate_up) {
        LA_ASSIGN_OR_RETURN(Linear gate_up, read_linear(file, p + "ffn_up", hidden, 2 * int64_t(c.ffn_dim), false, o));
        lw.w_gate = row_range(gate_up, 0, c.ffn_dim);
        lw.w_up = row_range(gate_up, c.ffn_dim, c.ffn_dim);
    } else {
        LA_ASSIGN_OR_RETURN(lw.w_gate, read_linear(file, p + "ffn_gate", hidden, c.ffn_dim, false, o));
        LA_ASSIGN_OR_RETURN(lw.w_up, read_linear(file, p + "ffn_up", hidden, c.ffn_dim, false, o));
    }
    LA_ASSIGN_OR_RETURN(lw.w_down, read_linear(file, p + "ffn_down", c.ffn_dim, hidden, false, o));
    if (c.traits().post_norms) {
        LA_ASSIGN_OR_RETURN(lw.ffn_post_norm, read_tensor(file, p + "post_ffw_norm.weight", {hidden}));
    }
    return {};
}

}  // namespace

bool weight_type_in_place(loader::GgmlType t) {
    return std::find(std::begin(kInPlaceTypes), std::end(kInPlaceTypes), t) != std::end(kInPlaceTypes);
}

Expected<ModelWeights> load_weights(const loader::GgufFile& file, const ModelConfig& c, const WeightOptions& o) {
    ModelWeights w;
    const int64_t hidden = c.hidden_dim;
    LA_ASSIGN_OR_RETURN(w.token_embd, read_linear(file, "token_embd", hidden, c.vocab_size, false, o));
    LA_ASSIGN_OR_RETURN(w.output_norm, read_tensor(file, "output_norm.weight", {hidden}));
    if (!c.tied_embeddings) {
        LA_ASSIGN_OR_RETURN(w.lm_head, read_linear(file, "output", hidden, c.vocab_size, false, o));
    }
    w.layers.resize(c.num_layers);
    for (int32_t l = 0; l < c.num_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights& lw = w.layers[l];
        LA_ASSIGN_OR_RETURN(lw.attn_norm, read_tensor(file, p + "attn_norm.weight", {hidden}));
        LA_RETURN_IF_ERROR(read_attention(file, c, p, lw, o));
        LA_RETURN_IF_ERROR(read_ffn(file, c, p, lw, o));
    }
    return w;
}

}  // namespace lazyattn::model
