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

import torch

import vitpy

TOLERANCE = 1e-4

MODEL_B = dict(vitpy.MODEL_B, image_size=24, depth=2)  # a 4x4 grid, two blocks


def predict(vit, model_args, images):
    # fp32, as the reference computes: a file without a recorded precision runs
    # in train.precision's default, auto, which is bf16 on CPUs that compute it.
    return vitpy.json_output(vitpy.run_vit(vit, "predict", "--json", *model_args, "--topk", 2,
                                           "--precision", "fp32", "--images", *images))


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
    if metadata is None:
        state["blocks.0.ls1.gamma"] = torch.ones(m["dim"], dtype=dtype)  # timm LayerScale, identity
    model_args = vitpy.write_weights(work, name, config, state, metadata)

    pixels, images = vitpy.write_random_images(work, name, 3, m, generator)
    logits, _ = vitpy.run_model(model, pixels, config["data"])
    results = predict(vit, model_args, images)
    what = f"model {name} ({m['pool']} pool, qkv bias {m['qkv_bias']}, {m['channels']} ch, {dtype})"
    report.close(f"{what}: vit predict logits vs Python", [r["logits"] for r in results], logits, TOLERANCE)
    top_vit = [r["top"][0]["index"] for r in results]
    report.equal(f"{what}: top-1 classes {top_vit}", top_vit, logits.argmax(1).tolist())
    report.equal(f"{what}: class names", [r["top"][0]["class"] for r in results],
                 [class_names[i] for i in logits.argmax(1).tolist()])


def check(report, vit, work, generator):
    config_a = vitpy.config_a("pycheck-a")
    names_a = ["cat", "dog", "bird", "fish", "frog"]
    metadata_a = {"format": "pt", "vit_config": json.dumps(config_a), "class_names": json.dumps(names_a)}
    check_model(report, vit, work, "a", config_a, torch.float32, metadata_a, names_a, generator)

    config_b = vitpy.config_b("pycheck-b", MODEL_B)
    names_b = [str(i) for i in range(MODEL_B["num_classes"])]  # no names in a timm file: indices
    check_model(report, vit, work, "b", config_b, torch.float16, None, names_b, generator, embed_scale=0.003)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "weights from Python", 1, check))
