"""Check: timm's ViT families open from their hub folders with timm's logits.

DINOv2 and SigLIP are also checked as the backbones they are published as
(num_classes 0): no predict, but the analyses, the parameter count and the
export.

For each family (DINOv2 with and without registers, DeiT III, CLIP and
OpenAI's QuickGELU CLIP, SigLIP, a *_reg*_gap_* model, DeiT distilled, and
the plain ViT), timm builds the architecture at depth 2 and a small image
size with 10 classes; its random weights are moved away from their init (so
that LayerScale's gammas, every bias and every norm matter), and
timm.models._hub.save_for_hf writes the folder the hub serves (config.json
with the architecture, model_args and pretrained_cfg, beside
model.safetensors). `vit predict --checkpoint FOLDER --json --precision fp32`
must give timm's logits within 1e-4 of the largest on photographs of
another size and shape, each through the folder's own preprocessing on
both sides: timm's evaluation transform from pretrained_cfg (Pillow's
bicubic resize, the centre crop of crop_pct, mean and std) against vit's
data.crop_mode, crop_pct and interpolation read from the same folder, so
the pixels must agree to the bit; `vit info --json` must count
timm's parameters exactly; `vit attn-distance` and `vit rollout` must give
the distances and maps that timm's own attention probabilities give (the
prefix tokens left out, rollout read from the class token, from the
patches' mean without one, or through SigLIP's attention pool's query); and `vit export --format timm-hub` must write a
folder that timm opens (local-dir:) with the same logits.
"""

import json
import sys

import PIL
import timm
import torch
from PIL import Image
from timm.data import create_transform
from timm.models._hub import save_for_hf

import vitpy

TOLERANCE = 1e-4  # of the largest logit: fp32 through two blocks, far above its rounding
# attn_distance.json holds 4 decimals (5e-5 px); rollout.json 6 (5e-7), and the
# two sides' fp32 attention differ by about 1e-6 of a probability.
DISTANCE_TOLERANCE = 1e-4
ROLLOUT_TOLERANCE = 1e-5
# (architecture, image size: a multiple of the patch, 4 patches a side, classes:
# 0 for a backbone without a head, as DINOv2 and SigLIP publish theirs)
FAMILIES = [
    ("vit_small_patch16_224", 64, 10),
    ("vit_small_patch14_dinov2", 56, 10),
    ("vit_small_patch14_reg4_dinov2", 56, 10),
    ("vit_small_patch14_reg4_dinov2", 56, 0),
    ("deit3_small_patch16_224", 64, 10),
    ("vit_base_patch16_clip_224", 64, 10),
    ("vit_base_patch16_clip_quickgelu_224", 64, 10),
    ("vit_base_patch16_siglip_224", 64, 10),
    ("vit_base_patch16_siglip_224", 64, 0),
    ("vit_medium_patch16_reg4_gap_256", 64, 10),
    ("deit_small_distilled_patch16_224", 64, 10),
]


def hub_folder(work, name, size, classes, generator):
    model = timm.create_model(name, pretrained=False, img_size=size, depth=2,
                              num_classes=classes).eval()
    vitpy.randomize(model, generator)
    folder = work / f"{name}-{classes}"
    save_for_hf(model, str(folder), safe_serialization=True)
    (folder / "pytorch_model.bin").unlink(missing_ok=True)
    return model, folder


def photographs(work, stem, size, generator):
    """PNGs larger than the model's input, so that the resize and the centre
    crop matter: a wide one, a square one, and one three times as tall as
    wide, for which Pillow 13 runs its vertical pass first, as vit does
    (an older Pillow runs the horizontal first, so it gets the two others
    only). -> their paths."""
    shapes = [(size + 23, 2 * size - 5), (size + 40, size + 40)]
    if int(PIL.__version__.split(".")[0]) >= 13:
        shapes.append((3 * size, size + 7))
    arrays = []
    for height, width in shapes:
        noise = torch.randint(0, 256, (height, width, 3), generator=generator)
        ramp = torch.linspace(0, 255, width).view(1, width, 1)
        arrays.append(((noise + ramp) / 2).round().clamp(0, 255).to(torch.uint8).numpy())
    return vitpy.write_pngs(work, stem, arrays)


def timm_eval_inputs(cfg, paths):
    """timm's evaluation transform of each file, from the folder's pretrained_cfg."""
    transform = create_transform(input_size=tuple(cfg["input_size"]),
                                 interpolation=cfg["interpolation"], mean=tuple(cfg["mean"]),
                                 std=tuple(cfg["std"]), crop_pct=cfg["crop_pct"],
                                 crop_mode=cfg.get("crop_mode", "center"))
    return torch.stack([transform(Image.open(path).convert("RGB")) for path in paths])


def timm_attention(model, x):
    """Every block's attention probabilities (B, H, N, N), from timm's explicit
    softmax: the input of each attention's attn_drop."""
    seen = []
    hooks = []
    for block in model.blocks:
        block.attn.fused_attn = False
        hooks.append(block.attn.attn_drop.register_forward_hook(
            lambda module, inputs, output: seen.append(inputs[0].detach())))
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    return seen


def timm_pool_attention(model, x):
    """timm's attention pool's probabilities (B, H, 1, P): its latent query's
    softmax over the keys, computed from the q and kv projections' outputs."""
    pool = model.attn_pool
    seen = {}
    hooks = [pool.q.register_forward_hook(lambda m, i, o: seen.__setitem__("q", o.detach())),
             pool.kv.register_forward_hook(lambda m, i, o: seen.__setitem__("kv", o.detach()))]
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    B, P, _ = seen["kv"].shape
    H, Dh = pool.num_heads, pool.head_dim
    q = seen["q"].reshape(B, 1, H, Dh).transpose(1, 2)
    k = seen["kv"].reshape(B, P, 2, H, Dh).permute(2, 0, 3, 1, 4)[0]
    return ((q @ k.transpose(-2, -1)) * pool.scale).softmax(-1)


def check_analyses(report, vit, work, what, model, folder, x, images):
    """vit rollout and vit attn-distance on the family, against the same
    analyses of timm's own attention probabilities."""
    attentions = timm_attention(model, x)
    prefix = model.num_prefix_tokens
    patch = model.patch_embed.patch_size[0]
    out = work / f"{folder.name}-distance"
    vitpy.run_vit(vit, "attn-distance", "--checkpoint", folder, "--images", *images, "--out", out)
    distance = json.loads((out / "attn_distance.json").read_text())["distance"]
    report.close(f"{what}: vit attn-distance vs timm's attention", distance,
                 vitpy.mean_attention_distance(attentions, patch, prefix=prefix), DISTANCE_TOLERANCE)
    out = work / f"{folder.name}-rollout"
    vitpy.run_vit(vit, "rollout", "--checkpoint", folder, "--images", *images, "--out", out)
    masks = [m["mask"] for m in json.loads((out / "rollout.json").read_text())["maps"]]
    pool_attention = None
    if model.global_pool == "map":
        source, pool_attention = "attention_pool", timm_pool_attention(model, x)
    else:
        source = "class_token" if model.global_pool == "token" and prefix > 0 else "patch_mean"
    report.close(f"{what}: vit rollout ({source}) vs timm's attention", masks,
                 vitpy.rollout_masks(attentions, source=source, prefix=prefix,
                                     pool_attention=pool_attention), ROLLOUT_TOLERANCE)


def check_family(report, vit, work, name, size, classes, generator):
    model, folder = hub_folder(work, name, size, classes, generator)
    cfg = json.loads((folder / "config.json").read_text())["pretrained_cfg"]
    images = photographs(work, folder.name, size, generator)
    x = timm_eval_inputs(cfg, images)
    with torch.no_grad():
        outputs = model(x)  # logits, or a backbone's pooled features
    what = f"timm {name} (depth 2, {size} px, {classes} classes, timm {timm.__version__})"
    if classes > 0:
        results = vitpy.json_output(vitpy.run_vit(vit, "predict", "--checkpoint", folder, "--json",
                                                  "--topk", 2, "--precision", "fp32",
                                                  "--images", *images))
        report.close(f"{what}: vit predict logits vs timm", [r["logits"] for r in results],
                     outputs, TOLERANCE * outputs.abs().max().item())
    check_analyses(report, vit, work, what, model, folder, x, images)
    info = vitpy.json_output(vitpy.run_vit(vit, "info", "--checkpoint", folder, "--json"))
    report.equal(f"{what}: vit info's parameters are timm's", info["parameters"],
                 sum(p.numel() for p in model.parameters()))

    exported = work / f"{folder.name}-export"
    vitpy.run_vit(vit, "export", "--checkpoint", folder, "--format", "timm-hub", "--out", exported)
    reopened = timm.create_model(f"local-dir:{exported}", pretrained=True).eval()
    with torch.no_grad():
        again = reopened(x)
    # The same float32 tensors through the same timm code: bit-identical.
    report.close(f"{what}: vit export --format timm-hub opens in timm with the same outputs",
                 again, outputs, 0.0)


def check(report, vit, work, generator):
    for name, size, classes in FAMILIES:
        check_family(report, vit, work, name, size, classes, generator)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "timm families", 31, check))
