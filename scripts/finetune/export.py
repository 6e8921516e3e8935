"""Export of a fine-tuned model to the GGUF lazyattn serves.

merge (LoRA adapters folded into the weights) -> save as a Hugging Face directory ->
llama.cpp's own convert_hf_to_gguf.py (vendored in the llama-cpp-python sdist that
scripts/build_llama_tools.sh unpacks) at F32 -> metadata: `lazyattn.block_finetuned` = the layout
trained for, and, when the input was a GGUF, its tokenizer.* keys copied verbatim (the
tokenizer transformers rebuilds from a GGUF is not always the same one: for SmolLM2's byte-level
BPE it comes back as a Llama tokenizer without merges, so the converter would write a different
vocabulary) -> llama-quantize to the requested type. Every step writes to a temporary name; the
final file appears only when all of them succeeded.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

KEY = "lazyattn.block_finetuned"


def llama_env(root):
    out = subprocess.run([os.path.join(root, "scripts/build_llama_tools.sh"), "--env"], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if "=" in line and not line.startswith("export"):
            k, v = line.split("=", 1)
            env[k] = v
    return env


def ensure_llama_tools(root, need_quantize):
    env = llama_env(root)
    conv = os.path.join(env["LLAMA_CPP_SRC"], "convert_hf_to_gguf.py")
    quant = os.path.join(env["LLAMA_TOOLS_BIN"], "llama-quantize")
    if need_quantize and not os.access(quant, os.X_OK):
        print("[finetune] building llama-quantize (scripts/build_llama_tools.sh; once)", file=sys.stderr)
        subprocess.run([os.path.join(root, "scripts/build_llama_tools.sh")], check=True,
                       env=dict(os.environ, LLAMA_TOOLS_TARGETS="llama-quantize"), stdout=sys.stderr)
    elif not os.path.exists(conv):
        # The converter and gguf-py only: the sources, no build.
        subprocess.run([os.path.join(root, "scripts/build_llama_tools.sh"), "--sources"], check=True,
                       stdout=sys.stderr)
    return env, conv, quant


def import_gguf(env):
    path = env["LLAMA_GGUF_PY"]
    if path not in sys.path:
        sys.path.insert(0, path)
    import gguf  # noqa: the vendored gguf-py, the converter's own
    return gguf


def rewrite_metadata(gguf, src_path, out_path, layout, tokenizer_from=None, name=None):
    """Copies src_path to out_path with KEY set and, from tokenizer_from, its tokenizer.* keys."""
    reader = gguf.GGUFReader(src_path, "r")
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(out_path, arch=arch, endianess=reader.endianess)
    tok_fields = {}
    if tokenizer_from:
        tr = gguf.GGUFReader(tokenizer_from, "r")
        tok_fields = {k: f for k, f in tr.fields.items() if k.startswith("tokenizer.")}

    def copy_field(field):
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), val_type, sub_type=sub_type)

    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in ("general.architecture", KEY):
            continue
        if tok_fields and field.name.startswith("tokenizer."):
            continue
        if name and field.name == "general.name":
            continue
        copy_field(field)
    for field in tok_fields.values():
        copy_field(field)
    if name:
        writer.add_name(name)
    writer.add_string(KEY, layout)
    for t in reader.tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in reader.tensors:
        writer.write_tensor_data(t.data)
    writer.close()


def save_hf(model, tokenizer, hf_dir, source_hf_dir=None):
    """The merged model as a Hugging Face directory the converter reads."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    tmp = hf_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    if source_hf_dir:
        for f in os.listdir(source_hf_dir):
            if f.startswith("tokenizer") or f in ("special_tokens_map.json", "chat_template.jinja",
                                                  "vocab.json", "merges.txt", "added_tokens.json"):
                shutil.copy(os.path.join(source_hf_dir, f), tmp)
    else:
        tokenizer.save_pretrained(tmp)
        # A tokenizer.model transformers writes for a GGUF BPE vocabulary is not a SentencePiece
        # model; the converter would try to read it. The vocabulary comes from the GGUF instead.
        spm = os.path.join(tmp, "tokenizer.model")
        if os.path.exists(spm):
            os.remove(spm)
    shutil.rmtree(hf_dir, ignore_errors=True)
    os.replace(tmp, hf_dir)
    return hf_dir


def export_gguf(root, model, tokenizer, out_gguf, layout, outtype, source_gguf=None, source_hf_dir=None,
                python=sys.executable, name=None, log=sys.stderr):
    """Writes out_gguf (atomically) and returns its path."""
    need_quantize = outtype.lower() not in ("f32", "f16", "bf16")  # those the converter writes itself
    env, conv, quant = ensure_llama_tools(root, need_quantize)
    gguf = import_gguf(env)
    work = out_gguf + ".work"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    hf_dir = save_hf(model, tokenizer, os.path.join(work, "hf"), source_hf_dir)
    conv_type = outtype.lower() if outtype.lower() in ("f16", "bf16") else "f32"
    f32 = os.path.join(work, f"converted.{conv_type}.gguf")
    print(f"[finetune] convert_hf_to_gguf.py -> {f32}", file=log)
    r = subprocess.run([python, conv, hf_dir, "--outtype", conv_type, "--outfile", f32], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("error: convert_hf_to_gguf.py failed:\n" + r.stderr[-3000:])
    tagged = os.path.join(work, "tagged.gguf")
    rewrite_metadata(gguf, f32, tagged, layout, tokenizer_from=source_gguf, name=name)
    os.remove(f32)
    tmp_out = out_gguf + ".tmp"
    if need_quantize:
        print(f"[finetune] llama-quantize {outtype}", file=log)
        r = subprocess.run([quant, tagged, tmp_out, outtype.upper()], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("error: llama-quantize failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    else:
        os.replace(tagged, tmp_out)
    os.replace(tmp_out, out_gguf)
    shutil.rmtree(work, ignore_errors=True)
    return out_gguf


def gguf_file_type(gguf_module, path):
    """The llama-quantize type name of a GGUF (general.file_type), e.g. 'Q4_1'; None if unknown."""
    r = gguf_module.GGUFReader(path, "r")
    f = r.fields.get("general.file_type")
    if f is None:
        return None
    try:
        return gguf_module.LlamaFileType(int(f.contents())).name.replace("MOSTLY_", "").replace("ALL_", "")
    except (ValueError, KeyError):
        return None
