#!/usr/bin/env python3
"""The GPU kernels of one `vit train --profile FILE` run, grouped by what
they do, as a Markdown table of device milliseconds per training step.

Usage: gpu_kernels.py FILE [--top N]
Groups are matched on the kernel's name (cuBLAS, cuDNN's attention,
LayerNorm, GELU, reductions, copies and casts, element-wise); --top also
lists the N kernels with the most time.
"""
import argparse
import json

# (group, substrings of the kernel's name), first match wins.
GROUPS = [
    ("matrix products", ("nvjet", "gemm", "cutlass", "cublas")),
    ("attention (SDPA)", ("sdpa", "flash", "fmha", "attention")),
    ("LayerNorm", ("layer_norm", "GammaBeta")),
    ("GELU", ("Gelu",)),
    ("reductions", ("reduce_kernel",)),
    ("concatenations, copies and casts", ("Cat", "copy")),
    ("optimizer", ("foreach", "fused_adam", "Adam", "multi_tensor")),
    ("element-wise", ("elementwise",)),
]


def group_of(name):
    for group, keys in GROUPS:
        if any(k in name for k in keys):
            return group
    return "other"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("profile")
    p.add_argument("--top", type=int, default=0)
    args = p.parse_args()
    with open(args.profile) as f:
        ops = [o for o in json.load(f)["ops"] if o["name"].startswith("[gpu] ")]
    if not ops:
        raise SystemExit(f"{args.profile}: no GPU kernels (profiled on a machine without a GPU?)")
    totals, calls = {}, {}
    for o in ops:
        g = group_of(o["name"])
        totals[g] = totals.get(g, 0.0) + o["self_us_per_step"] / 1e3
        calls[g] = calls.get(g, 0.0) + o["calls_per_step"]
    print("| kernels | launches per step | ms per step |")
    print("|---|---:|---:|")
    for g in sorted(totals, key=lambda g: -totals[g]):
        print(f"| {g} | {calls[g]:.0f} | {totals[g]:.2f} |")
    print(f"| **all** | {sum(calls.values()):.0f} | **{sum(totals.values()):.2f}** |")
    if args.top:
        print()
        print("| kernel | launches per step | ms per step |")
        print("|---|---:|---:|")
        for o in sorted(ops, key=lambda o: -o["self_us_per_step"])[: args.top]:
            print(f"| `{o['name'][6:90]}` | {o['calls_per_step']:.0f} | "
                  f"{o['self_us_per_step'] / 1e3:.2f} |")


if __name__ == "__main__":
    main()
