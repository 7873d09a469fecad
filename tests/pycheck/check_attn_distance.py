"""Check 3, attention distance: random timm-layout weights and images written
here give the same per-layer, per-head distances in `vit attn-distance
--images` (attn_distance.json) as the ViT paper's formula applied to the
Python model's attention, averaged over the images (within 1e-4 px; vit
rounds to 4 decimals). Each model is measured with the raw rows and with
--renormalize (rows divided by their sum once the class token is dropped).

Two models: A, class-token pooling on an 8x8 grid of 4 px patches, RGB, with
vit_config in __metadata__; B, mean pooling on a 5x5 grid of 6 px patches, no
qkv bias, head width != dim / heads, gray, a plain timm file given --config.
"""

import json
import sys

import vitpy

TOLERANCE = 1e-4  # measured: below 5e-5 px, nearly all of it vit's rounding to 4 decimals
IMAGES = 4


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    pixels, images = vitpy.write_random_images(work, name, IMAGES, m, generator)
    _, attentions = vitpy.run_model(model, pixels, config["data"])

    grid = m["image_size"] // m["patch_size"]
    what = f"model {name} ({grid}x{grid} grid of {m['patch_size']} px patches, {IMAGES} images)"
    raw = vitpy.mean_attention_distance(attentions, m["patch_size"], renormalize=False)
    renormalized = vitpy.mean_attention_distance(attentions, m["patch_size"], renormalize=True)
    # The class token takes a visible share of the rows, so the two settings
    # differ by far more than the tolerance: a flag that did nothing would fail.
    change = (renormalized - raw).abs().max().item()
    report.equal(f"{what}: --renormalize moves the Python distances by up to {change:.3g} px "
                 f"(> 100x tolerance)", change > 100 * TOLERANCE, True)
    for renormalize, expected in ((False, raw), (True, renormalized)):
        flag = ("--renormalize",) if renormalize else ()
        out = work / f"{name}-{'renormalized' if renormalize else 'raw'}"
        vitpy.run_vit(vit, "attn-distance", *model_args, "--images", *images, "--out", out, *flag)
        result = json.loads((out / "attn_distance.json").read_text())
        setting = f"{what}, renormalize {renormalize}"
        report.equal(f"{setting}: attn_distance.json settings",
                     (result["patch_size"], result["grid"], result["samples"], result["renormalize"]),
                     (m["patch_size"], grid, IMAGES, renormalize))
        report.close(f"{setting}: vit attn-distance (layers x heads, px) vs Python", result["distance"], expected,
                     TOLERANCE)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "attention distance", 3, vitpy.models_a_and_b(check_model, "pycheck-distance")))
