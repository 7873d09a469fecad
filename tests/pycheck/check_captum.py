"""Check 12, Captum: `vit saliency --method integrated-gradients` gives the
attributions Captum's IntegratedGradients gives on the same random model and
images (captum.attr.IntegratedGradients, method "gausslegendre", its default,
for the explained class's logit), summed over channels with their sign,
within 1e-4 of the largest attribution; and vit's completeness error times
|f(x) - f(b)| is Captum's convergence delta, within 1e-4 of |f(x) - f(b)|.
Each model at 32 steps from the mean image (b = 0, vit's default) and at 8
from black pixels (b = the normalised 0).

Runs under the Python of the Captum environment that scripts/setup.sh
--python-check makes (Debian's torch, Captum from PyPI).

Models A (cls pooling, RGB) and B (mean pooling, gray), three images each.
"""

import json
import sys

import torch
from captum.attr import IntegratedGradients

import vitpy

TOLERANCE = 1e-4


def check_model(report, vit, work, name, config, with_metadata, generator):
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    pixels, images = vitpy.write_random_images(work, name, 3, config["model"], generator)
    data = config["data"]
    x = vitpy.normalize(pixels, data["mean"], data["std"])
    with torch.no_grad():
        classes = model(x)[0].argmax(1)
    ig = IntegratedGradients(lambda inputs: model(inputs)[0])
    black = vitpy.normalize(torch.zeros_like(pixels[:1]), data["mean"], data["std"])
    for steps, baseline, b in ((32, "mean", torch.zeros_like(x)), (8, "black", black.expand_as(x))):
        what = f"model {name} ({config['model']['pool']} pool), {steps} steps from the {baseline} image"
        out = work / f"{name}-{baseline}"
        vitpy.run_vit(vit, "saliency", *model_args, "--images", *images, "--out", out, "--method",
                      "integrated-gradients", "--steps", steps, "--baseline", baseline)
        result = json.loads((out / "saliency.json").read_text())
        report.equal(f"{what}: explained classes", [m["class"] for m in result["maps"]], classes.tolist())
        attributions, delta = ig.attribute(x, baselines=b, target=classes, n_steps=steps, method="gausslegendre",
                                           return_convergence_delta=True)
        expected = attributions.sum(1).double()
        ours = torch.tensor([m["mask"] for m in result["maps"]], dtype=torch.float64)
        scale = expected.abs().max().item()
        report.close(f"{what}: maps vs Captum (relative to the largest {scale:.3g})", ours / scale,
                     expected / scale, TOLERANCE)
        with torch.no_grad():
            change = (model(x)[0] - model(b)[0]).gather(1, classes[:, None])[:, 0].double().abs()
        ours_delta = torch.tensor([m["completeness_error"] for m in result["maps"]], dtype=torch.float64) * change
        report.close(f"{what}: completeness error x |f(x) - f(b)| vs Captum's convergence delta "
                     f"(relative to |f(x) - f(b)|)", ours_delta / change, delta.double() / change, TOLERANCE)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "captum", 12, vitpy.models_a_and_b(check_model, "pycheck-captum")))
