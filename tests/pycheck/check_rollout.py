"""Check 2, rollout: random timm-layout weights and images written here give the
same masks in `vit rollout --images` (rollout.json) as the Python rollout of
the Python model's attention (within 5e-6; vit rounds to 6 decimals).

Two models, each mapped with mean fusion and with max fusion plus a discard
ratio:
  A: class-token pooling (the map is the class token's row), qkv bias, RGB,
     with vit_config in __metadata__;
  B: mean pooling (the map is the mean of the patch rows), no qkv bias, head
     width != dim / heads, gray, a plain timm file given --config.

With a discard ratio, vit (float32 attention) and Python must drop the same
links; the check first makes sure the k-th and (k+1)-th weakest links lie
further apart than float32 noise, so a mismatch there is a real bug.
"""

import json
import sys

import vitpy

TOLERANCE = 5e-6  # measured: below 1e-6 (6-decimal rounding plus float32 attention)
# float32 attention in vit and in Python differ by ~1e-7; a gap above this
# cannot be closed by that noise.
MIN_DISCARD_GAP = 1e-5

# (fusion, discard ratio) pairs every model is mapped with.
SETTINGS = [("mean", 0.0), ("max", 0.9)]


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    pixels, images = vitpy.write_random_images(work, name, 3, m, generator)
    _, attentions = vitpy.run_model(model, pixels, config["data"])

    source = "class_token" if m["pool"] == "cls" else "patch_mean"
    grid = m["image_size"] // m["patch_size"]
    what = f"model {name} ({m['pool']} pool, {grid}x{grid} grid)"
    for fusion, ratio in SETTINGS:
        setting = f"{what}, {fusion} fusion, discard {ratio:g}"
        if ratio > 0:
            gap = vitpy.smallest_gap_at_threshold(attentions, fusion, ratio)
            report.equal(f"{setting}: weakest kept and dropped links {gap:.3g} apart (> {MIN_DISCARD_GAP:g})",
                         gap > MIN_DISCARD_GAP, True)
        out = work / f"{name}-{fusion}"
        vitpy.run_vit(vit, "rollout", *model_args, "--images", *images, "--out", out, "--head-fusion", fusion,
                      "--discard-ratio", ratio)
        result = json.loads((out / "rollout.json").read_text())
        report.equal(f"{setting}: rollout.json settings",
                     (result["grid"], result["head_fusion"], result["discard_ratio"], result["source"]),
                     ([grid, grid], fusion, ratio, source))
        report.equal(f"{setting}: images in order", [r["image"] for r in result["maps"]], [str(p) for p in images])
        expected = vitpy.rollout_masks(attentions, fusion, ratio, source)
        if ratio > 0:  # else a discard that silently did nothing would pass
            change = (expected - vitpy.rollout_masks(attentions, fusion, 0.0, source)).abs().max().item()
            report.equal(f"{setting}: the discard moves the Python masks by {change:.3g} (> 100x tolerance)",
                         change > 100 * TOLERANCE, True)
        report.close(f"{setting}: vit rollout masks vs Python", [r["mask"] for r in result["maps"]], expected,
                     TOLERANCE)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "rollout", 2, vitpy.models_a_and_b(check_model, "pycheck-rollout")))
