"""Check 1, weights from Python: random timm-layout weights written here give
the same logits in `vit predict --json` as in the Python model (within 1e-4).

Two models cover the architecture's options:
  A: class-token pooling, qkv bias, RGB, F32, with vit_config and class names
     in __metadata__ (what `vit export` writes);
  B: mean pooling, no qkv bias, head width != dim / heads, gray, LayerNorm
     eps 1e-5, F16 tensors and an identity LayerScale, with no metadata at
     all (a plain timm file): the architecture comes from --config.
"""

import json
import sys
from pathlib import Path

import torch

import vitpy

TOLERANCE = 1e-4

MODEL_A = {"image_size": 32, "patch_size": 4, "channels": 3, "num_classes": 5, "dim": 48, "depth": 3,
           "heads": 3, "mlp_dim": 96, "pool": "cls", "qkv_bias": True, "layer_norm_eps": 1e-6}
MODEL_B = {"image_size": 24, "patch_size": 6, "channels": 1, "num_classes": 4, "dim": 40, "depth": 2,
           "heads": 4, "dim_head": 12, "mlp_dim": 64, "pool": "mean", "qkv_bias": False,
           "layer_norm_eps": 1e-5}


def full_config(name, model, mean, std):
    return {"name": name, "model": model, "data": {"dataset": "image-folder", "mean": mean, "std": std}}


def predict(vit, checkpoint, images, extra=()):
    out = vitpy.run_vit(vit, "predict", "--json", "--checkpoint", checkpoint, "--topk", 2,
                        "--images", *images, *extra)
    return vitpy.json_output(out)


def check_model(report, vit, work, name, config, dtype, metadata, class_names, generator, embed_scale=1.0):
    m = config["model"]
    model = vitpy.VisionTransformer(m).eval()
    vitpy.randomize(model, generator)
    with torch.no_grad():  # tokens with a variance near eps make the first LayerNorm's eps matter
        for p in (model.patch_embed.proj.weight, model.patch_embed.proj.bias, model.cls_token, model.pos_embed):
            p.mul_(embed_scale)
    state = {k: v.detach().to(dtype) for k, v in model.state_dict().items()}
    # What vit reads is the stored dtype; the reference must use the same rounded values.
    model.load_state_dict({k: v.float() for k, v in state.items()})
    extra_args = ()
    if metadata is None:
        state["blocks.0.ls1.gamma"] = torch.ones(m["dim"], dtype=dtype)  # timm LayerScale, identity
        config_path = work / f"{name}.json"
        config_path.write_text(json.dumps(config))
        extra_args = ("--config", config_path)
    weights = work / f"{name}.safetensors"
    vitpy.write_safetensors(weights, state, metadata)

    pixels, arrays = vitpy.random_images(3, m["channels"], m["image_size"], generator)
    images = []
    for i, array in enumerate(arrays):
        images.append(work / f"{name}-{i}.png")
        vitpy.write_png(images[-1], array)

    with torch.no_grad():
        logits, _ = model(vitpy.normalize(pixels, config["data"]["mean"], config["data"]["std"]))
    results = predict(vit, weights, images, extra_args)
    what = f"model {name} ({m['pool']} pool, qkv bias {m['qkv_bias']}, {m['channels']} ch, {dtype})"
    report.close(f"{what}: vit predict logits vs Python", [r["logits"] for r in results], logits, TOLERANCE)
    top_vit = [r["top"][0]["index"] for r in results]
    report.equal(f"{what}: top-1 classes {top_vit}", top_vit, logits.argmax(1).tolist())
    report.equal(f"{what}: class names", [r["top"][0]["class"] for r in results],
                 [class_names[i] for i in logits.argmax(1).tolist()])


def main():
    args = vitpy.parse_args(__doc__)
    work = Path(args.workdir)
    generator = torch.Generator().manual_seed(1)
    report = vitpy.Report("weights from Python")

    config_a = full_config("pycheck-a", MODEL_A, [0.5, 0.4, 0.3], [0.25, 0.3, 0.2])
    names_a = ["cat", "dog", "bird", "fish", "frog"]
    metadata_a = {"format": "pt", "vit_config": json.dumps(config_a), "class_names": json.dumps(names_a)}
    check_model(report, args.vit, work, "a", config_a, torch.float32, metadata_a, names_a, generator)

    config_b = full_config("pycheck-b", MODEL_B, [0.45], [0.22])
    names_b = [str(i) for i in range(MODEL_B["num_classes"])]  # no names in a timm file: indices
    check_model(report, args.vit, work, "b", config_b, torch.float16, None, names_b, generator, embed_scale=0.003)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
