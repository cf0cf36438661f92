#!/usr/bin/python3
"""Hugging Face model folders and their meaning, written from the published formats and formulas,
independently of triax's code: what checks `triax import` / `triax export --hf`.

  hf_reference.py make DIR ARCH [--dtype F32|BF16] [--shards K] [--no-prefix] [--buffers]
                  [--tied] [--vocab V] [--seed S] [--hidden H] [--layers L] [--heads A]
                  [--positions P]
      a random-weight folder in the exact layout transformers writes: config.json and
      model.safetensors, or K shards model-0000k-of-0000K.safetensors + the index. ARCH: gpt2,
      llama (grouped-query, Llama 3.1 rope scaling), qwen2 (q/k/v biases), mistral.
      GPT-2 weights are Conv1D [in, out] with c_attn's columns q|k|v; --no-prefix writes the
      original gpt2 upload's names (no "transformer."); --buffers adds the causal-mask buffers
      (attn.bias, attn.masked_bias) or rotary_emb.inv_freq that loaders must skip.
  hf_reference.py logits DIR FILE.safetensors
      FILE holds "ids" [b, s] and triax's "logits" [b, s, V] after import: they must equal this
      script's logits from DIR (Hugging Face semantics: GPT2LMHeadModel with gelu_new, or
      LlamaForCausalLM's RMSNorm/rotate_half/repeat_kv/SwiGLU), within 1e-5 of their scale.
  hf_reference.py greedy DIR PROMPT_IDS N TRIAX_IDS
      the greedy continuation (N tokens after the comma-separated prompt) computed from DIR must
      equal triax's ids (space- or comma-separated).
  hf_reference.py same DIR_A DIR_B
      every tensor of A in B with the same name, shape, dtype and bytes, and no other (an
      import -> export round trip).
  hf_reference.py loss DIR VAL.tok RUN_DIR STEP BATCHES GLOBAL_BATCH
      the held-out loss of DIR on VAL.tok's first BATCHES x GLOBAL_BATCH windows equals the
      val_loss triax recorded at STEP (1e-5 relative): an exported, trained model means what
      triax trained.
Exits 1 on any mismatch.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from llama_reference import inverse_frequencies, rms_norm, rotate_half  # noqa: E402

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
          "I64": torch.int64, "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


# --- safetensors, from its README: u64 header size, JSON header, raw little-endian bytes ------

def raw_bytes(t):
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, t in tensors.items():
        n = t.numel() * t.element_size()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors.values():
            f.write(raw_bytes(t))


def read_safetensors(path):
    """name -> (dtype name, shape, raw bytes)."""
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    return {name: (info["dtype"], info["shape"],
                   data[8 + size + info["data_offsets"][0]:8 + size + info["data_offsets"][1]])
            for name, info in header.items()}


def as_tensor(dtype, shape, raw):
    if dtype in ("BF16", "F16"):
        t = torch.frombuffer(bytearray(raw), dtype=torch.int16).view(DTYPES[dtype])
    else:
        t = torch.frombuffer(bytearray(raw), dtype=DTYPES[dtype])
    return t.reshape(shape)


def read_folder(directory):
    """Every tensor of a Hugging Face folder (single file or index + shards), raw."""
    index = os.path.join(directory, "model.safetensors.index.json")
    files = (sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index)
             else ["model.safetensors"])
    out = {}
    for f in files:
        out.update(read_safetensors(os.path.join(directory, f)))
    return out


def load_weights(directory):
    return {n: as_tensor(*v).float() for n, v in read_folder(directory).items()}


# --- random folders -------------------------------------------------------------------------

def configs(arch, vocab, tied, size):
    if arch == "gpt2":
        return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": vocab,
                "n_positions": size["positions"], "n_ctx": size["positions"],
                "n_embd": size["hidden"], "n_layer": size["layers"], "n_head": size["heads"],
                "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
                "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
                "tie_word_embeddings": True, "bos_token_id": vocab - 1, "eos_token_id": vocab - 1}
    base = {"vocab_size": vocab, "hidden_size": size["hidden"],
            "intermediate_size": size["hidden"] * 5 // 4, "num_hidden_layers": size["layers"],
            "num_attention_heads": size["heads"], "num_key_value_heads": size["heads"] // 2,
            "hidden_act": "silu", "max_position_embeddings": size["positions"] * 4,
            "rms_norm_eps": 1e-5,
            "rope_theta": 500.0, "tie_word_embeddings": tied, "bos_token_id": 1, "eos_token_id": 2}
    if arch == "llama":
        base.update({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                     "attention_bias": False, "mlp_bias": False,
                     "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 16}})
    elif arch == "qwen2":
        base.update({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                     "use_sliding_window": False, "sliding_window": 4096, "rope_scaling": None})
    elif arch == "mistral":
        base.update({"architectures": ["MistralForCausalLM"], "model_type": "mistral",
                     "sliding_window": 4096})
    else:
        raise SystemExit(f"unknown arch {arch}")
    return base


def random_weights(c, prefix, buffers, generator):
    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=generator) * std

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=generator)

    w = {}
    if c["model_type"] == "gpt2":
        h, n_pos = c["n_embd"], c["n_positions"]
        p = prefix
        w[p + "wte.weight"] = normal(c["vocab_size"], h)
        w[p + "wpe.weight"] = normal(n_pos, h, std=0.01)
        for i in range(c["n_layer"]):
            q = f"{p}h.{i}."
            w[q + "ln_1.weight"], w[q + "ln_1.bias"] = norm(h), normal(h)
            if buffers:
                w[q + "attn.bias"] = torch.tril(torch.ones(n_pos, n_pos, dtype=torch.uint8)).view(
                    1, 1, n_pos, n_pos)
                w[q + "attn.masked_bias"] = torch.tensor(-1e4)
            w[q + "attn.c_attn.weight"], w[q + "attn.c_attn.bias"] = normal(h, 3 * h), normal(3 * h)
            w[q + "attn.c_proj.weight"], w[q + "attn.c_proj.bias"] = normal(h, h), normal(h)
            w[q + "ln_2.weight"], w[q + "ln_2.bias"] = norm(h), normal(h)
            w[q + "mlp.c_fc.weight"], w[q + "mlp.c_fc.bias"] = normal(h, 4 * h), normal(4 * h)
            w[q + "mlp.c_proj.weight"], w[q + "mlp.c_proj.bias"] = normal(4 * h, h), normal(h)
        w[p + "ln_f.weight"], w[p + "ln_f.bias"] = norm(h), normal(h)
        return w
    h, inter = c["hidden_size"], c["intermediate_size"]
    d = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * d
    w["model.embed_tokens.weight"] = normal(c["vocab_size"], h)
    for i in range(c["num_hidden_layers"]):
        q = f"model.layers.{i}."
        w[q + "input_layernorm.weight"] = norm(h)
        for name, rows in (("q_proj", h), ("k_proj", kv), ("v_proj", kv)):
            w[q + f"self_attn.{name}.weight"] = normal(rows, h)
            if c["model_type"] == "qwen2":
                w[q + f"self_attn.{name}.bias"] = normal(rows, std=0.1)
        w[q + "self_attn.o_proj.weight"] = normal(h, h)
        if buffers:
            w[q + "self_attn.rotary_emb.inv_freq"] = torch.ones(d // 2)
        w[q + "post_attention_layernorm.weight"] = norm(h)
        w[q + "mlp.gate_proj.weight"] = normal(inter, h)
        w[q + "mlp.up_proj.weight"] = normal(inter, h)
        w[q + "mlp.down_proj.weight"] = normal(h, inter)
    w["model.norm.weight"] = norm(h)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = normal(c["vocab_size"], h)
    return w


def make(directory, arch, dtype="F32", shards=1, prefix=True, buffers=False, tied=False,
         vocab=61, seed=0, size=None):
    c = configs(arch, vocab, tied, size or {"hidden": 32, "layers": 2, "heads": 4, "positions": 16})
    c["torch_dtype"] = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[dtype]
    generator = torch.Generator().manual_seed(seed)
    w = random_weights(c, "transformer." if prefix else "", buffers, generator)
    w = {n: (t.to(DTYPES[dtype]) if t.is_floating_point() else t) for n, t in w.items()}
    os.makedirs(directory, exist_ok=True)
    json.dump(c, open(os.path.join(directory, "config.json"), "w"), indent=2)
    names = list(w)
    if shards == 1:
        write_safetensors(os.path.join(directory, "model.safetensors"), w)
        return
    weight_map, per = {}, math.ceil(len(names) / shards)
    for k in range(shards):
        file = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: w[n] for n in names[k * per:(k + 1) * per]}
        write_safetensors(os.path.join(directory, file), part)
        weight_map.update({n: file for n in part})
    total = sum(t.numel() * t.element_size() for t in w.values())
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(directory, "model.safetensors.index.json"), "w"), indent=2)


# --- what a folder computes -------------------------------------------------------------------

def gelu_new(x):
    """GPT-2's activation (transformers' NewGELUActivation), from its formula."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gpt2_logits(c, w, ids):
    p = "transformer." if "transformer.wte.weight" in w else ""
    h, heads = c["n_embd"], c["n_head"]
    d = h // heads
    b, s = ids.shape
    eps = c.get("layer_norm_epsilon", 1e-5)
    act = gelu_new if c.get("activation_function", "gelu_new") == "gelu_new" else F.gelu
    x = w[p + "wte.weight"][ids] + w[p + "wpe.weight"][:s]
    future = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    for i in range(c["n_layer"]):
        q = f"{p}h.{i}."
        a = F.layer_norm(x, (h,), w[q + "ln_1.weight"], w[q + "ln_1.bias"], eps)
        qkv = torch.addmm(w[q + "attn.c_attn.bias"], a.reshape(-1, h), w[q + "attn.c_attn.weight"])
        qq, kk, vv = qkv.view(b, s, 3 * h).split(h, dim=2)  # Conv1D: x @ W[in, out] + b
        qq, kk, vv = (t.view(b, s, heads, d).transpose(1, 2) for t in (qq, kk, vv))
        att = (qq @ kk.transpose(-1, -2)) / math.sqrt(d)
        att = att.masked_fill(future, float("-inf")).softmax(-1)
        y = (att @ vv).transpose(1, 2).reshape(-1, h)
        x = x + torch.addmm(w[q + "attn.c_proj.bias"], y, w[q + "attn.c_proj.weight"]).view(b, s, h)
        m = F.layer_norm(x, (h,), w[q + "ln_2.weight"], w[q + "ln_2.bias"], eps).reshape(-1, h)
        m = act(torch.addmm(w[q + "mlp.c_fc.bias"], m, w[q + "mlp.c_fc.weight"]))
        x = x + torch.addmm(w[q + "mlp.c_proj.bias"], m, w[q + "mlp.c_proj.weight"]).view(b, s, h)
    x = F.layer_norm(x, (h,), w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps)
    return x @ w.get("lm_head.weight", w[p + "wte.weight"]).t()


def llama_logits(c, w, ids):
    h, heads = c["hidden_size"], c["num_attention_heads"]
    kv_heads = c.get("num_key_value_heads", heads)
    d, eps = h // heads, c["rms_norm_eps"]
    b, s = ids.shape
    scaling = c.get("rope_scaling") or {}
    if scaling.get("rope_type", scaling.get("type")) == "llama3":
        inv = inverse_frequencies(d, c["rope_theta"], scaling["factor"], scaling["low_freq_factor"],
                                  scaling["high_freq_factor"],
                                  scaling["original_max_position_embeddings"])
    else:
        inv = inverse_frequencies(d, c["rope_theta"], 0, 1, 4, 8192)
    angles = torch.outer(torch.arange(s, dtype=torch.float32), inv.float())
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    x = w["model.embed_tokens.weight"][ids]
    future = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    for i in range(c["num_hidden_layers"]):
        q = f"model.layers.{i}.self_attn."
        n = rms_norm(x, w[f"model.layers.{i}.input_layernorm.weight"], eps)
        proj = {k: F.linear(n, w[q + f"{k}.weight"], w.get(q + f"{k}.bias"))
                for k in ("q_proj", "k_proj", "v_proj")}
        qq = proj["q_proj"].view(b, s, heads, d).transpose(1, 2)
        kk = proj["k_proj"].view(b, s, kv_heads, d).transpose(1, 2)
        vv = proj["v_proj"].view(b, s, kv_heads, d).transpose(1, 2)
        qq, kk = qq * cos + rotate_half(qq) * sin, kk * cos + rotate_half(kk) * sin
        rep = heads // kv_heads  # repeat_kv: [b, kv, s, d] -> [b, kv * rep, s, d]
        kk = kk[:, :, None].expand(b, kv_heads, rep, s, d).reshape(b, heads, s, d)
        vv = vv[:, :, None].expand(b, kv_heads, rep, s, d).reshape(b, heads, s, d)
        att = ((qq @ kk.transpose(-1, -2)) / math.sqrt(d)).masked_fill(future, float("-inf"))
        y = (att.softmax(-1) @ vv).transpose(1, 2).reshape(b, s, h)
        x = x + F.linear(y, w[q + "o_proj.weight"])
        m = f"model.layers.{i}.mlp."
        n = rms_norm(x, w[f"model.layers.{i}.post_attention_layernorm.weight"], eps)
        x = x + F.linear(F.silu(F.linear(n, w[m + "gate_proj.weight"])) *
                         F.linear(n, w[m + "up_proj.weight"]), w[m + "down_proj.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    return F.linear(x, w.get("lm_head.weight", w["model.embed_tokens.weight"]))


def folder_logits(directory, ids):
    c = json.load(open(os.path.join(directory, "config.json")))
    w = load_weights(directory)
    with torch.no_grad():
        return (gpt2_logits if c["model_type"] == "gpt2" else llama_logits)(c, w, ids)


def check_logits(directory, path):
    t = {n: as_tensor(*v) for n, v in read_safetensors(path).items()}
    want = folder_logits(directory, t["ids"].long())
    got = t["logits"].float()
    scale = want.abs().max().item()
    diff = (got - want).abs().max().item() if got.shape == want.shape else float("inf")
    print(f"logits of {directory}: shape {list(want.shape)}, max |diff| {diff:.2e} "
          f"(scale {scale:.2e}, tolerance 1e-5 x scale)")
    return 0 if diff <= 1e-5 * max(scale, 1.0) else 1


def check_greedy(directory, prompt, count, triax_ids):
    """Greedy continuation of the comma-separated prompt ids; must equal triax's ids."""
    c = json.load(open(os.path.join(directory, "config.json")))
    seq = c.get("n_positions", c.get("max_position_embeddings"))
    tokens = [int(t) for t in prompt.split(",")]
    for _ in range(count):
        window = torch.tensor([tokens[-seq:]])
        tokens.append(int(folder_logits(directory, window)[0, -1].argmax()))
    got = [int(t) for t in triax_ids.replace(",", " ").split()]
    print(f"greedy continuation of {directory}: reference {tokens}, triax {got}")
    return 0 if got == tokens else 1


def check_same(a, b):
    ta, tb = read_folder(a), read_folder(b)
    bad = [n for n in ta if n not in tb or ta[n] != tb[n]] + [n for n in tb if n not in ta]
    print(f"{a} vs {b}: {len(ta)} and {len(tb)} tensors, {len(bad)} differ"
          + (f": {bad[:5]}" if bad else " (names, shapes, dtypes and bytes identical)"))
    return 1 if bad else 0


def check_loss(directory, val_path, run_dir, step, batches, global_batch):
    raw = open(val_path, "rb").read()
    magic, _, width, count = struct.unpack_from("<8sIIQ", raw)
    assert magic == b"TRIAXTOK"
    fmt = {1: "B", 2: "H", 4: "I"}[width]
    tokens = torch.tensor(struct.unpack_from(f"<{count}{fmt}", raw, 64), dtype=torch.long)
    c = json.load(open(os.path.join(directory, "config.json")))
    seq = c.get("n_positions", 0) if c["model_type"] == "gpt2" else None
    if seq is None:
        seq = next(int(line.split(":")[1]) for line in open(os.path.join(run_dir,
                                                                         "config.resolved.yaml"))
                   if line.strip().startswith("seq_len:"))
    windows = torch.stack([tokens[i * seq:i * seq + seq + 1] for i in range(batches * global_batch)])
    logits = folder_logits(directory, windows[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), windows[:, 1:].reshape(-1)).item()
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    triax = next(r["val_loss"] for r in records if r["step"] == step)
    diff = abs(loss - triax) / triax
    print(f"held-out loss of {directory} (Hugging Face semantics) {loss:.6f}, triax recorded "
          f"{triax:.6f} at step {step}, relative difference {diff:.1e}")
    return 0 if diff < 1e-5 else 1


def main(argv):
    if argv[0] == "make":
        opts = {"dtype": "F32", "shards": "1", "vocab": "61", "seed": "0", "hidden": "32",
                "layers": "2", "heads": "4", "positions": "16"}
        flags = set()
        rest = argv[3:]
        while rest:
            key = rest.pop(0)[2:]
            if key in ("no-prefix", "buffers", "tied"):
                flags.add(key)
            else:
                opts[key] = rest.pop(0)
        make(argv[1], argv[2], opts["dtype"], int(opts["shards"]), "no-prefix" not in flags,
             "buffers" in flags, "tied" in flags, int(opts["vocab"]), int(opts["seed"]),
             {k: int(opts[k]) for k in ("hidden", "layers", "heads", "positions")})
        return 0
    if argv[0] == "greedy":
        return check_greedy(argv[1], argv[2], int(argv[3]), argv[4])
    if argv[0] == "logits":
        return check_logits(argv[1], argv[2])
    if argv[0] == "same":
        return check_same(argv[1], argv[2])
    if argv[0] == "loss":
        return check_loss(argv[1], argv[2], argv[3], *map(int, argv[4:7]))
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
