"""Check: timm's register models load into vit with timm's logits.

timm's VisionTransformer with 4 register tokens and no_embed_class (its
register models' layout: pos_embed covers the patches alone), random weights,
written as a plain .safetensors state dict, gives the same logits in
`vit predict --json` (a --config with model.registers 4) as in timm itself,
within 1e-4: with class-token pooling, and with mean pooling (timm's
global_pool "avg" without fc_norm, which averages the patches alone). Then
`vit export` writes every tensor of timm's state dict back, under its name,
with its shape and values.
"""

import sys

import timm
import torch

import vitpy

TOLERANCE = 1e-4
REGISTERS = 4


def timm_model(m):
    return timm.models.vision_transformer.VisionTransformer(
        img_size=m["image_size"], patch_size=m["patch_size"], in_chans=m["channels"],
        num_classes=m["num_classes"], embed_dim=m["dim"], depth=m["depth"], num_heads=m["heads"],
        mlp_ratio=m["mlp_dim"] / m["dim"], qkv_bias=m["qkv_bias"], reg_tokens=REGISTERS,
        no_embed_class=True, fc_norm=False, global_pool="token" if m["pool"] == "cls" else "avg").eval()


def check_model(report, vit, work, name, pool, generator):
    config = vitpy.config_a(f"pycheck-registers-{name}")
    m = config["model"] = dict(config["model"], pool=pool, registers=REGISTERS)
    model = timm_model(m)
    vitpy.randomize(model, generator)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    model_args = vitpy.write_weights(work, name, config, state, metadata=None)
    pixels, images = vitpy.write_random_images(work, name, 3, m, generator)
    with torch.no_grad():
        logits = model(vitpy.normalize(pixels, config["data"]["mean"], config["data"]["std"]))
    results = vitpy.json_output(vitpy.run_vit(vit, "predict", "--json", *model_args, "--topk", 2,
                                              "--precision", "fp32", "--images", *images))
    what = f"timm {name} ({pool} pool, {REGISTERS} registers, timm {timm.__version__})"
    report.close(f"{what}: vit predict logits vs timm", [r["logits"] for r in results], logits, TOLERANCE)

    exported_path = work / f"{name}-export.safetensors"
    vitpy.run_vit(vit, "export", *model_args, "--out", exported_path)
    exported, _, _ = vitpy.read_safetensors(exported_path)
    report.equal(f"{what}: vit export's names and shapes are timm's",
                 sorted((k, list(v.shape)) for k, v in exported.items()),
                 sorted((k, list(v.shape)) for k, v in state.items()))
    report.close(f"{what}: vit export's values are timm's",
                 torch.cat([exported[k].flatten() for k in sorted(state) if k in exported]),
                 torch.cat([state[k].flatten() for k in sorted(state) if k in exported]), 0.0)


def check(report, vit, work, generator):
    check_model(report, vit, work, "cls", "cls", generator)
    check_model(report, vit, work, "mean", "mean", generator)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "timm registers", 29, check))
