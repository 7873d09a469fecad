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
from pathlib import Path

import torch

import vitpy

TOLERANCE = 1e-4  # measured: below 5e-5 px, nearly all of it vit's rounding to 4 decimals

MODEL_A = {"image_size": 32, "patch_size": 4, "channels": 3, "num_classes": 5, "dim": 48, "depth": 3,
           "heads": 3, "mlp_dim": 96, "pool": "cls", "qkv_bias": True, "layer_norm_eps": 1e-6}
MODEL_B = {"image_size": 30, "patch_size": 6, "channels": 1, "num_classes": 4, "dim": 40, "depth": 3,
           "heads": 4, "dim_head": 12, "mlp_dim": 64, "pool": "mean", "qkv_bias": False,
           "layer_norm_eps": 1e-5}
IMAGES = 4


def full_config(name, model, mean, std):
    return {"name": name, "model": model, "data": {"dataset": "image-folder", "mean": mean, "std": std}}


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    model = vitpy.VisionTransformer(m).eval()
    vitpy.randomize(model, generator)
    metadata, model_args = None, ()
    if with_metadata:
        metadata = {"format": "pt", "vit_config": json.dumps(config)}
    else:  # a plain timm file: the architecture comes from --config
        config_path = work / f"{name}.json"
        config_path.write_text(json.dumps(config))
        model_args = ("--config", config_path)
    weights = work / f"{name}.safetensors"
    vitpy.write_safetensors(weights, model.state_dict(), metadata)

    pixels, arrays = vitpy.random_images(IMAGES, m["channels"], m["image_size"], generator)
    images = []
    for i, array in enumerate(arrays):
        images.append(work / f"{name}-{i}.png")
        vitpy.write_png(images[-1], array)
    with torch.no_grad():
        _, attentions = model(vitpy.normalize(pixels, config["data"]["mean"], config["data"]["std"]))

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
        vitpy.run_vit(vit, "attn-distance", "--checkpoint", weights, *model_args, "--images", *images, "--out", out,
                      *flag)
        result = json.loads((out / "attn_distance.json").read_text())
        setting = f"{what}, renormalize {renormalize}"
        report.equal(f"{setting}: attn_distance.json settings",
                     (result["patch_size"], result["grid"], result["samples"], result["renormalize"]),
                     (m["patch_size"], grid, IMAGES, renormalize))
        report.close(f"{setting}: vit attn-distance (layers x heads, px) vs Python", result["distance"], expected,
                     TOLERANCE)


def main():
    args = vitpy.parse_args(__doc__)
    work = Path(args.workdir)
    generator = torch.Generator().manual_seed(3)
    report = vitpy.Report("attention distance")
    check_model(report, args.vit, work, "a", full_config("pycheck-distance-a", MODEL_A, [0.5, 0.4, 0.3],
                                                         [0.25, 0.3, 0.2]), True, generator)
    check_model(report, args.vit, work, "b", full_config("pycheck-distance-b", MODEL_B, [0.45], [0.22]), False,
                generator)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
