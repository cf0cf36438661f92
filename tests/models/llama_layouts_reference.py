"""Checks triax's Llama trained in several (tp, pp, sequence-parallel) layouts against PyTorch.

Usage: llama_layouts_reference.py DIR
DIR (written by tests/models/test_llama_pytorch_layouts.cpp under mpiexec -n 4) holds
  initial.safetensors: one process's initial weights, the two global batches (step k uses batch
    k % 2), the model's sizes and the optimizer's hyper-parameters (metadata);
  LAYOUT.rankR.safetensors: what rank R (of dp rank 0) held in LAYOUT: "grad.NAME" after step 1
    (summed over dp, tp and pp, and clipped), "final.NAME" after the last step, the shard spec of
    each sharded NAME ("spec.NAME" = "dim,stride,full_size") and its tp rank; rank 0's file also
    holds every step's loss and gradient norm.
The reference is llama_reference.py's Llama (written from the published formulas, not from
triax's code) trained by torch.optim.AdamW (decay on matrices only, as triax's AdamW) with
torch.nn.utils.clip_grad_norm_, on the full global batch in one process. Each layout's shards
are reassembled into full tensors (vocabulary padding dropped) and compared:
  step 1: loss and every clipped gradient within 1e-5 (the one-step fp32 floor of the GPT and
    Llama tests: only the order of additions differs);
  50 steps: every step's loss and gradient norm within 1e-5 relative, and the final parameters
    within 1e-5 absolute (they are ~0.02-1). Measured: losses <= 2e-7, norms <= 3e-6, parameters
    <= 2e-7. The test trains at lr 1e-3, where the loss falls smoothly: at 3e-3 the norm spikes
    20-fold by step 40 and fp32's ~1e-7 differences grow chaotically to 1e-2 in the norm.
A real error (a missing gradient sum over tp, a wrong shard order, a dropped micro-batch, a
mis-rotated RoPE half) moves step 1 by far more than these. Exits 1 on any mismatch.
"""
import glob
import os
import sys

import torch

from gpt_reference import load_safetensors
from llama_reference import forward, inverse_frequencies

STEP1_TOL = 1e-5
LOSS_TOL = 1e-5
PARAM_TOL = 1e-5


def reference_training(init, meta):
    """PyTorch's own training: losses, norms, step-1 clipped gradients, final parameters."""
    names = [n for n in init if not n.startswith("batch")]
    params = {n: init[n].clone().requires_grad_(True) for n in names}
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": meta["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=meta["lr"], betas=(meta["beta1"], meta["beta2"]), eps=meta["eps"])
    rope = [meta[k] for k in ("rope_theta", "rope_scaling_factor", "rope_low_freq_factor",
                              "rope_high_freq_factor", "rope_original_max_positions")]
    inv_freq = inverse_frequencies(meta["hidden"] // meta["heads"], *rope)
    losses, norms, grads = [], [], {}
    for step in range(meta["steps"]):
        b = step % 2
        opt.zero_grad()
        loss = forward(params, meta, init[f"batch{b}.inputs"], init[f"batch{b}.targets"], inv_freq)
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(list(params.values()), meta["clip_grad"]).item())
        losses.append(loss.item())
        if step == 0:
            grads = {n: p.grad.detach().clone() for n, p in params.items()}
        opt.step()
    final = {n: p.detach().clone() for n, p in params.items()}
    return losses, norms, grads, final


def unshard(shards, spec):
    """Rank r's shard holds chunk r of each of `stride` blocks along `dim` (shard_spec.h)."""
    dim, stride, full_size = spec
    blocks = [torch.cat([s.chunk(stride, dim)[b] for s in shards], dim) for b in range(stride)]
    return torch.cat(blocks, dim).narrow(dim, 0, full_size)


def assemble(files, prefix):
    """Full tensors called prefix + NAME from every tp rank's and pp stage's file."""
    pieces, specs = {}, {}
    for tensors, meta in files:
        tp_rank = int(meta["tp_rank"])
        for key, value in tensors.items():
            if not key.startswith(prefix):
                continue
            name = key[len(prefix):]
            pieces.setdefault(name, {})[tp_rank] = value
            if "spec." + name in meta:
                specs[name] = tuple(int(v) for v in meta["spec." + name].split(","))
    full = {}
    for name, by_rank in pieces.items():
        ordered = [by_rank[r] for r in sorted(by_rank)]
        if name in specs:
            full[name] = unshard(ordered, specs[name])
        else:  # replicated over tp: every copy must agree
            assert all(t.equal(ordered[0]) for t in ordered), f"{name}: tp copies differ"
            full[name] = ordered[0]
    return full


def compare(label, got, want, tol, failures):
    if got.keys() != want.keys():
        failures.append(f"{label}: names differ: {sorted(got.keys() ^ want.keys())}")
        return 0.0
    worst = 0.0
    for name in want:
        if got[name].shape != want[name].shape:
            failures.append(f"{label} {name}: shape {list(got[name].shape)} != {list(want[name].shape)}")
            continue
        diff = (got[name] - want[name]).abs().max().item()
        worst = max(worst, diff)
        if diff > tol:
            failures.append(f"{label} {name} (max |diff| {diff:.2e} > {tol})")
    return worst


def main(directory):
    init, raw = load_safetensors(os.path.join(directory, "initial.safetensors"))
    meta = {k: int(raw[k]) for k in ("vocab", "hidden", "heads", "kv_heads", "layers", "steps")}
    for k in ("norm_eps", "rope_theta", "rope_scaling_factor", "rope_low_freq_factor",
              "rope_high_freq_factor", "rope_original_max_positions", "lr", "beta1", "beta2",
              "eps", "weight_decay", "clip_grad"):
        meta[k] = float(raw[k])
    losses, norms, grads, final = reference_training(init, meta)
    print(f"pytorch: {meta['steps']} steps, loss {losses[0]:.5f} -> {losses[-1]:.5f}, "
          f"step-1 norm {norms[0]:.4f} (clip {meta['clip_grad']})")
    if not losses[-1] < losses[0] - 0.1 or not norms[0] > meta["clip_grad"]:
        print("MISMATCH: the reference must learn and clip for the comparison to mean anything")
        return 1
    layouts = sorted({os.path.basename(p).split(".rank")[0]
                      for p in glob.glob(os.path.join(directory, "*.rank*.safetensors"))})
    failures = []
    if len(layouts) != 6:
        failures.append(f"expected 6 layouts, found {layouts}")
    for layout in layouts:
        files = [load_safetensors(p) for p in
                 sorted(glob.glob(os.path.join(directory, f"{layout}.rank*.safetensors")))]
        first = next(t for t, _ in files if "losses" in t)
        got_losses, got_norms = first["losses"].tolist(), first["norms"].tolist()
        step1 = abs(got_losses[0] - losses[0])
        if step1 > STEP1_TOL:
            failures.append(f"{layout} step-1 loss |diff| {step1:.2e}")
        grad_diff = compare(f"{layout} step-1 gradient", assemble(files, "grad."), grads,
                            STEP1_TOL, failures)
        loss_rel = max(abs(a - b) / b for a, b in zip(got_losses, losses))
        norm_rel = max(abs(a - b) / b for a, b in zip(got_norms, norms))
        if len(got_losses) != len(losses) or loss_rel > LOSS_TOL or norm_rel > LOSS_TOL:
            failures.append(f"{layout}: losses/norms rel diff {loss_rel:.2e}/{norm_rel:.2e}")
        param_diff = compare(f"{layout} final", assemble(files, "final."), final, PARAM_TOL,
                             failures)
        print(f"{layout:24s} dp={files[0][1]['dp']}: step-1 loss |diff| {step1:.1e}, "
              f"gradients {grad_diff:.1e}; {meta['steps']} steps: loss rel {loss_rel:.1e}, "
              f"norm rel {norm_rel:.1e}, final parameters {param_diff:.1e}")
    if failures:
        print("MISMATCH:\n  " + "\n  ".join(failures))
        return 1
    print(f"OK: {len(layouts)} layouts train like PyTorch's Llama (tolerances: step 1 {STEP1_TOL}, "
          f"losses {LOSS_TOL} relative, final parameters {PARAM_TOL})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
