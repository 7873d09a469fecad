"""Check: timm's ViT families open from their hub folders with timm's logits.

For each family (DINOv2 with and without registers, DeiT III, CLIP and
OpenAI's QuickGELU CLIP, SigLIP, a *_reg*_gap_* model, DeiT distilled, and
the plain ViT), timm builds the architecture at depth 2 and a small image
size with 10 classes; its random weights are moved away from their init (so
that LayerScale's gammas, every bias and every norm matter), and
timm.models._hub.save_for_hf writes the folder the hub serves (config.json
with the architecture, model_args and pretrained_cfg, beside
model.safetensors). `vit predict --checkpoint FOLDER --json --precision fp32`
must give timm's logits within 1e-4 of the largest, with the folder's own
preprocessing (pretrained_cfg's mean and std); `vit info --json` must count
timm's parameters exactly; and `vit export --format timm-hub` must write a
folder that timm opens (local-dir:) with the same logits.
"""

import json
import sys

import timm
import torch
from timm.models._hub import save_for_hf

import vitpy

TOLERANCE = 1e-4  # of the largest logit: fp32 through two blocks, far above its rounding
FAMILIES = [  # (architecture, image size): a multiple of the patch, a few patches a side
    ("vit_small_patch16_224", 32),
    ("vit_small_patch14_dinov2", 28),
    ("vit_small_patch14_reg4_dinov2", 28),
    ("deit3_small_patch16_224", 32),
    ("vit_base_patch16_clip_224", 32),
    ("vit_base_patch16_clip_quickgelu_224", 32),
    ("vit_base_patch16_siglip_224", 32),
    ("vit_medium_patch16_reg4_gap_256", 32),
    ("deit_small_distilled_patch16_224", 32),
]


def hub_folder(work, name, size, generator):
    model = timm.create_model(name, pretrained=False, img_size=size, depth=2, num_classes=10).eval()
    vitpy.randomize(model, generator)
    folder = work / name
    save_for_hf(model, str(folder), safe_serialization=True)
    (folder / "pytorch_model.bin").unlink(missing_ok=True)
    return model, folder


def check_family(report, vit, work, name, size, generator):
    model, folder = hub_folder(work, name, size, generator)
    data = json.loads((folder / "config.json").read_text())["pretrained_cfg"]
    m = {"channels": 3, "image_size": size}
    pixels, images = vitpy.write_random_images(work, name, 3, m, generator)
    with torch.no_grad():
        logits = model(vitpy.normalize(pixels, data["mean"], data["std"]))
    results = vitpy.json_output(vitpy.run_vit(vit, "predict", "--checkpoint", folder, "--json",
                                              "--topk", 2, "--precision", "fp32",
                                              "--images", *images))
    what = f"timm {name} (depth 2, {size} px, timm {timm.__version__})"
    report.close(f"{what}: vit predict logits vs timm", [r["logits"] for r in results], logits,
                 TOLERANCE * logits.abs().max().item())
    info = vitpy.json_output(vitpy.run_vit(vit, "info", "--checkpoint", folder, "--json"))
    report.equal(f"{what}: vit info's parameters are timm's", info["parameters"],
                 sum(p.numel() for p in model.parameters()))

    exported = work / f"{name}-export"
    vitpy.run_vit(vit, "export", "--checkpoint", folder, "--format", "timm-hub", "--out", exported)
    reopened = timm.create_model(f"local-dir:{exported}", pretrained=True).eval()
    with torch.no_grad():
        again = reopened(vitpy.normalize(pixels, data["mean"], data["std"]))
    # The same float32 tensors through the same timm code: bit-identical.
    report.close(f"{what}: vit export --format timm-hub opens in timm with the same logits",
                 again, logits, 0.0)


def check(report, vit, work, generator):
    for name, size in FAMILIES:
        check_family(report, vit, work, name, size, generator)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "timm families", 31, check))
