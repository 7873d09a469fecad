"""Check 14, the sparse autoencoder: `vit sae train --init` takes one training
step from weights Python wrote, and its loss, its weights after the step and
its scores on the validation images (sae.json) are what an independent
PyTorch SAE gives from the same weights on the same tokens. The step is
taken twice: with Adam, the default, and with `--optimizer sgd`, a plain step
of -lr times the gradient. Adam's first step is about lr * sign(g), so it
checks the gradient's signs alone; the SGD step checks the gradient itself,
its scale included.

The SAE (Bricken et al., 2023; TopK: Gao et al., 2024), on one layer's patch
tokens x (n, D) (the class token left out):
  z = act(W_enc^T (x - b_dec) + b_enc),  x_hat = W_dec^T z + b_dec,
act = ReLU of the k largest pre-activations (the rest 0), or ReLU (k = 0);
loss = mean over tokens of ||x - x_hat||^2 (+ l1 * the mean of sum(z));
one Adam step (lr, betas 0.9 and 0.999, eps 1e-8), or one SGD step, on all
tokens at once, then each decoder row (feature) scaled to unit norm.
Scores, on the validation images' tokens after the step:
  explained_variance = 1 - sum ||x - x_hat||^2 / sum ||x - mean(x)||^2,
  l0 = features > 0 per token, dead_fraction = features that never fire,
  ce_* = the mean cross-entropy against the true labels of the model intact,
  with the layer's patch tokens replaced by x_hat (spliced) or by zeros,
  ce_recovered = (zeroed - spliced) / (zeroed - clean).

The data: an image-folder dataset whose every class is one random image,
copied 4 times. vit holds out data.val_size = classes images, one of each
class (stratified), so Python knows both splits without vit's split code;
--tokens asks for all training tokens, and with batch 1024 > n the epoch is
one step on them all, in any order.

Model A (class-token pooling, RGB) trains a TopK SAE on layer 2, model B
(mean pooling, gray) a ReLU SAE with an L1 penalty on layer 1. The Python
reference runs in float64. It first makes sure the TopK choice is well defined
(the k-th and (k+1)-th pre-activations of every token apart by more than
float32 noise), and that the step moves every score by more than the
tolerance (so a step that did nothing would fail).
"""

import csv
import json
import sys

import torch
import torch.nn.functional as F

import vitpy

TOLERANCE = 1e-4
LR = 0.01
SGD_LR = 0.01
# The SGD step's change of each tensor, held to Python's within this share of
# its largest entry. vit computes the gradient in float32 (sums over at most
# 960 token products: relative error around 1e-6 at most, 5e-7 seen), and
# the step then rounds to the weights' float32 (2^-24 of the largest weight,
# checked below to be under 1e-6 of the step). 1e-5 leaves a factor 10 over
# both; a gradient off by a factor 2 is off by 1 (100%) of the step.
SGD_TOLERANCE = 1e-5
COPIES = 4  # of each class's image
MIN_MARGIN = 1e-4


def stream_at(model, x, layer):
    """The residual stream after `layer` blocks (0: the embeddings), (B, N, D)."""
    h = model.embed(x)
    for block in model.blocks[:layer]:
        h, _ = block(h)
    return h


def logits_from(model, h, layer):
    for block in model.blocks[layer:]:
        h, _ = block(h)
    return model.readout(h)


def encode(sae, x, k):
    pre = (x - sae["b_dec"]) @ sae["W_enc"] + sae["b_enc"]
    if k == 0:
        return torch.relu(pre)
    values, indices = pre.topk(k, dim=1)
    return torch.zeros_like(pre).scatter(1, indices, torch.relu(values))


def decode(sae, z):
    return z @ sae["W_dec"] + sae["b_dec"]


def topk_margin(sae, x, k):
    """The smallest gap between each token's k-th and (k+1)-th pre-activation."""
    pre = (x - sae["b_dec"]) @ sae["W_enc"] + sae["b_enc"]
    top = pre.topk(k + 1, dim=1).values
    return (top[:, k - 1] - top[:, k]).min().item()


def loss_of(sae, x, k, l1):
    z = encode(sae, x, k)
    return (x - decode(sae, z)).pow(2).sum(1).mean() + l1 * z.sum(1).mean()


def one_step(sae, x, k, l1, sgd=False):
    """-> (loss before the step, the SAE after one Adam (or SGD) step and the row normalisation)."""
    params = {name: t.clone().requires_grad_(True) for name, t in sae.items()}
    optimizer = (torch.optim.SGD(list(params.values()), lr=SGD_LR) if sgd
                 else torch.optim.Adam(list(params.values()), lr=LR))
    loss = loss_of(params, x, k, l1)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        params["W_dec"] /= params["W_dec"].norm(dim=1, keepdim=True)
    return loss.item(), {name: t.detach() for name, t in params.items()}


def scores(model, sae, k, layer, x, labels):
    """sae.json's numbers for the SAE on images x (B, C, S, S) with labels."""
    h = stream_at(model, x, layer)
    patches = h[:, 1:]
    tokens = patches.reshape(-1, patches.shape[-1])
    z = encode(sae, tokens, k)
    x_hat = decode(sae, z)
    spread = (tokens - tokens.mean(0)).pow(2).sum()
    spliced = torch.cat([h[:, :1], x_hat.view(patches.shape)], dim=1)
    zeroed = torch.cat([h[:, :1], torch.zeros_like(patches)], dim=1)
    clean = F.cross_entropy(model.readout(stream_at(model, x, len(model.blocks))), labels).item()
    ce_spliced = F.cross_entropy(logits_from(model, spliced, layer), labels).item()
    ce_zeroed = F.cross_entropy(logits_from(model, zeroed, layer), labels).item()
    return {
        "explained_variance": 1 - ((tokens - x_hat).pow(2).sum() / spread).item(),
        "l0": (z > 0).double().sum(1).mean().item(),
        "dead_fraction": ((z > 0).sum(0) == 0).double().mean().item(),
        "ce_loss_clean": clean,
        "ce_loss_spliced": ce_spliced,
        "ce_loss_zero_ablated": ce_zeroed,
        "ce_recovered": (ce_zeroed - ce_spliced) / (ce_zeroed - clean),
    }


def random_sae(width, features, generator):
    w_dec = torch.randn(features, width, generator=generator, dtype=torch.float64)
    w_dec /= w_dec.norm(dim=1, keepdim=True)
    return {
        "W_enc": (w_dec.t() * 0.8 + 0.1 * torch.randn(width, features, generator=generator,
                                                      dtype=torch.float64)).contiguous(),
        "b_enc": 0.1 * torch.randn(features, generator=generator, dtype=torch.float64),
        "W_dec": w_dec,
        "b_dec": 0.2 * torch.randn(width, generator=generator, dtype=torch.float64),
    }


def write_dataset(work, name, m, generator):
    """Class c's one random image in folder c<c>, COPIES times. -> its root, the
    images (K, C, S, S) uint8."""
    root = work / f"{name}-images"
    pixels, arrays = vitpy.random_images(m["num_classes"], m["channels"], m["image_size"], generator)
    for c, array in enumerate(arrays):
        folder = root / f"c{c}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(COPIES):
            vitpy.write_png(folder / f"{i}.png", array)
    return root, pixels


def check_model(report, vit, work, name, config, layer, k, l1, generator):
    m = config["model"]
    classes = m["num_classes"]
    root, pixels = write_dataset(work, name, m, generator)
    config["data"].update({"root": str(root), "val_size": classes})
    model, model_args = vitpy.write_random_model(work, name, config, name == "a", generator)
    model64 = vitpy.float64_copy(model)
    data = config["data"]
    x_class = vitpy.normalize(pixels, data["mean"], data["std"]).double()  # (K, C, S, S)
    labels = torch.arange(classes)
    # The splits: COPIES - 1 copies of each class for training, one for validation.
    x_train = x_class.repeat_interleave(COPIES - 1, dim=0)
    with torch.no_grad():
        train_stream = stream_at(model64, x_train, layer)[:, 1:]
    tokens = train_stream.reshape(-1, m["dim"])
    features = 2 * m["dim"]
    sae = random_sae(m["dim"], features, generator)
    what = (f"model {name} ({m['pool']} pool), layer {layer}, {features} features, "
            + (f"TopK k {k}" if k else f"ReLU, l1 {l1}") + f", {tokens.shape[0]} tokens")
    if k:
        margin = topk_margin(sae, tokens, k)
        report.equal(f"{what}: the TopK choice is well defined (k-th vs (k+1)-th gap {margin:.3g} > "
                     f"{MIN_MARGIN:g})", margin > MIN_MARGIN, True)
    init = work / f"{name}-init.safetensors"
    vitpy.write_safetensors(init, {n: t.float() for n, t in sae.items()},
                            {"format": "vit-sae", "layer": str(layer), "k": str(k), "l1": str(l1),
                             "width": str(m["dim"])})
    sae32 = {n: t.float().double() for n, t in sae.items()}  # what vit reads
    loss, after = one_step(sae32, tokens, k, l1)
    with torch.no_grad():
        before_scores = scores(model64, sae32, k, layer, x_class, labels)
        expected = scores(model64, after, k, layer, x_class, labels)

    if k:
        with torch.no_grad():
            val_tokens = stream_at(model64, x_class, layer)[:, 1:].reshape(-1, m["dim"])
        margin = topk_margin(after, val_tokens, k)
        report.equal(f"{what}: after the step too, on the validation tokens (gap {margin:.3g})",
                     margin > MIN_MARGIN, True)
    out = work / f"{name}-sae"
    flags = ("--k", str(k)) if k else ("--l1", str(l1))
    vitpy.run_vit(vit, "sae", "train", *model_args, "--layer", layer, "--init", init, *flags,
                  "--tokens", tokens.shape[0], "--epochs", 1, "--lr", LR, "--samples", classes,
                  "--out", out, threads=1)
    result = json.loads((out / "sae.json").read_text())
    report.equal(f"{what}: sae.json's layer, features and tokens",
                 (result["layer"], result["features"], result["tokens"]), (layer, features, tokens.shape[0]))
    rows = list(csv.DictReader((out / "sae.csv").open()))
    report.equal(f"{what}: sae.csv has one epoch", len(rows), 1)
    report.close(f"{what}: the training loss at the start (relative)", float(rows[0]["loss"]) / loss, 1.0,
                 TOLERANCE)

    trained = vitpy.read_safetensors(out / "sae.safetensors")[0]
    for tensor in ("W_enc", "b_enc", "W_dec", "b_dec"):
        moved = (after[tensor] - sae32[tensor]).abs().max().item()
        report.equal(f"{what}: the step moves {tensor} by up to {moved:.3g} in Python (> 10x tolerance)",
                     moved > 10 * TOLERANCE, True)
        report.close(f"{what}: {tensor} after one step", trained[tensor].double(), after[tensor], TOLERANCE)
    check_sgd_step(report, vit, work, name, what, model_args, layer, tokens, init, flags, classes,
                   sae32, k, l1)
    for key, value in expected.items():
        moved = abs(value - before_scores[key])
        if key not in ("l0", "dead_fraction", "ce_loss_clean", "ce_loss_zero_ablated"):  # counts; no SAE
            report.equal(f"{what}: the step moves {key} by {moved:.3g} in Python (> tolerance)",
                         moved > TOLERANCE, True)
        report.close(f"{what}: {key} after the step", result[key], value, TOLERANCE)


def check_sgd_step(report, vit, work, name, what, model_args, layer, tokens, init, flags, classes,
                   sae32, k, l1):
    """vit's SGD step against Python's: the change of each tensor, which is
    -SGD_LR times the gradient (W_dec's then scaled to unit rows)."""
    _, after = one_step(sae32, tokens, k, l1, sgd=True)
    out = work / f"{name}-sae-sgd"
    vitpy.run_vit(vit, "sae", "train", *model_args, "--layer", layer, "--init", init, *flags,
                  "--tokens", tokens.shape[0], "--epochs", 1, "--lr", SGD_LR, "--optimizer", "sgd",
                  "--samples", classes, "--out", out, threads=1)
    trained = vitpy.read_safetensors(out / "sae.safetensors")[0]
    for tensor in ("W_enc", "b_enc", "W_dec", "b_dec"):
        step = after[tensor] - sae32[tensor]
        moved = step.abs().max().item()
        rounding = sae32[tensor].abs().max().item() * 2.0 ** -24
        report.equal(f"{what}: the SGD step moves {tensor} by up to {moved:.3g}, over 1e6 x "
                     f"float32's rounding of its values ({rounding:.3g})", moved > 1e6 * rounding, True)
        report.close(f"{what}: {tensor}'s SGD step (tolerance {SGD_TOLERANCE:g} of its largest entry)",
                     trained[tensor].double() - sae32[tensor], step, SGD_TOLERANCE * moved)


def body(report, vit, work, generator):
    check_model(report, vit, work, "a", vitpy.config_a("pycheck-sae-a"), layer=2, k=6, l1=0.0,
                generator=generator)
    check_model(report, vit, work, "b", vitpy.config_b("pycheck-sae-b"), layer=1, k=0, l1=0.05,
                generator=generator)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "sae", 14, body))
