#!/usr/bin/env python3
"""The matrix-product floor of scripts/bench/vs_pytorch.sh's job: how fast one
epoch could train if a step did nothing but its matrix products.

It runs, for every training step of the epoch, exactly the matrix products
that vit's own step runs for the job's ViT (timm layout, pre-norm, class
token, "pool": "cls"), with the job's shapes, dtype and operand layouts: per
block the forward GEMM of qkv, proj, fc1 and fc2 with its bias (addmm), each
one's input gradient (grad_out @ W) and weight gradient (grad_out^T @ x),
and the six batched products of explicit attention (q k^T, attn v, and their
four gradients); plus the patch embedding as a GEMM over the unfolded
patches (forward and weight gradient: the images need no gradient) and the
head. Nothing else: no LayerNorm, GELU, softmax, cast, optimizer or data.

The last block, as in vit's forward (VisionTransformerImpl::forward, with
AttentionCall::Queries::kClassToken), computes only the class token's rows,
since the head reads nothing else: k and v for all N tokens (a product of
width 2D over the B*N rows, with its input and weight gradients), but q for
the class token alone (B rows of width D), the attention for one query row
per (batch, head) (each of the six products with 1 where the others have N
query rows), and proj, fc1 and fc2 over B rows. In the job's shapes (B 128,
N 65, six blocks) that is 472.4 M multiply-adds an image a step, forward and
backward, 14% fewer than the 548.0 M of six full blocks.
--last-block all-tokens counts six full blocks instead, as timm's step and
the Python loop run them (and as this floor did before 2026-11-27).

With --operands distinct, every product of every layer has operands and an
output of its own, as in training, where each layer's activations and
gradients are tensors of their own and a step's working set (about 700 MiB
for the job at bf16) is far larger than the caches: the products then read
and write memory as vit's do in its step. The default, shared, is the
optimistic bound.

It prints one JSON line in the format of pytorch_train.py, so the bench
script reads its "images_per_sec" as it reads the loop's: the upper bound
on training img/s that these products allow on this machine with this
PyTorch's GEMMs (oneDNN for bf16, OpenBLAS for fp32 on Debian's 1.13). No
training loop on the same LibTorch can go faster than it. The line's
"ms_per_step_by_product" gives each kind of product's share of a step, all
layers' together.

Key letters: B batch, N tokens, D width, H heads, Dh head width, M MLP width.
"""
import argparse
import json
import resource
import sys
import time

import torch

from pytorch_train import add_job_arguments


def step_products(a, dtype, distinct):
    """(label, closure, multiply-adds) triples, one per matrix product of a
    training step.

    Shared (distinct false): products of the same shape share their operands
    and LibTorch's allocator hands each product the output block the last
    one freed, so the working set is one block's and the operands are as warm
    in the caches as they can be, an optimistic bound. Distinct: every
    product reads operands and writes an output of its own."""
    g = a.image_size // a.patch_size
    B, N, D, H, M = a.batch, g * g + 1, a.dim, a.heads, a.mlp_dim
    Dh, T, K = D // H, B * N, a.num_classes
    patch_in = 3 * a.patch_size * a.patch_size
    operands = {}

    def operand(*shape):
        if distinct:
            return torch.randn(*shape).to(dtype)
        if shape not in operands:
            operands[shape] = torch.randn(*shape).to(dtype)
        return operands[shape]

    def product(label, f, *args):
        """(label, f(*args), its multiply-adds), into an output of its own
        when distinct."""
        x, y = args[-2:]  # addmm's bias comes first
        macs = x.numel() * y.shape[-1]
        if not distinct:
            return label, lambda: f(*args), macs
        out = f(*args)
        return label, lambda: f(*args, out=out), macs

    products = []

    def linear(name, rows, fan_in, fan_out, input_grad=True):
        x, w, b = operand(rows, fan_in), operand(fan_out, fan_in), operand(fan_out)
        dy = operand(rows, fan_out)
        products.append(product(name + " forward", torch.addmm, b, x, w.t()))
        if input_grad:
            products.append(product(name + " dx", torch.mm, dy, w))  # grad of the input
        products.append(product(name + " dW", torch.mm, dy.t(), x))  # grad of the weight

    def attention(heads_rows, queries):
        """The six batched products of explicit attention for `queries` query
        rows against all N keys, per (batch, head)."""
        q, d_out = operand(heads_rows, queries, Dh), operand(heads_rows, queries, Dh)
        k, v = operand(heads_rows, N, Dh), operand(heads_rows, N, Dh)
        attn, d_attn = operand(heads_rows, queries, N), operand(heads_rows, queries, N)
        products.extend([
            product("attention q k^T", torch.bmm, q, k.transpose(1, 2)),
            product("attention p v", torch.bmm, attn, v),
            product("attention dp", torch.bmm, d_out, v.transpose(1, 2)),
            product("attention dv", torch.bmm, attn.transpose(1, 2), d_out),
            product("attention dq", torch.bmm, d_attn, k),
            product("attention dk", torch.bmm, d_attn.transpose(1, 2), q),
        ])

    linear("patch", B * g * g, patch_in, D, input_grad=False)
    for block in range(a.depth):
        if block == a.depth - 1 and a.last_block == "class-token":
            linear("qkv", B, D, D)       # q: the class token's row of each image
            linear("qkv", T, D, 2 * D)   # k, v: every token
            attention(B * H, 1)          # (B*H, 1, N) scores
            rows = B                     # proj, fc1, fc2: the class token's row
        else:
            linear("qkv", T, D, 3 * D)
            attention(B * H, N)          # (B*H, N, N) scores
            rows = T
        linear("proj", rows, D, D)
        linear("fc1", rows, D, M)
        linear("fc2", rows, M, D)
    linear("head", B, D, K)
    return products


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_job_arguments(p)
    p.add_argument("--operands", choices=["shared", "distinct"], default="shared")
    p.add_argument("--last-block", choices=["class-token", "all-tokens"], default="class-token",
                   help="the last block's rows: the class token's alone (vit's step) or all")
    a = p.parse_args()
    start = time.perf_counter()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    products = step_products(a, dtype, a.operands == "distinct")
    for _, product, _ in products:  # warm-up: oneDNN compiles its kernels on first use
        product()
    steps = a.train // a.batch
    per_label = {}  # label -> seconds over all steps
    t0 = time.perf_counter()
    for _ in range(steps):
        for label, product, _ in products:
            began = time.perf_counter()
            product()
            per_label[label] = per_label.get(label, 0.0) + time.perf_counter() - began
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "torch": torch.__version__, "model": "gemm-floor", "operands": a.operands,
        "last_block": a.last_block, "multiply_adds_per_image": sum(p[2] for p in products) / a.batch,
        "config": f"torch {torch.__version__.split('+')[0]} products, operands {a.operands}, "
                  f"last block {a.last_block}",
        "precision": a.precision, "batch": a.batch, "images_per_sec": steps * a.batch / seconds,
        "products_per_step": len(products), "ms_per_step": seconds / steps * 1e3,
        "ms_per_step_by_product": {k: round(v / steps * 1e3, 3) for k, v in per_label.items()},
        "wall_s": time.perf_counter() - start,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    sys.exit(main())
