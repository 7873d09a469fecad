"""Check 5, position-embedding similarity: `vit pos-embed` (pos_embed.json)
gives the cosine similarity of the patch tokens' position embeddings that
PyTorch gives (F.normalize, then a matrix product; class token left out,
row-major patches), within 1e-5, and with `--interpolate S` the similarity of
the embedding resized by F.interpolate(mode="bicubic", align_corners=False)
on the patch grid, with the class token kept.

Models: A (an 8x8 grid, random weights, vit_config in __metadata__), resized
to 5x5 and 12x12; and a hand-made 2x2 grid (8 px images in 4 px patches,
pos_embed chosen by hand, a plain timm file given --config) resized to 4x4.
Each resize is also compared with the alternatives a bug would give
(bilinear, align_corners=True, a transposed grid), which must differ by more
than 100x the tolerance, so that the check can fail.
"""

import json
import sys

import torch
import torch.nn.functional as F

import vitpy

TOLERANCE = 1e-5  # vit writes 6 decimals; float32 cosines differ by ~1e-7


def cosine_matrix(pos_embed):
    """(1, 1 + g*g, D) -> (g*g, g*g), class token left out."""
    patches = F.normalize(pos_embed[0, 1:].double(), dim=1)
    return patches @ patches.T


def resize(pos_embed, new_grid, mode="bicubic", align_corners=False, transpose=False):
    """The grid part as a D-channel image, resized; the class token kept."""
    dim = pos_embed.shape[-1]
    grid = int(round((pos_embed.shape[1] - 1) ** 0.5))
    image = pos_embed[:, 1:].reshape(1, grid, grid, dim).permute(0, 3, 1, 2)
    if transpose:
        image = image.transpose(2, 3)
    resized = F.interpolate(image.double(), size=(new_grid, new_grid), mode=mode, align_corners=align_corners)
    patches = resized.permute(0, 2, 3, 1).reshape(1, new_grid * new_grid, dim)
    return torch.cat([pos_embed[:, :1].double(), patches], dim=1)


def check_one(report, vit, work, what, model_args, pos_embed, new_grid):
    out = work / f"{what}-{new_grid or 'raw'}"
    flags = ("--interpolate", new_grid) if new_grid else ()
    vitpy.run_vit(vit, "pos-embed", *model_args, "--out", out, *flags)
    result = json.loads((out / "pos_embed.json").read_text())
    grid = int(round((pos_embed.shape[1] - 1) ** 0.5))
    expected_grid = new_grid or grid
    report.equal(f"{what}: pos_embed.json grid", result["grid"], expected_grid)
    if not new_grid:
        report.close(f"{what}: cosine similarity, {grid}x{grid} grid, vs Python", result["similarity"],
                     cosine_matrix(pos_embed), TOLERANCE)
        return
    expected = cosine_matrix(resize(pos_embed, new_grid))
    for name, kwargs in (("bilinear", {"mode": "bilinear"}), ("align_corners=True", {"align_corners": True}),
                         ("a transposed grid", {"transpose": True})):
        gap = (cosine_matrix(resize(pos_embed, new_grid, **kwargs)) - expected).abs().max().item()
        report.equal(f"{what}: {grid}x{grid} -> {new_grid}x{new_grid} with {name} would differ by {gap:.3g} "
                     f"(> 100x tolerance)", gap > 100 * TOLERANCE, True)
    report.close(f"{what}: --interpolate {new_grid}: similarity of the bicubic resize vs Python",
                 result["similarity"], expected, TOLERANCE)


def body(report, vit, work, generator):
    config = vitpy.config_a("pycheck-pos-embed-a")
    model, model_args = vitpy.write_random_model(work, "a", config, True, generator)
    pos_embed = model.pos_embed.detach()
    for new_grid in (None, 5, 12):
        check_one(report, vit, work, "model A", model_args, pos_embed, new_grid)

    # 2x2 by hand, D = 3: each channel a different pattern over the grid
    # (a corner, a column ramp, a row ramp with an offset), class token (9, 9, 9).
    small = dict(vitpy.MODEL_A, image_size=8, patch_size=4, dim=3, heads=1, depth=1, mlp_dim=4)
    model = vitpy.VisionTransformer(small).eval()
    vitpy.randomize(model, generator)
    hand = torch.tensor([[[9.0, 9.0, 9.0],
                          [1.0, 0.0, 0.5], [0.0, 1.0, 0.5],
                          [0.0, 0.0, 2.0], [0.0, 1.0, 2.0]]])
    with torch.no_grad():
        model.pos_embed.copy_(hand)
    args = vitpy.write_weights(work, "hand", vitpy.full_config("pycheck-pos-embed-hand", small, [0.5] * 3, [0.25] * 3),
                               model.state_dict(), None)
    check_one(report, vit, work, "hand-made 2x2", args, hand, None)
    check_one(report, vit, work, "hand-made 2x2", args, hand, 4)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "pos-embed", 5, body))
