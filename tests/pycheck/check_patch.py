"""Check 15, activation and attribution patching: `vit patch --clean IMG
--corrupt IMG --method both` (patch.json) gives the effects an independent
PyTorch computation gives on the same random model and images.

The labels are the model's own predictions on each image, c (clean) and k
(corrupt), and the metric is m = logit_c - logit_k. Each effect is
normalised as (m_patched - m_corrupt) / (m_clean - m_corrupt), so that 0 is
the corrupt run and 1 the clean one:
  residual[l][t]  the stream after block l (0: the embeddings) at token t
                  copied from the clean run into the corrupt run, which then
                  runs on through blocks l+1.. and the head;
  heads[l][h]     in block l, head h's columns of the merged heads' output
                  (before the output projection) copied from the clean run
                  into the corrupt run at that block;
  attribution     the same positions, estimated as (clean - corrupt
                  activation) . dm/d(activation) on the corrupt run, summed
                  over the features, divided by m_clean - m_corrupt.
correlation is Pearson's over all residual and head entries together.

The reference runs in float64. It draws image pairs until the model predicts
two different classes, each clearly (its top two logits apart by more than
1e-3), with |m_clean - m_corrupt| > 0.5, so that the
normalisation does not magnify float32 noise past the tolerance; and it makes
sure that patching moves the metric (a no-op would fail).

Models A (class-token pooling, RGB) and B (mean pooling, gray).
"""

import json
import sys

import torch

import vitpy

TOLERANCE = 1e-4
MIN_GAP = 0.5
KEYS = {"pairs", "mode", "residual", "heads", "attribution", "correlation"}


def run(model, x, stream_patch=None, head_patch=None, keep=False):
    """The logits of x (1, C, S, S), with the stream at (layer, token) or block l's
    head h slice replaced: stream_patch = (layer, token, value (D)); head_patch
    = (block, head, value (N, Dh)). keep: also the streams and merged heads,
    with their gradients retained. -> (logits, streams, merged)."""
    h = model.embed(x)
    streams, merged_all = [], []

    def visit(layer, h):
        if stream_patch is not None and stream_patch[0] == layer:
            h = h.clone()
            h[0, stream_patch[1]] = stream_patch[2]
        if keep:
            h.retain_grad()
        streams.append(h)
        return h

    h = visit(0, h)
    for l, block in enumerate(model.blocks):
        merged, _ = block.attn.merged_heads(block.norm1(h))
        if head_patch is not None and head_patch[0] == l:
            width = block.attn.head_dim
            merged = merged.clone()
            merged[0, :, head_patch[1] * width:(head_patch[1] + 1) * width] = head_patch[2]
        if keep:
            merged.retain_grad()
        merged_all.append(merged)
        h = h + block.attn.proj(merged)
        h = h + block.mlp(block.norm2(h))
        h = visit(l + 1, h)
    return model.readout(h), streams, merged_all


def python_patching(model, clean, corrupt):
    with torch.no_grad():
        clean_logits, clean_streams, clean_merged = run(model, clean)
        corrupt_logits, _, _ = run(model, corrupt)
    c, k = clean_logits.argmax(1).item(), corrupt_logits.argmax(1).item()

    def metric(logits):
        return logits[0, c] - logits[0, k]

    m_clean, m_corrupt = metric(clean_logits).item(), metric(corrupt_logits).item()
    gap = m_clean - m_corrupt

    def normalised(logits):
        return (metric(logits).item() - m_corrupt) / gap

    depth, tokens = len(model.blocks), clean_streams[0].shape[1]
    heads = model.m["heads"]
    with torch.no_grad():
        residual = [[normalised(run(model, corrupt, stream_patch=(l, t, clean_streams[l][0, t]))[0])
                     for t in range(tokens)] for l in range(depth + 1)]
        head_effects = []
        for l, block in enumerate(model.blocks):
            width = block.attn.head_dim
            head_effects.append([normalised(run(model, corrupt, head_patch=(
                l, h, clean_merged[l][0, :, h * width:(h + 1) * width]))[0]) for h in range(heads)])
    logits, streams, merged = run(model, corrupt, keep=True)
    metric(logits).backward()
    attribution_residual = [((clean_streams[l] - streams[l]) * streams[l].grad)[0].sum(-1).div(gap).tolist()
                            for l in range(depth + 1)]
    attribution_heads = []
    for l, block in enumerate(model.blocks):
        width = block.attn.head_dim
        product = ((clean_merged[l] - merged[l]) * merged[l].grad)[0]  # (N, I)
        attribution_heads.append([product[:, h * width:(h + 1) * width].sum().item() / gap
                                  for h in range(heads)])
    return {"residual": residual, "heads": head_effects,
            "attribution": {"residual": attribution_residual, "heads": attribution_heads}}, (c, k, gap)


def correlation(result):
    real = torch.tensor([v for row in result["residual"] + result["heads"] for v in row], dtype=torch.float64)
    estimate = torch.tensor([v for part in ("residual", "heads") for row in result["attribution"][part]
                             for v in row], dtype=torch.float64)
    return torch.corrcoef(torch.stack([real, estimate]))[0, 1].item()


def varied_images(work, stem, m, generator):
    """Two of vitpy's random images, each darkened or brightened by a random
    amount (the random models predict one class for most plain noise). ->
    (uint8 pixels (2, C, S, S), PNG paths)."""
    pixels, _ = vitpy.random_images(2, m["channels"], m["image_size"], generator)
    shift = torch.randint(-120, 121, (2, 1, 1, 1), generator=generator)
    pixels = (pixels.int() + shift).clamp(0, 255).to(torch.uint8)
    arrays = [p.permute(1, 2, 0).numpy() if m["channels"] == 3 else p[0].numpy() for p in pixels]
    return pixels, vitpy.write_pngs(work, stem, arrays)


def check_model(report, vit, work, name, config, with_metadata, generator):
    m = config["model"]
    model, model_args = vitpy.write_random_model(work, name, config, with_metadata, generator)
    model64 = vitpy.float64_copy(model)
    data = config["data"]
    for attempt in range(50):
        pixels, paths = varied_images(work, f"{name}-{attempt}", m, generator)
        x = vitpy.normalize(pixels, data["mean"], data["std"]).double()
        with torch.no_grad():
            logits = model64(x)[0]
        c, k = logits.argmax(1).tolist()
        top2 = logits.topk(2, dim=1).values
        clear = (top2[:, 0] - top2[:, 1]).min().item() > 1e-3  # each prediction well defined
        if c != k and clear and abs((logits[0, c] - logits[0, k]) - (logits[1, c] - logits[1, k])).item() > MIN_GAP:
            break
    else:
        report.equal(f"model {name}: a pair with two predictions found", False, True)
        return
    expected, (c, k, gap) = python_patching(model64, x[:1], x[1:])
    what = f"model {name} ({m['pool']} pool, classes {c} vs {k}, m_clean - m_corrupt = {gap:.3g})"
    out = work / f"{name}-patch"
    vitpy.run_vit(vit, "patch", *model_args, "--clean", paths[0], "--corrupt", paths[1], "--method", "both",
                  "--out", out, threads=1)
    result = json.loads((out / "patch.json").read_text())
    report.equal(f"{what}: patch.json keys", set(result), KEYS)
    report.equal(f"{what}: pairs, mode", (result["pairs"], result["mode"]), (1, "both"))
    flat = [v for row in expected["residual"] + expected["heads"] for v in row]
    report.equal(f"{what}: patching moves the metric by up to {max(abs(v) for v in flat):.3g} "
                 f"of the gap in Python (> 100x tolerance)", max(abs(v) for v in flat) > 100 * TOLERANCE, True)
    for part in ("residual", "heads"):
        report.close(f"{what}: activation patching, {part}", result[part], expected[part], TOLERANCE)
        report.close(f"{what}: attribution patching, {part}", result["attribution"][part],
                     expected["attribution"][part], TOLERANCE)
    report.close(f"{what}: the correlation of the two", result["correlation"], correlation(expected), TOLERANCE)


if __name__ == "__main__":
    sys.exit(vitpy.run_check(__doc__, "patch", 15, vitpy.models_a_and_b(check_model, "pycheck-patch")))
