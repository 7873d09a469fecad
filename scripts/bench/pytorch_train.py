#!/usr/bin/env python3
"""The PyTorch reference for scripts/bench/vs_pytorch.sh: the same training job
as `vit train` on the same CIFAR-10 binary files, driven from Python.

One epoch of a ViT (timm layout, pre-norm, class token) with AdamW (weight
decay on weight matrices only), linear warmup, label smoothing, gradient
clipping, random crop with reflect padding and flips done on whole batches of
an in-memory uint8 tensor, autocast, then one validation pass. It prints one
JSON line: training images/s (training steps only, measured the way vit's
metrics.jsonl does), wall seconds and peak resident memory.

--model manual   explicit softmax attention (vit's analysis path, and its
                 training path on LibTorch 1.13)
--model sdpa     F.scaled_dot_product_attention (vit's training path on >= 2.0)
--model timm     timm's VisionTransformer, what a user would run instead
--fused-attn on|off   timm's attention through F.scaled_dot_product_attention
                 (timm's default, on) or its explicit softmax (off), set with
                 timm.layers.set_fused_attn before the model is built
--optimizer for-loop|foreach|fused   torch.optim.AdamW's implementation; the
                 default leaves it to torch (on the CPU: the for-loop one)
--compile [MODE] torch.compile the model (PyTorch >= 2.0) in MODE (no value:
                 "default"); --warmup steps run first, untimed, so that the
                 compile stays outside the timed window
--warmup N       train N untimed steps on the epoch's first batches before
                 the timed epoch (default 0; the compiled contenders take 3:
                 the forward and backward graphs compile in the first)
--profile FILE   record steps 11..20 with PyTorch's autograd profiler and write
                 each operator's calls, total and self time per step as JSON,
                 in the format of `vit train --profile` (for
                 scripts/bench/profile_table.py)

Key letters: B batch, C channels, S image side, N tokens, D width, H heads,
Dh head width.
"""
import argparse
import contextlib
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_cifar10(root, limit_train, val_size):
    def read(name):
        raw = np.fromfile(os.path.join(root, name), dtype=np.uint8).reshape(-1, 3073)
        return torch.from_numpy(raw[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(
            raw[:, 0].astype(np.int64))

    parts = [read(f"data_batch_{i}.bin") for i in range(1, 6)]
    images = torch.cat([p[0] for p in parts])
    labels = torch.cat([p[1] for p in parts])
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(0))
    val, train = order[:val_size], order[val_size:val_size + limit_train]
    return images[train], labels[train], images[val], labels[val]


class Attention(nn.Module):
    def __init__(self, dim, heads, fused):
        super().__init__()
        self.heads, self.head_dim, self.fused = heads, dim // heads, fused
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, D = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.fused:
            out = F.scaled_dot_product_attention(q, k, v)  # (B, H, N, Dh)
        else:
            attn = torch.softmax((q @ k.transpose(-2, -1)) * self.head_dim**-0.5, dim=-1,
                                 dtype=torch.float32)
            out = attn.to(v.dtype) @ v
        return self.proj(out.transpose(1, 2).reshape(B, N, D))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_dim, fused):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads, fused)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, a, fused):
        super().__init__()
        grid = a.image_size // a.patch_size
        self.patch_embed = nn.Conv2d(3, a.dim, a.patch_size, stride=a.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, a.dim))
        self.pos_embed = nn.Parameter(torch.randn(1, grid * grid + 1, a.dim) * 0.02)
        self.blocks = nn.ModuleList(Block(a.dim, a.heads, a.mlp_dim, fused) for _ in range(a.depth))
        self.norm = nn.LayerNorm(a.dim, eps=1e-6)
        self.head = nn.Linear(a.dim, a.num_classes)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)  # (B, g*g, D)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def make_model(a):
    if a.model == "timm":
        from timm.layers import set_fused_attn
        from timm.models.vision_transformer import VisionTransformer
        if a.fused_attn is not None:  # read by each Attention when it is built
            set_fused_attn(a.fused_attn == "on")
        return VisionTransformer(img_size=a.image_size, patch_size=a.patch_size, in_chans=3,
                                 num_classes=a.num_classes, embed_dim=a.dim, depth=a.depth,
                                 num_heads=a.heads, mlp_ratio=a.mlp_dim / a.dim, qkv_bias=True,
                                 global_pool="token", class_token=True)
    return ViT(a, fused=a.model == "sdpa")


def augment(batch, padding, generator):
    """uint8 (B, C, S, S): random crop after reflect padding, random flip."""
    B, C, S, _ = batch.shape
    padded = F.pad(batch.float(), (padding,) * 4, mode="reflect")  # (B, C, S+2p, S+2p)
    oy = torch.randint(0, 2 * padding + 1, (B,), generator=generator)
    ox = torch.randint(0, 2 * padding + 1, (B,), generator=generator)
    r = torch.arange(S)
    rows = (oy[:, None] + r)[:, None, :, None]
    cols = (ox[:, None] + r)[:, None, None, :]
    flip = torch.rand(B, generator=generator) < 0.5
    cols = torch.where(flip[:, None, None, None], cols.flip(-1), cols)
    return padded[torch.arange(B)[:, None, None, None], torch.arange(C)[None, :, None, None], rows,
                  cols]


def write_profile(path, profiler, steps):
    ops = [{"name": e.key, "calls_per_step": e.count / steps,
            "total_us_per_step": e.cpu_time_total / steps,
            "self_us_per_step": e.self_cpu_time_total / steps}
           for e in profiler.key_averages()]
    ops.sort(key=lambda o: -o["self_us_per_step"])
    with open(path, "w") as f:
        json.dump({"source": "pytorch " + torch.__version__, "steps": steps, "ops": ops}, f, indent=1)


def adamw_with_decay_on_weights(model, fused=False, implementation=None):
    """AdamW as vit sets it up: weight decay 0.05 on the weight matrices, none
    on biases, norms, the class token and the position embedding. `fused`
    (CUDA, torch >= 2.0) is the single-kernel AdamW a careful GPU user picks;
    `implementation` ("for-loop", "foreach" or "fused", torch >= 2.4 on the
    CPU for fused) names one outright, None leaves the choice to torch."""
    decays = lambda n, p: p.dim() >= 2 and "token" not in n and "pos_embed" not in n
    decay = [p for n, p in model.named_parameters() if decays(n, p)]
    plain = [p for n, p in model.named_parameters() if not decays(n, p)]
    if fused:
        implementation = "fused"
    extra = {"for-loop": {"foreach": False, "fused": False}, "foreach": {"foreach": True},
             "fused": {"fused": True}}.get(implementation, {})
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                              {"params": plain, "weight_decay": 0.0}], lr=1e-3, **extra)


def train_step(model, step_model, optimizer, images, labels, lr, autocast):
    """One step of the job's recipe at learning rate `lr`: forward under
    `autocast()`, the label-smoothed loss in fp32, backward, clipping at 1.0,
    AdamW. Returns the loss, detached and not read (no host sync)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    with autocast():
        logits = step_model(images)
    loss = F.cross_entropy(logits.float(), labels, label_smoothing=0.1)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.detach()


def describe(a, model, optimizer):
    """The contender's exact configuration in words: library versions, the
    attention the model's modules really run, AdamW's implementation, the
    compile mode and the untimed warm-up."""
    words = [f"torch {torch.__version__.split('+')[0]}"]
    if a.model == "timm":
        import timm
        fused = {m.fused_attn for m in model.modules() if hasattr(m, "fused_attn")}
        words = [f"timm {timm.__version__}"] + words + [
            "fused attention " + "/".join("on" if f else "off" for f in sorted(fused))]
    else:
        words.append("SDPA" if a.model == "sdpa" else "explicit attention")
    group = optimizer.param_groups[0]
    words.append("AdamW " + ("fused" if group.get("fused") else "foreach" if group.get("foreach")
                             else "for-loop"))
    words.append(f"torch.compile mode={a.compile}" if a.compile else "eager")
    if a.warmup:
        words.append(f"{a.warmup} untimed warm-up steps")
    return ", ".join(words)


def add_job_arguments(p):
    """The job's precision, batch, threads, training-set size and model shape
    (the defaults are scripts/bench/vs_pytorch.sh's job); gemm_floor.py
    shares them."""
    p.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--train", type=int, default=4160)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--patch-size", type=int, default=4)
    p.add_argument("--dim", type=int, default=192)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--heads", type=int, default=3)
    p.add_argument("--mlp-dim", type=int, default=768)
    p.add_argument("--num-classes", type=int, default=10)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--model", choices=["manual", "sdpa", "timm"], default="manual")
    p.add_argument("--fused-attn", choices=["on", "off"])
    p.add_argument("--optimizer", choices=["for-loop", "foreach", "fused"])
    p.add_argument("--compile", nargs="?", const="default", default=None,
                   choices=["default", "max-autotune", "max-autotune-no-cudagraphs"])
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--val", type=int, default=500)
    p.add_argument("--profile")
    add_job_arguments(p)
    a = p.parse_args()
    start = time.perf_counter()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    train_x, train_y, val_x, val_y = read_cifar10(a.root, a.train, a.val)
    mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1) * 255

    model = make_model(a)
    optimizer = adamw_with_decay_on_weights(model, implementation=a.optimizer)
    step_model = torch.compile(model, mode=a.compile) if a.compile else model
    # PyTorch 1.13 refuses a float32 autocast even when disabled.
    autocast = lambda: (torch.autocast("cpu", dtype=torch.bfloat16) if a.precision == "bf16" else
                        contextlib.nullcontext())

    steps = len(train_x) // a.batch
    order = torch.randperm(len(train_x), generator=generator)
    train_seconds, seen, loss_sum = 0.0, 0, torch.zeros(())
    model.train()
    warmup_start = time.perf_counter()
    for step in range(a.warmup):  # untimed: torch.compile compiles here
        index = order[(step % steps) * a.batch:(step % steps + 1) * a.batch]
        images = (augment(train_x[index], 4, generator) - mean) / std  # (B, C, S, S)
        train_step(model, step_model, optimizer, images, train_y[index], 1e-3 / steps, autocast)
    warmup_seconds = time.perf_counter() - warmup_start
    profile_first, profile_steps, profiler = 10, 10, None
    for step in range(steps):
        if a.profile and step == profile_first:
            profiler = torch.autograd.profiler.profile()
            profiler.__enter__()
        t0 = time.perf_counter()
        index = order[step * a.batch:(step + 1) * a.batch]
        images = (augment(train_x[index], 4, generator) - mean) / std  # (B, C, S, S)
        lr = 1e-3 * (step + 1) / steps  # linear warmup over the epoch
        loss_sum += train_step(model, step_model, optimizer, images, train_y[index], lr, autocast)
        train_seconds += time.perf_counter() - t0
        seen += len(index)
        if profiler is not None and step == profile_first + profile_steps - 1:
            profiler.__exit__(None, None, None)
            write_profile(a.profile, profiler, profile_steps)
            profiler = None

    model.eval()
    correct = 0
    with torch.no_grad(), autocast():
        for i in range(0, len(val_x), a.batch):
            images = (val_x[i:i + a.batch].float() - mean) / std
            correct += int((step_model(images).argmax(1) == val_y[i:i + a.batch]).sum())
    print(json.dumps({
        "torch": torch.__version__, "model": a.model, "config": describe(a, model, optimizer),
        "precision": a.precision, "batch": a.batch, "images_per_sec": seen / train_seconds,
        "warmup_steps": a.warmup, "warmup_s": warmup_seconds,
        "train_loss": float(loss_sum) / steps, "val_acc": correct / len(val_x),
        "wall_s": time.perf_counter() - start,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    sys.exit(main())
