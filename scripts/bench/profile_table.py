#!/usr/bin/env python3
"""Two operator profiles side by side, as a Markdown table: the files that
`vit train --profile FILE` and `scripts/bench/pytorch_train.py --profile FILE`
write (each operator's calls, total and self time per training step).

Usage: profile_table.py A.json B.json [--top N]
Rows are the N operators with the most self time in either profile, then the
rest summed, then the step total (the sum of self times).
"""
import argparse
import json


def load(path):
    with open(path) as f:
        d = json.load(f)
    return d["source"], {o["name"]: o for o in d["ops"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args()
    (name_a, a), (name_b, b) = load(args.a), load(args.b)
    self_ms = lambda ops, k: ops[k]["self_us_per_step"] / 1e3 if k in ops else 0.0
    calls = lambda ops, k: ops[k]["calls_per_step"] if k in ops else 0.0
    keys = sorted(set(a) | set(b), key=lambda k: -max(self_ms(a, k), self_ms(b, k)))
    top, rest = keys[:args.top], keys[args.top:]
    print(f"| operator | {name_a}: calls | self ms | {name_b}: calls | self ms | difference ms |")
    print("|---|---|---|---|---|---|")
    for k in top:
        print(f"| `{k}` | {calls(a, k):.0f} | {self_ms(a, k):.2f} | {calls(b, k):.0f} | "
              f"{self_ms(b, k):.2f} | {self_ms(a, k) - self_ms(b, k):+.2f} |")
    ra, rb = sum(self_ms(a, k) for k in rest), sum(self_ms(b, k) for k in rest)
    ca, cb = sum(calls(a, k) for k in rest), sum(calls(b, k) for k in rest)
    print(f"| {len(rest)} others | {ca:.0f} | {ra:.2f} | {cb:.0f} | {rb:.2f} | {ra - rb:+.2f} |")
    ta, tb = sum(self_ms(a, k) for k in a), sum(self_ms(b, k) for k in b)
    na, nb = sum(calls(a, k) for k in a), sum(calls(b, k) for k in b)
    print(f"| **step** | {na:.0f} | **{ta:.2f}** | {nb:.0f} | **{tb:.2f}** | {ta - tb:+.2f} |")


if __name__ == "__main__":
    main()
