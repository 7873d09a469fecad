#!/usr/bin/env python3
"""The timm reference for scripts/bench/gpu.sh: the same training job as
`vit train` on Fashion-MNIST (or on synthetic images of any size), on the
same GPU, written the way a careful PyTorch user would write it.

timm's VisionTransformer of the given shape (class token, mean pooling over
the patch tokens after the final norm, as vit's "pool": "mean"), AdamW with
weight decay on the weight matrices only (fused=True on CUDA: one kernel for
all parameters, the fastest AdamW torch has), warmup then cosine, label smoothing
0.1, gradient clipping at 1.0, autocast, and the crop (zero padding) and flip
done as batched GPU ops on the uint8 dataset, which lives on the GPU. No host
sync inside the step: the loss is summed on the GPU and read once.

--compile MODE runs the model under torch.compile: "default", or
"reduce-overhead" (CUDA graphs of the compiled forward and backward, the
mode that gives torch what vit's train.cuda_graph gives vit), or
"max-autotune" (that, plus Triton's search over GEMM kernels; compiling takes
minutes). The compile happens in the untimed warmup steps.

--synthetic N trains on N seeded random uint8 images of --channels x
--image-size squared with random labels below --num-classes, made on the
device, as vit's data.dataset "synthetic" does (the ViT-S/16 row at 224 px).

--grad-checkpointing turns on timm's activation checkpointing of every block
(model.set_grad_checkpointing()), vit's train.grad_checkpointing=true.

It trains --warmup steps, then times --steps steps between two
synchronisations and prints one JSON line: images/s, ms per step, peak GPU
memory over the whole run (torch.cuda.max_memory_allocated) and the final
mean loss. --device cpu runs the same job on the CPU (for
checking this script where there is no GPU; its speed means nothing then).

Key letters: B batch, C channels, S image side, K classes.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from pytorch_train import add_job_arguments, adamw_with_decay_on_weights, train_step


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def make_model(a):
    from timm.models.vision_transformer import VisionTransformer
    return VisionTransformer(img_size=a.image_size, patch_size=a.patch_size, in_chans=a.channels,
                             num_classes=a.num_classes, embed_dim=a.dim, depth=a.depth,
                             num_heads=a.heads, mlp_ratio=a.mlp_dim / a.dim, qkv_bias=True,
                             class_token=True, global_pool="avg", fc_norm=False)


def crop_flip(batch, padding):
    """uint8 (B, C, S, S) on the device: a random crop of the zero-padded
    images and a random horizontal flip, as vit's data.augment does."""
    B, C, S, _ = batch.shape
    P = S + 2 * padding
    padded = F.pad(batch, (padding,) * 4)  # (B, C, P, P)
    oy = torch.randint(0, 2 * padding + 1, (B, 1, 1, 1), device=batch.device)
    ox = torch.randint(0, 2 * padding + 1, (B, 1, 1, 1), device=batch.device)
    flip = torch.rand(B, 1, 1, 1, device=batch.device) < 0.5
    r = torch.arange(S, device=batch.device)
    rows = (oy + r.view(1, 1, S, 1)).expand(B, C, S, P)
    cols = torch.where(flip, ox + S - 1 - r, ox + r).expand(B, C, S, S)
    return padded.gather(2, rows).gather(3, cols)  # (B, C, S, S)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                   help="folder with train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz")
    p.add_argument("--device", default="cuda")
    p.add_argument("--compile", nargs="?", const="default", default=None,
                   choices=["default", "reduce-overhead", "max-autotune"],
                   help="torch.compile the model in this mode (no value: default)")
    p.add_argument("--synthetic", type=int, default=0,
                   help="train on N random images of the model's size instead of --data")
    p.add_argument("--warmup", type=int, default=30, help="untimed steps first")
    p.add_argument("--steps", type=int, default=200, help="timed steps")
    p.add_argument("--channels", type=int, default=1)
    p.add_argument("--grad-checkpointing", action="store_true",
                   help="recompute every block in the backward pass (set_grad_checkpointing)")
    p.add_argument("--crop-padding", type=int, default=1)
    add_job_arguments(p)  # precision, batch and the model's shape; the demo model's here
    p.set_defaults(batch=512, image_size=28, patch_size=7, dim=128, depth=6, heads=4, mlp_dim=256)
    a = p.parse_args()
    device = torch.device(a.device)
    torch.manual_seed(0)
    if a.synthetic > 0:
        generator = torch.Generator(device=device).manual_seed(0)
        images = torch.randint(0, 256, (a.synthetic, a.channels, a.image_size, a.image_size),
                               dtype=torch.uint8, device=device, generator=generator)
        labels = torch.randint(0, a.num_classes, (a.synthetic,), device=device,
                               generator=generator)
        mean, std = 0.5 * 255, 0.2898 * 255
    else:
        images = torch.from_numpy(read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
                                  .copy()).unsqueeze(1).to(device)  # uint8 (N, 1, 28, 28)
        labels = torch.from_numpy(read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))
                                  .astype(np.int64)).to(device)
        mean, std = 0.2860 * 255, 0.3530 * 255
    if len(images) <= a.batch:
        sys.exit(f"timm_gpu_train: {len(images)} images, need more than --batch {a.batch}")

    model = make_model(a).to(device)
    model.set_grad_checkpointing(a.grad_checkpointing)
    optimizer = adamw_with_decay_on_weights(model, fused=device.type == "cuda")
    step_model = torch.compile(model, mode=a.compile) if a.compile else model
    graphs = a.compile in ("reduce-overhead", "max-autotune") and device.type == "cuda"
    autocast = lambda: torch.autocast(device.type, dtype=torch.bfloat16,
                                      enabled=a.precision == "bf16")
    total = a.warmup + a.steps
    warmup_steps = max(1, total // 10)

    def lr_at(step):  # linear warmup, then cosine to zero
        if step < warmup_steps:
            return 1e-3 * (step + 1) / warmup_steps
        return 0.5e-3 * (1 + math.cos(math.pi * (step - warmup_steps) / (total - warmup_steps)))

    loss_sum = torch.zeros((), device=device)
    order = torch.randperm(len(images), device=device)
    model.train()
    for step in range(total):
        if step == a.warmup:
            if device.type == "cuda":  # the peak stays the whole run's: the CUDA graphs'
                torch.cuda.synchronize()   # memory pools are allocated in the warmup
            start = time.perf_counter()
            loss_sum.zero_()
        begin = (step * a.batch) % (len(images) - a.batch)
        index = order[begin:begin + a.batch]
        batch = (crop_flip(images[index], a.crop_padding).float() - mean) / std
        if graphs:  # a new step: the graphs' outputs of the last one may be overwritten
            torch.compiler.cudagraph_mark_step_begin()
        loss_sum += train_step(model, step_model, optimizer, batch, labels[index], lr_at(step),
                               autocast)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "torch": torch.__version__, "model": "timm" + (f"+compile:{a.compile}" if a.compile else "")
        + ("+checkpointing" if a.grad_checkpointing else ""),
        "optimizer": "AdamW" + ("(fused)" if device.type == "cuda" else ""),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "precision": a.precision, "batch": a.batch, "steps": a.steps,
        "images_per_sec": a.steps * a.batch / seconds, "ms_per_step": 1e3 * seconds / a.steps,
        "peak_gpu_mib": (torch.cuda.max_memory_allocated(device) / 2**20
                         if device.type == "cuda" else None),
        "train_loss": float(loss_sum) / a.steps}))


if __name__ == "__main__":
    sys.exit(main())
