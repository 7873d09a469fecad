"""Check 9, ablation: `vit ablate --images` (ablate.json) gives the losses and
accuracies PyTorch gives on the same random model and images when parts of
the model are taken out one at a time:
  baseline      the intact model;
  heads[l][h]   in block l, head h's columns h*Dh..(h+1)*Dh of the merged
                heads' output (B, N, H*Dh), before the output projection,
                replaced by zeros (--mode zero) or by their mean over the
                images in the intact model (--mode mean: per token position,
                (N, Dh)); the projection then runs as usual, bias kept;
  attention[l]  block l's attention branch skipped (x + MSA(LN(x)) -> x);
  mlp[l]        block l's MLP branch skipped.
Labels are the intact model's predictions (--images has no labels), the loss
the mean natural-log cross-entropy (within 1e-4), the accuracy the share of
images predicted as labelled (exactly, as a count of images). Each model is
ablated with --mode zero (A explicitly, B by default) and --mode mean.

The Python reference runs in float64. Before comparing accuracies it makes
sure that every image's labelled logit, in every ablation, is away from the
best other logit by more than float32 noise, and that the ablations move the
losses by far more than the tolerance (so a no-op would fail).

Models A (cls pooling, RGB, 3 blocks x 3 heads) and B (mean pooling, gray,
3 blocks x 4 heads of width 12 != 40 / 4), five images each.
"""

import json
import sys

import torch
import torch.nn.functional as F

import vitpy

TOLERANCE = 1e-4
MIN_MARGIN = 1e-4  # labelled logit against the best other, for accuracy to be well defined
IMAGES = 5
KEYS = {"samples", "mode", "baseline", "heads", "attention", "mlp"}


def ablated_logits(model, x, head=None, replacement=None, skip_attention=None, skip_mlp=None):
    """Logits with head (l, h) replaced by `replacement` (broadcast to
    (B, N, Dh)), or block l's attention or MLP branch skipped.
    -> (logits, merged heads' output per block)."""
    h = model.embed(x)
    merged_per_block = []
    for l, block in enumerate(model.blocks):
        merged, _ = block.attn.merged_heads(block.norm1(h))
        merged_per_block.append(merged)
        if head is not None and head[0] == l:
            width = block.attn.head_dim
            merged = merged.clone()
            merged[:, :, head[1] * width:(head[1] + 1) * width] = replacement
        if skip_attention != l:
            h = h + block.attn.proj(merged)
        if skip_mlp != l:
            h = h + block.mlp(block.norm2(h))
    return model.readout(h), merged_per_block


def score(logits, labels):
    """-> (mean cross-entropy, correct count, smallest |labelled - best other| logit gap)."""
    others = logits.clone()
    others.scatter_(1, labels[:, None], -float("inf"))
    gap = (logits.gather(1, labels[:, None])[:, 0] - others.max(1).values).abs().min().item()
    return F.cross_entropy(logits, labels).item(), int((logits.argmax(1) == labels).sum()), gap


def python_ablation(model, x, mode):
    """-> {baseline: (loss, correct), heads: [L][H], attention: [L], mlp: [L]}, smallest logit gap."""
    with torch.no_grad():
        intact, merged = ablated_logits(model, x)
        labels = intact.argmax(1)
        results, gaps = {}, []

        def run(**ablation):
            loss, correct, gap = score(ablated_logits(model, x, **ablation)[0], labels)
            gaps.append(gap)
            return loss, correct

        results["baseline"] = run()
        heads = model.m["heads"]
        results["heads"] = []
        for l, block in enumerate(model.blocks):
            width = block.attn.head_dim
            row = []
            for h in range(heads):
                if mode == "zero":
                    replacement = 0.0
                else:
                    replacement = merged[l][:, :, h * width:(h + 1) * width].mean(0)  # (N, Dh)
                row.append(run(head=(l, h), replacement=replacement))
            results["heads"].append(row)
        depth = len(model.blocks)
        results["attention"] = [run(skip_attention=l) for l in range(depth)]
        results["mlp"] = [run(skip_mlp=l) for l in range(depth)]
    return results, min(gaps)


def losses_and_counts(results, images):
    """ablate.json's or the reference's entries, flattened in one order: -> (losses, correct counts)."""
    entries = [results["baseline"]] + [e for row in results["heads"] for e in row] + results["attention"] + \
        results["mlp"]
    if isinstance(entries[0], dict):
        counts = []
        for e in entries:
            c = e["accuracy"] * images
            counts.append(round(c) if abs(c - round(c)) < 1e-6 else c)
        return [e["loss"] for e in entries], counts
    return [e[0] for e in entries], [e[1] for e in entries]


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    pixels, images = vitpy.write_random_images(work, name, IMAGES, m, generator)
    x = vitpy.normalize(pixels, config["data"]["mean"], config["data"]["std"]).double()
    model64 = vitpy.float64_copy(model)
    with torch.no_grad():
        report.close(f"model {name}: the reference's intact forward is the model's", ablated_logits(model64, x)[0],
                     model64(x)[0], 1e-12)
    what = f"model {name} ({m['pool']} pool, {m['depth']} blocks x {m['heads']} heads, {IMAGES} images)"
    depth, heads = m["depth"], m["heads"]
    expected_all = {}
    for mode in ("zero", "mean"):
        setting = f"{what}, --mode {mode}"
        expected, gap = python_ablation(model64, x, mode)
        expected_all[mode] = expected
        report.equal(f"{setting}: every labelled logit is >= {gap:.3g} from the best other (> {MIN_MARGIN:g})",
                     gap > MIN_MARGIN, True)
        losses, counts = losses_and_counts(expected, IMAGES)
        moved = sorted(abs(v - losses[0]) for v in losses[1:])
        report.equal(f"{setting}: the ablations move the Python loss by {moved[0]:.3g} to {moved[-1]:.3g} "
                     f"(all > 10x tolerance)", moved[0] > 10 * TOLERANCE, True)

        flags = ("--mode", mode) if (mode, name) != ("zero", "b") else ()  # B: zero is the default
        out = work / f"{name}-ablate-{mode}"
        vitpy.run_vit(vit, "ablate", *model_args, "--images", *images, "--out", out, *flags, threads=1)
        result = json.loads((out / "ablate.json").read_text())
        report.equal(f"{setting}: ablate.json keys", set(result), KEYS)
        report.equal(f"{setting}: samples, mode", (result.get("samples"), result.get("mode")), (IMAGES, mode))
        report.equal(f"{setting}: ablate.csv and ablate.png written",
                     [(out / f).is_file() for f in ("ablate.csv", "ablate.png")], [True, True])
        report.equal(f"{setting}: shapes heads [{depth}][{heads}], attention [{depth}], mlp [{depth}]",
                     ([len(r) for r in result["heads"]], len(result["attention"]), len(result["mlp"])),
                     ([heads] * depth, depth, depth))
        theirs_losses, theirs_counts = losses_and_counts(result, IMAGES)
        report.close(f"{setting}: baseline loss vs Python", theirs_losses[0], losses[0], TOLERANCE)
        report.equal(f"{setting}: baseline accuracy is 1 (labels are its predictions)", result["baseline"]["accuracy"],
                     1.0)
        for part, begin, end in (("heads", 1, 1 + depth * heads), ("attention", 1 + depth * heads,
                                                                   1 + depth * heads + depth),
                                 ("mlp", 1 + depth * heads + depth, 1 + depth * heads + 2 * depth)):
            report.close(f"{setting}: {part} losses vs Python", theirs_losses[begin:end], losses[begin:end], TOLERANCE)
            report.equal(f"{setting}: {part} accuracies (images right of {IMAGES}) vs Python {counts[begin:end]}",
                         theirs_counts[begin:end], counts[begin:end])
    # Mean ablation is not zero ablation: a --mode that did nothing would fail.
    zero = losses_and_counts(expected_all["zero"], IMAGES)[0][1:1 + depth * heads]
    mean = losses_and_counts(expected_all["mean"], IMAGES)[0][1:1 + depth * heads]
    change = max(abs(a - b) for a, b in zip(zero, mean))
    report.equal(f"{what}: zero and mean head ablation differ by up to {change:.3g} in Python (> 100x tolerance)",
                 change > 100 * TOLERANCE, True)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "ablate", 9, vitpy.models_a_and_b(check_model, "pycheck-ablate")))
