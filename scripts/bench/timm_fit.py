#!/usr/bin/env python3
"""timm's side of scripts/bench/fit.sh: training steps of a timm ViT on the
CPU in fp32, eager, with its own gradient checkpointing
(model.set_grad_checkpointing()) and gradient accumulation as timm's train.py
does it (each micro-batch's loss divided by the count, one AdamW step).

It prints one JSON line: the median seconds of an optimizer step (the first
step, which allocates, left out) and the steps' peak resident memory in MiB,
measured as vit measures it: Linux's VmHWM, reset (/proc/self/clear_refs)
once the model, optimizer and data are made.

  timm_fit.py --model vit_small_patch16_224 --batch 64 --accum 1 \
      [--checkpointing] [--steps 4] [--threads N]
"""
import argparse
import json
import statistics
import time

import timm
import torch
import torch.nn.functional as F


def resident_peak_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="vit_small_patch16_224")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--checkpointing", action="store_true")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = timm.create_model(a.model, num_classes=1000, drop_path_rate=0.1)
    model.set_grad_checkpointing(a.checkpointing)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, foreach=True)
    micro = a.batch // a.accum
    images = torch.randn(a.batch, 3, 224, 224)
    labels = torch.randint(0, 1000, (a.batch,))
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        for m in range(a.accum):
            rows = slice(m * micro, (m + 1) * micro)
            loss = F.cross_entropy(model(images[rows]), labels[rows], label_smoothing=0.1)
            (loss / a.accum).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    print(json.dumps({"step_s": statistics.median(times[1:]), "peak_mib": resident_peak_mib(),
                      "torch": torch.__version__, "timm": timm.__version__}))


if __name__ == "__main__":
    main()
