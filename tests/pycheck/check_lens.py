"""Check 8, logit lens: `vit lens --images` (lens.json) reads every layer's
residual stream out as the last one is read, as PyTorch does on the same
random model and images:
  x_0 = cat(class token, patch embeddings) + position embeddings, x_l the
  stream after block l; logits_l = head(pool(norm(x_l))) with the final norm,
  the model's pooling (class token, or the mean of the patch tokens) and its
  head: [L+1][images][classes], within 1e-4;
  agreement_l = the share of images whose top-1 at layer l is the top-1 at
  layer L, exactly (as a count of images);
  token norms: the L2 norms of every patch token of x_l (class token left
  out) over all images; their median and 99th percentile (linear
  interpolation, torch.quantile) and maximum, within 1e-4;
  accuracy null (there are no labels with --images), pool, layers, samples
  and the exact key set.
The Python reference runs in float64. Before comparing agreements it makes
sure every image's top-1 logit at every layer leads the runner-up by more
than float32 noise, so a mismatch there is a real bug.

Models A (cls pooling, RGB) and B (mean pooling, gray, head width != dim /
heads), five and four images.
"""

import json
import sys

import torch

import vitpy

TOLERANCE = 1e-4
MIN_MARGIN = 1e-4  # top-1 against runner-up, for agreement to be well defined
KEYS = {"pool", "layers", "samples", "logits", "accuracy", "agreement", "token_norms", "registers",
        "register_norms"}
IMAGES = {"a": 5, "b": 4}


def python_lens(model, x):
    """-> logits (L+1, B, K), norms {median, p99, max} (L+1,), per-layer top-1 margins (L+1,)."""
    with torch.no_grad():
        streams = model.streams(x)
        logits = torch.stack([model.readout(s) for s in streams])
        norms = [s[:, 1:].norm(dim=-1).flatten() for s in streams]
    top2 = logits.topk(2, dim=-1).values
    return (logits,
            {"median": torch.stack([torch.quantile(n, 0.5) for n in norms]),
             "p99": torch.stack([torch.quantile(n, 0.99) for n in norms]),
             "max": torch.stack([n.max() for n in norms])},
            (top2[..., 0] - top2[..., 1]).amin(dim=1))


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    count = IMAGES[name]
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    pixels, images = vitpy.write_random_images(work, name, count, m, generator)
    x = vitpy.normalize(pixels, config["data"]["mean"], config["data"]["std"])
    model64 = vitpy.float64_copy(model)
    logits, norms, margins = python_lens(model64, x.double())
    with torch.no_grad():
        final, _ = model64(x.double())
    what = f"model {name} ({m['pool']} pool, {m['depth']} blocks, {count} images)"
    # The reference's last layer must be the model's own output.
    report.close(f"{what}: Python lens at layer L is the model's logits", logits[-1], final, 1e-12)

    out = work / f"{name}-lens"
    vitpy.run_vit(vit, "lens", *model_args, "--images", *images, "--out", out, threads=1)
    result = json.loads((out / "lens.json").read_text())
    report.equal(f"{what}: lens.json keys", set(result), KEYS)
    report.equal(f"{what}: pool, layers, samples, accuracy, registers and their norms",
                 (result.get("pool"), result.get("layers"), result.get("samples"), result.get("accuracy"),
                  result.get("registers"), result.get("register_norms")),
                 (m["pool"], m["depth"] + 1, count, None, 0, None))
    report.equal(f"{what}: lens.csv and lens.png written",
                 [(out / f).is_file() for f in ("lens.csv", "lens.png")], [True, True])
    report.close(f"{what}: logits per layer vs Python", result["logits"], logits, TOLERANCE)
    for key in ("median", "p99", "max"):
        report.close(f"{what}: patch-token norm {key} per layer vs Python", result["token_norms"][key], norms[key],
                     TOLERANCE)

    smallest = margins.min().item()
    report.equal(f"{what}: every top-1 leads its runner-up by >= {smallest:.3g} (> {MIN_MARGIN:g})",
                 smallest > MIN_MARGIN, True)
    top1 = logits.argmax(dim=-1)  # (L+1, B)
    agree = (top1 == top1[-1]).sum(dim=1).tolist()
    theirs = [a * count for a in result["agreement"]]
    report.equal(f"{what}: agreement with layer L (images out of {count}) vs Python {agree}",
                 [round(t) if abs(t - round(t)) < 1e-6 else t for t in theirs], agree)
    # A lens that ignored the layer would agree everywhere: the check must be able to tell.
    report.equal(f"{what}: some layer's top-1 differs from layer L's in Python", min(agree) < count, True)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "lens", 8, vitpy.models_a_and_b(check_model, "pycheck-lens")))
