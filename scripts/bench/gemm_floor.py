#!/usr/bin/env python3
"""The matrix-product floor of scripts/bench/vs_pytorch.sh's job: how fast one
epoch could train if a step did nothing but its matrix products.

It runs, for every training step of the epoch, exactly the matrix products
that autograd runs for the job's ViT (timm layout, pre-norm, class token),
with the job's shapes, dtype and operand layouts: per block the forward GEMM
of qkv, proj, fc1 and fc2 with its bias (addmm), each one's input gradient
(grad_out @ W) and weight gradient (grad_out^T @ x), and the six batched
products of explicit attention (q k^T, attn v, and their four gradients);
plus the patch embedding as a GEMM over the unfolded patches (forward and
weight gradient: the images need no gradient) and the head. Nothing else:
no LayerNorm, GELU, softmax, cast, optimizer or data.

It prints one JSON line in the format of pytorch_train.py, so the bench
script reads its "images_per_sec" as it reads the loop's: the upper bound
on training img/s that these products allow on this machine with this
PyTorch's GEMMs (oneDNN for bf16, OpenBLAS for fp32 on Debian's 1.13). No
training loop on the same LibTorch can go faster than it.

Key letters: B batch, N tokens, D width, H heads, Dh head width, M MLP width.
"""
import argparse
import json
import resource
import sys
import time

import torch

from pytorch_train import add_job_arguments


def step_products(a, dtype):
    """Closures, one per matrix product of a training step.

    Products of the same shape share their operands, as the layers of a
    block share their activation buffers' sizes: the working set is one
    block's, so the operands are as warm in the caches as they can be in
    training, and the bound is an optimistic one."""
    g = a.image_size // a.patch_size
    B, N, D, H, M = a.batch, g * g + 1, a.dim, a.heads, a.mlp_dim
    Dh, T, K = D // H, B * N, a.num_classes
    patch_in = 3 * a.patch_size * a.patch_size
    operands = {}

    def operand(*shape):
        if shape not in operands:
            operands[shape] = torch.randn(*shape).to(dtype)
        return operands[shape]

    products = []

    def linear(rows, fan_in, fan_out, input_grad=True):
        x, w, b = operand(rows, fan_in), operand(fan_out, fan_in), operand(fan_out)
        dy = operand(rows, fan_out)
        products.append(lambda: torch.addmm(b, x, w.t()))  # forward
        if input_grad:
            products.append(lambda: torch.mm(dy, w))  # grad of the input
        products.append(lambda: torch.mm(dy.t(), x))  # grad of the weight

    linear(B * g * g, patch_in, D, input_grad=False)  # patch embedding
    for _ in range(a.depth):
        linear(T, D, 3 * D)  # qkv
        q = k = v = d_out = operand(B * H, N, Dh)
        attn = d_attn = operand(B * H, N, N)
        products += [
            lambda: torch.bmm(q, k.transpose(1, 2)),  # scores
            lambda: torch.bmm(attn, v),  # attention-weighted values
            lambda: torch.bmm(d_out, v.transpose(1, 2)),  # grad of attn
            lambda: torch.bmm(attn.transpose(1, 2), d_out),  # grad of v
            lambda: torch.bmm(d_attn, k),  # grad of q
            lambda: torch.bmm(d_attn.transpose(1, 2), q),  # grad of k
        ]
        linear(T, D, D)  # proj
        linear(T, D, M)  # fc1
        linear(T, M, D)  # fc2
    linear(B, D, K)  # head
    return products


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_job_arguments(p)
    a = p.parse_args()
    start = time.perf_counter()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    products = step_products(a, torch.bfloat16 if a.precision == "bf16" else torch.float32)
    for product in products:  # warm-up: oneDNN compiles its kernels on first use
        product()
    steps = a.train // a.batch
    t0 = time.perf_counter()
    for _ in range(steps):
        for product in products:
            product()
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "torch": torch.__version__, "model": "gemm-floor", "precision": a.precision,
        "batch": a.batch, "images_per_sec": steps * a.batch / seconds,
        "products_per_step": len(products), "ms_per_step": seconds / steps * 1e3,
        "wall_s": time.perf_counter() - start,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    sys.exit(main())
