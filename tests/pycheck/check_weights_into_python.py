"""Check 4, weights into Python: a model trained by `vit train` on a small
image-folder dataset (PNGs written here) and written by `vit export` loads
into the Python timm-layout model with strict key matching, and predicts the
same classes and logits (within 1e-4) as `vit predict` on the .pt checkpoint.
"""

import json
import sys

import torch

import vitpy

TOLERANCE = 1e-4
CLASSES = ["blue", "green", "red"]  # image-folder classes: the sorted folder names
SIDE = 32

MODEL = {"image_size": SIDE, "patch_size": 8, "channels": 3, "num_classes": len(CLASSES), "dim": 32,
         "depth": 2, "heads": 2, "mlp_dim": 64, "pool": "cls", "qkv_bias": True, "layer_norm_eps": 1e-6}


def coloured_images(count, colour, generator):
    """uint8 HWC noise images with channel `colour` brightened: learnable classes."""
    pixels, arrays = vitpy.random_images(count, 3, SIDE, generator)
    pixels[:, colour] = (pixels[:, colour].int() // 2 + 128).to(torch.uint8)
    return pixels, [p.permute(1, 2, 0).numpy() for p in pixels]


def write_dataset(root, generator):
    for label, name in enumerate(CLASSES):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        _, arrays = coloured_images(8, 2 - label, generator)  # blue -> channel 2
        for i, array in enumerate(arrays):
            vitpy.write_png(folder / f"{i}.png", array)


def train_and_export(vit, work):
    config = {
        "name": "pycheck-train", "seed": 3, "model": MODEL,
        "data": {"dataset": "image-folder", "root": str(work / "data"), "val_size": 6,
                 "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25], "cache_dir": str(work / "cache"),
                 "augment": {"crop_padding": 0, "hflip": False}},
        "train": {"batch_size": 6, "epochs": 3, "lr": 3e-3, "warmup_epochs": 0, "weight_decay": 0.0,
                  "early_stop_patience": 0, "precision": "fp32"},
    }
    (work / "train.json").write_text(json.dumps(config))
    vitpy.run_vit(vit, "train", "--config", work / "train.json", "--out", work / "run", cwd=work)
    vitpy.run_vit(vit, "export", "--checkpoint", work / "run" / "best.pt", "--out", work / "exported.safetensors")
    return config


def check(report, vit, work, generator):
    write_dataset(work / "data", generator)
    config = train_and_export(vit, work)

    state, metadata, dtypes = vitpy.read_safetensors(work / "exported.safetensors")
    report.equal("every exported tensor is F32", sorted(set(dtypes.values())), ["F32"])
    stored = json.loads(metadata["vit_config"])
    report.equal("__metadata__ vit_config holds the trained architecture",
                 {k: stored["model"][k] for k in MODEL}, MODEL)
    report.equal("__metadata__ class_names", json.loads(metadata.get("class_names", "null")), CLASSES)

    model = vitpy.VisionTransformer(stored["model"]).eval()
    missing, unexpected = model.load_state_dict(state, strict=False)
    report.equal("timm key names (missing, unexpected)", (missing, unexpected), ([], []))

    images, all_pixels = [], []
    for label in range(len(CLASSES)):
        pixels, arrays = coloured_images(2, 2 - label, generator)
        images += vitpy.write_pngs(work, f"query-{label}", arrays)
        all_pixels.append(pixels)
    logits, _ = vitpy.run_model(model, torch.cat(all_pixels), config["data"])
    out = vitpy.run_vit(vit, "predict", "--json", "--topk", len(CLASSES), "--checkpoint",
                        work / "run" / "best.pt", "--images", *images)
    results = vitpy.json_output(out)
    report.close("vit predict (best.pt) logits vs Python on the export", [r["logits"] for r in results], logits,
                 TOLERANCE)
    ours = [r["top"][0]["class"] for r in results]
    report.equal(f"predicted classes {ours}", ours, [CLASSES[i] for i in logits.argmax(1).tolist()])


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "weights into Python", 4, check))
