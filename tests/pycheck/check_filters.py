"""Check 6, filter PCA: `vit filters` (filters.json) gives the principal
components of the patch-embedding filters that PyTorch gives: the rows of
patch_embed.proj.weight (D x C*P*P, flattened as timm's weight), centred over
the rows, torch.linalg.svd; components compared up to sign (within 1e-6, for
the components whose variance is not nearly tied with a neighbour's: those are
defined only up to a rotation), the explained-variance ratios all within 1e-6.

Models: A (48 filters of 3x4x4) and B (40 filters of 1x6x6), random weights.
"""

import json
import sys

import torch

import vitpy

TOLERANCE = 1e-6  # vit computes in float64 from float32 weights; ~1e-12 apart
MIN_GAP = 1e-3  # relative gap between neighbouring variances for a component to be unique


def python_pca(weight):
    rows = weight.detach().double().reshape(weight.shape[0], -1)
    centred = rows - rows.mean(0, keepdim=True)
    _, s, vt = torch.linalg.svd(centred, full_matrices=False)
    variance = s**2 / (rows.shape[0] - 1)
    return vt, variance / variance.sum()


def check_model(report, vit, work, name, config, with_metadata, generator):
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    out = work / f"{name}-filters"
    vitpy.run_vit(vit, "filters", *model_args, "--out", out, "--count", 28)
    result = json.loads((out / "filters.json").read_text())
    m = config["model"]
    report.equal(f"model {name}: patch_size, channels", (result["patch_size"], result["channels"]),
                 (m["patch_size"], m["channels"]))
    components, ratios = python_pca(model.patch_embed.proj.weight)
    k = len(result["components"])
    report.equal(f"model {name}: {k} components (min(28, D - 1, C*P*P))", k,
                 min(28, m["dim"] - 1, m["channels"] * m["patch_size"] ** 2))
    report.close(f"model {name}: explained_variance_ratio vs Python", result["explained_variance_ratio"],
                 ratios[:k], TOLERANCE)
    ours = torch.tensor(result["components"], dtype=torch.float64)
    report.close(f"model {name}: components have unit norm", ours.norm(dim=1), torch.ones(k), TOLERANCE)
    variance = ratios[: k + 1]
    unique = [i for i in range(k)
              if all(abs(variance[i] - variance[j]) > MIN_GAP * variance[i] for j in (i - 1, i + 1)
                     if 0 <= j < len(variance))]
    theirs = components[unique]
    signs = torch.sign((ours[unique] * theirs).sum(1, keepdim=True))
    report.close(f"model {name}: {len(unique)} well-separated components vs Python, up to sign",
                 ours[unique], theirs * signs, TOLERANCE)
    report.equal(f"model {name}: at least 20 components compared", len(unique) >= 20, True)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "filters", 6, vitpy.models_a_and_b(check_model, "pycheck-filters")))
