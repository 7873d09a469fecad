"""Check 10, CKA: `vit cka --images` (cka.json) gives the linear CKA
(Kornblith et al. 2019) between layers that PyTorch gives on the same random
models and images, within 1e-4. A layer l = 0..L is the residual stream
x_l (x_0 = cat(class token, patch embeddings) + position embeddings, x_l
after block l), every token, class token included, flattened per image into
a row of X (images x N*D), centred over the images;
  CKA(X, Y) = <K, L>_F / (||K||_F ||L||_F),  K = Xc Xc^T, L = Yc Yc^T.
Each model is compared with itself (a symmetric matrix with a unit diagonal;
b = a) and, with --against, with a second random model of the same
architecture (for A with another number of classes, which the head alone
uses; b is the --against path). An --against model of another architecture
(A: one block fewer; B: class-token pooling, the same tensor shapes) must
make vit exit non-zero with a one-line error on stderr.

The Python CKA is first checked against its definition: the feature-space
form ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F), 1 for X with itself,
invariance to an orthogonal transform and to scaling of either side.

Models A (cls pooling, RGB) and B (mean pooling, gray, plain timm file given
--config; its --against model holds vit_config), six images each that
differ in a few smooth patterns (random noise alone would put every CKA near
1). The Python matrix must span more than 100x the tolerance, and move by
more than 5x the tolerance when the class token is left out.
"""

import json
import subprocess
import sys
from pathlib import Path

import torch

import vitpy

TOLERANCE = 1e-4
IMAGES = 6
KEYS = {"samples", "a", "b", "matrix"}


def linear_cka(X, Y):
    """Gram form, float64. X (n, p), Y (n, q)."""
    Xc = X - X.mean(0, keepdim=True)
    Yc = Y - Y.mean(0, keepdim=True)
    K, L = Xc @ Xc.T, Yc @ Yc.T
    return ((K * L).sum() / (K.norm() * L.norm())).item()


def feature_cka(X, Y):
    """The feature-space form, for the self-check."""
    Xc = X - X.mean(0, keepdim=True)
    Yc = Y - Y.mean(0, keepdim=True)
    return ((Yc.T @ Xc).norm() ** 2 / ((Xc.T @ Xc).norm() * (Yc.T @ Yc).norm())).item()


def self_check(report, generator):
    X = torch.randn(IMAGES, 30, generator=generator, dtype=torch.float64)
    Y = X[:, :20] @ torch.randn(20, 25, generator=generator, dtype=torch.float64) + \
        0.5 * torch.randn(IMAGES, 25, generator=generator, dtype=torch.float64)
    Q, _ = torch.linalg.qr(torch.randn(30, 30, generator=generator, dtype=torch.float64))
    value = linear_cka(X, Y)
    report.close("Python CKA: Gram form = feature form", value, feature_cka(X, Y), 1e-12)
    report.close("Python CKA: of X with itself is 1", linear_cka(X, X), 1.0, 1e-12)
    report.close("Python CKA: invariant to an orthogonal transform and scaling",
                 [linear_cka(X @ Q, Y), linear_cka(3.0 * X, 0.1 * Y)], [value, value], 1e-12)
    report.equal(f"Python CKA: of unrelated X, Y ({value:.3g}) is in (0, 1)", 0 < value < 1 - 1e-3, True)


def structured_images(work, name, count, m, generator):
    """Images that differ in a few smooth patterns (random amplitudes of an x
    ramp, a y ramp and their product per channel) plus some noise: with noise
    alone every layer's centred Gram matrix is close to the centring matrix,
    and CKA close to 1 everywhere. -> (uint8 pixels, PNG paths)."""
    t = torch.linspace(-1, 1, m["image_size"])
    yy, xx = torch.meshgrid(t, t, indexing="ij")
    c = torch.randn(count, m["channels"], 3, generator=generator)[..., None, None]
    noise = torch.randn(count, m["channels"], m["image_size"], m["image_size"], generator=generator)
    pixels = (128 + 50 * (c[:, :, 0] * xx + c[:, :, 1] * yy + c[:, :, 2] * xx * yy) + 10 * noise)
    pixels = pixels.round().clamp(0, 255).to(torch.uint8)
    arrays = [p.permute(1, 2, 0).numpy() if m["channels"] == 3 else p[0].numpy() for p in pixels]
    return pixels, vitpy.write_pngs(work, name, arrays)


def layer_rows(model, x, class_token=True):
    """-> L + 1 matrices (images, N*D), float64 (without the class token: N-1)."""
    with torch.no_grad():
        return [s[:, 0 if class_token else 1:].reshape(s.shape[0], -1) for s in model.streams(x)]


def cka_matrix(rows_a, rows_b):
    return torch.tensor([[linear_cka(a, b) for b in rows_b] for a in rows_a], dtype=torch.float64)


def write_checkpoint(work, name, config, generator):
    """A random model of `config` with vit_config in __metadata__. -> (model, path)."""
    model, flags = vitpy.write_random_model(work, name, config, True, generator)
    return model, flags[1]


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    if name == "a":
        self_check(report, generator)
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    pixels, images = structured_images(work, name, IMAGES, m, generator)
    x = vitpy.normalize(pixels, config["data"]["mean"], config["data"]["std"]).double()
    rows = layer_rows(vitpy.float64_copy(model), x)
    checkpoint = str(model_args[1])
    what = f"model {name} ({m['pool']} pool, {m['depth']} blocks, {IMAGES} images)"

    # Same architecture; A with another number of classes (the head is not compared).
    other_config = json.loads(json.dumps(config))
    other_config["name"] += "-other"
    if name == "a":
        other_config["model"]["num_classes"] = m["num_classes"] + 2
    other, other_path = write_checkpoint(work, f"{name}-other", other_config, generator)
    other_rows = layer_rows(vitpy.float64_copy(other), x)

    expected_self = cka_matrix(rows, rows)
    expected_other = cka_matrix(rows, other_rows)
    spread = (expected_self.max() - expected_self.min()).item()
    report.equal(f"{what}: Python CKA between layers spans {spread:.3g} (> 100x tolerance)",
                 spread > 100 * TOLERANCE, True)
    # Leaving the class token out must show, or the check could not tell.
    patches = layer_rows(vitpy.float64_copy(model), x, class_token=False)
    change = (cka_matrix(patches, patches) - expected_self).abs().max().item()
    report.equal(f"{what}: without the class token the Python matrix moves by {change:.3g} (> 5x tolerance)",
                 change > 5 * TOLERANCE, True)
    for against, expected, b in ((None, expected_self, checkpoint), (other_path, expected_other, str(other_path))):
        setting = f"{what}, against {'itself' if against is None else 'a second model'}"
        out = work / f"{name}-cka-{'self' if against is None else 'other'}"
        flags = () if against is None else ("--against", against)
        vitpy.run_vit(vit, "cka", *model_args, "--images", *images, "--out", out, *flags, threads=1)
        result = json.loads((out / "cka.json").read_text())
        report.equal(f"{setting}: cka.json keys", set(result), KEYS)
        report.equal(f"{setting}: samples, a, b", (result.get("samples"), result.get("a"), result.get("b")),
                     (IMAGES, checkpoint, b))
        report.equal(f"{setting}: cka.csv and cka.png written",
                     [(out / f).is_file() for f in ("cka.csv", "cka.png")], [True, True])
        report.close(f"{setting}: CKA matrix vs Python", result["matrix"], expected, TOLERANCE)
        if against is None:
            ours = torch.tensor(result["matrix"], dtype=torch.float64)
            report.close(f"{setting}: symmetric with a unit diagonal", torch.cat([ours.flatten(), ours.diagonal()]),
                         torch.cat([ours.T.flatten(), torch.ones(len(ours))]), TOLERANCE)

    # Another architecture must be refused.
    wrong_config = json.loads(json.dumps(config))
    wrong_config["name"] += "-wrong"
    if name == "a":
        wrong_config["model"]["depth"] = m["depth"] - 1
        change = "one block fewer"
    else:
        wrong_config["model"]["pool"] = "cls"
        change = "cls pooling instead of mean"
    _, wrong_path = write_checkpoint(work, f"{name}-wrong", wrong_config, generator)
    command = [str(Path(vit).resolve()), "cka", *map(str, model_args), "--images", *map(str, images), "--out",
               str(work / f"{name}-cka-wrong"), "--against", str(wrong_path), "--device", "cpu", "--threads", "1",
               "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True)
    lines = result.stderr.strip().splitlines()
    report.equal(f"{what}: --against a model with {change}: exit status != 0 and one line on stderr "
                 f"({result.stderr.strip()!r})", (result.returncode != 0, len(lines)), (True, 1))


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "cka", 10, vitpy.models_a_and_b(check_model, "pycheck-cka")))
