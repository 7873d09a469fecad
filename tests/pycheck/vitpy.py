"""An independent Python reference for cross-checking the `vit` binary.

Written from the published descriptions (the safetensors format, the PNG
specification, timm's VisionTransformer, Abnar & Zuidema's rollout, Chefer et
al.'s gradient rollout and the ViT paper's mean attention distance), not from
vit's C++ sources, so that a shared misunderstanding cannot hide a bug on both
sides.

Needs only the standard library, torch and numpy (Debian's python3-torch).
"""

import argparse
import copy
import json
import math
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------
# safetensors: u64 little-endian header size, JSON header, raw data.

_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "U8": torch.uint8,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def _raw_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16; the bits are the same
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> tensor (stored in its own dtype); metadata: str -> str."""
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    blobs, offset = [], 0
    for name in sorted(tensors):
        blob = _raw_bytes(tensors[name])
        t = tensors[name]
        header[name] = {
            "dtype": _DTYPE_NAMES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # keeps the data section 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """-> (name -> tensor, metadata dict, dtype name per tensor)."""
    data = Path(path).read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    metadata = header.pop("__metadata__", {})
    body = bytearray(data[8 + size :])
    tensors, dtypes = {}, {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        count = math.prod(info["shape"])
        t = torch.frombuffer(body, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        assert (end - begin) == count * t.element_size(), name
        tensors[name] = t.clone().reshape(info["shape"])
        dtypes[name] = info["dtype"]
    return tensors, metadata, dtypes


# ---------------------------------------------------------------------------
# PNG writer: 8-bit gray (colour type 0) or RGB (colour type 2), no filtering.


def _png_chunk(kind, payload):
    body = kind + payload
    return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def write_png(path, pixels):
    """pixels: uint8 array (H, W) or (H, W, 3)."""
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    height, width = pixels.shape[:2]
    colour_type = 2 if pixels.ndim == 3 else 0
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(_png_chunk(b"IHDR", ihdr))
        f.write(_png_chunk(b"IDAT", zlib.compress(rows, 6)))
        f.write(_png_chunk(b"IEND", b""))


# ---------------------------------------------------------------------------
# timm-layout Vision Transformer. Key letters: B batch, N tokens (class token
# first), D width, H heads, Dh head width, I = H * Dh, P patches.


class Attention(nn.Module):
    def __init__(self, dim, heads, head_dim, qkv_bias):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inner = heads * head_dim
        self.qkv = nn.Linear(dim, 3 * inner, bias=qkv_bias)
        self.proj = nn.Linear(inner, dim)

    def merged_heads(self, x):
        """The heads' outputs before the projection: (B, N, I), head h in
        columns h*Dh..(h+1)*Dh; and the attention (B, H, N, N)."""
        B, N, _ = x.shape
        # timm's fused layout: output features ordered (q|k|v, head, head_dim)
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (B, H, N, Dh)
        attn = (q * self.head_dim**-0.5) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)  # (B, H, N, N)
        return (attn @ v).transpose(1, 2).reshape(B, N, -1), attn

    def forward(self, x):
        out, attn = self.merged_heads(x)
        return self.proj(out), attn


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()  # exact (erf) GELU, timm's default
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        head_dim = m["dim_head"] or m["dim"] // m["heads"]
        self.norm1 = nn.LayerNorm(m["dim"], eps=m["layer_norm_eps"])
        self.attn = Attention(m["dim"], m["heads"], head_dim, m["qkv_bias"])
        self.norm2 = nn.LayerNorm(m["dim"], eps=m["layer_norm_eps"])
        self.mlp = Mlp(m["dim"], m["mlp_dim"])

    def forward(self, x):
        y, attn = self.attn(self.norm1(x))
        x = x + y
        x = x + self.mlp(self.norm2(x))
        return x, attn


class PatchEmbed(nn.Module):
    def __init__(self, m):
        super().__init__()
        p = m["patch_size"]
        self.proj = nn.Conv2d(m["channels"], m["dim"], kernel_size=p, stride=p)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # (B, P, D)


MODEL_DEFAULTS = {"dim_head": 0, "qkv_bias": True, "pool": "cls", "layer_norm_eps": 1e-6}


class VisionTransformer(nn.Module):
    """timm's VisionTransformer with class token, no fc_norm: pool 'cls' or 'mean'."""

    def __init__(self, model_config):
        super().__init__()
        m = dict(MODEL_DEFAULTS, **model_config)
        self.m = m
        grid = m["image_size"] // m["patch_size"]
        self.patch_embed = PatchEmbed(m)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, m["dim"]))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, m["dim"]))
        self.blocks = nn.ModuleList([Block(m) for _ in range(m["depth"])])
        self.norm = nn.LayerNorm(m["dim"], eps=m["layer_norm_eps"])
        self.head = nn.Linear(m["dim"], m["num_classes"])

    def embed(self, images):
        """(B, C, S, S) -> the stream before the first block, (B, N, D):
        cat(class token, patch embeddings) + position embeddings."""
        x = self.patch_embed(images)
        return torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed

    def pool(self, x):
        """(B, N, D) -> (B, D): what the head reads, the class token or the patch mean."""
        return x[:, 0] if self.m["pool"] == "cls" else x[:, 1:].mean(dim=1)

    def readout(self, x):
        """A residual stream (B, N, D) -> logits (B, K): final norm, pooling, head."""
        return self.head(self.pool(self.norm(x)))

    def streams(self, images):
        """The residual stream before the first block and after each: L + 1 x (B, N, D)."""
        x = self.embed(images)
        out = [x]
        for block in self.blocks:
            x, _ = block(x)
            out.append(x)
        return out

    def forward(self, images):
        """(B, C, S, S) -> logits (B, K), [attention (B, H, N, N) per layer]."""
        x = self.embed(images)
        attentions = []
        for block in self.blocks:
            x, attn = block(x)
            attentions.append(attn)
        return self.readout(x), attentions


def randomize(model, generator):
    """Weights far from the usual init, so attention is peaked and every
    parameter visibly matters (a near-uniform attention would hide bugs)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm.weight":
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=generator))
            elif p.dim() >= 2 and name not in ("cls_token", "pos_embed"):
                fan_in = math.prod(p.shape[1:])
                p.copy_(torch.randn(p.shape, generator=generator) * (1.5 / math.sqrt(fan_in)))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator))


def normalize(pixels, mean, std):
    """uint8 (B, C, S, S) -> float, scaled to [0, 1] and normalised per channel."""
    mean = torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)
    std = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
    return ((pixels.double() / 255.0 - mean) / std).float()


def random_images(count, channels, side, generator):
    """uint8 (B, C, S, S) noise with some smooth structure, and their PNG arrays."""
    noise = torch.randint(0, 256, (count, channels, side, side), generator=generator)
    ramp = torch.linspace(0, 255, side).view(1, 1, 1, side)
    pixels = ((noise + ramp) / 2).round().clamp(0, 255).to(torch.uint8)
    arrays = [p.permute(1, 2, 0).numpy() if channels == 3 else p[0].numpy() for p in pixels]
    return pixels, arrays


# ---------------------------------------------------------------------------
# Analyses, in float64.


def rollout_masks(attentions, fusion="mean", discard_ratio=0.0, source="class_token", prefix=1,
                  pool_attention=None):
    """Abnar & Zuidema rollout: R = M_L ... M_1, M = rownorm(fuse(A) + I), where
    the floor(ratio * P^2) weakest patch-to-patch entries of fuse(A) are zeroed
    (ties: earlier in row-major order first). The first `prefix` tokens are
    the class token and the other prefix tokens. The map is R's class-token
    row, its patch rows' mean, or (source "attention_pool") its patch rows
    weighted by an attention pool's probabilities (B, H, 1, P), heads averaged.
    -> (B, g, g), each map / its max."""
    B, _, N, _ = attentions[0].shape
    P = N - prefix
    g = math.isqrt(P)
    eye = torch.eye(N, dtype=torch.float64)
    R = eye.expand(B, N, N).clone()
    k = math.floor(discard_ratio * P * P)
    for a in attentions:
        a = a.double()
        fused = {"mean": lambda: a.mean(1), "max": lambda: a.max(1).values, "min": lambda: a.min(1).values}[fusion]()
        if k > 0:
            patch = fused[:, prefix:, prefix:].reshape(B, P * P)
            order = torch.sort(patch, dim=1, stable=True).indices[:, :k]
            patch = patch.scatter(1, order, 0.0)
            fused = fused.clone()
            fused[:, prefix:, prefix:] = patch.view(B, P, P)
        M = fused + eye
        M = M / M.sum(-1, keepdim=True)
        R = M @ R
    if source == "class_token":
        mask = R[:, 0, prefix:]
    elif source == "attention_pool":
        weights = pool_attention.double().mean(1)  # (B, 1, P)
        mask = (weights @ R[:, prefix:, prefix:]).squeeze(1)
    else:
        mask = R[:, prefix:, prefix:].mean(1)
    peak = mask.max(dim=1, keepdim=True).values
    mask = torch.where(peak > 0, mask / peak.clamp_min(1e-300), torch.zeros_like(mask))
    return mask.view(B, g, g)


def saliency_maps(model, x, classes=None, reverse=False):
    """`vit saliency`'s maps of the class `classes` (B,), or of each image's
    predicted class when None, for normalised input x (B, C, S, S), by autograd
    (in x's and the model's dtype):
      grad          max over channels of |d logit_c / d x|           (B, S, S)
      grad-x-input  |sum over channels of x * d logit_c / d x|       (B, S, S)
      grad-rollout  Chefer et al. (2021): A_bar = mean over heads of
                    (dlogit_c/dA * A)^+, R = I, R = R + A_bar R per layer; of
                    R - I, the class token's row (pool cls) or the mean of
                    the patch rows (pool mean), patch columns      (B, g, g)
    reverse=True multiplies R + R A_bar instead (vit-explain's issue #6).
    -> (method -> float64 maps, the explained classes)."""
    x = x.detach().clone().requires_grad_(True)
    logits, attentions = model(x)
    for a in attentions:
        a.retain_grad()
    if classes is None:
        classes = logits.argmax(1)
    logits.gather(1, classes[:, None]).sum().backward()
    g = x.grad.double()
    maps = {"grad": g.abs().amax(1), "grad-x-input": (x.detach().double() * g).sum(1).abs()}
    B, _, N, _ = attentions[0].shape
    R = torch.eye(N, dtype=torch.float64).expand(B, N, N).clone()
    for a in attentions:
        a_bar = (a.grad.double() * a.detach().double()).clamp(min=0).mean(1)
        R = R + (R @ a_bar if reverse else a_bar @ R)
    grid = math.isqrt(N - 1)
    R = R - torch.eye(N, dtype=torch.float64)
    rows = R[:, 0, 1:] if model.m["pool"] == "cls" else R[:, 1:, 1:].mean(1)
    maps["grad-rollout"] = rows.reshape(B, grid, grid)
    return maps, classes


def integrated_gradients(model, x, classes, baseline=None, steps=32):
    """Integrated gradients of logit `classes` (B,) for normalised x (B, C, S, S)
    from `baseline` (broadcast; None: zeros), as Captum computes them by
    default: numpy's Gauss-Legendre points moved to [0, 1], the gradients at
    baseline + a (x - baseline) weighted and summed, times x - baseline.
    -> (the map summed over channels with its sign (B, S, S) float64,
        the completeness error (sum - (f(x) - f(b))) / |f(x) - f(b)| (B,))."""
    b = torch.zeros_like(x) if baseline is None else baseline.to(x.dtype).expand_as(x)
    points, weights = np.polynomial.legendre.leggauss(steps)
    total = torch.zeros_like(x, dtype=torch.float64)
    for a, w in zip(0.5 * (1 + points), 0.5 * weights):
        at = (b + float(a) * (x - b)).detach().requires_grad_(True)
        logits, _ = model(at)
        logits.gather(1, classes[:, None]).sum().backward()
        total += float(w) * at.grad.double()
    attributions = (x - b).double() * total
    with torch.no_grad():
        change = (model(x)[0] - model(b)[0]).gather(1, classes[:, None])[:, 0].double()
    return attributions.sum(1), (attributions.sum((1, 2, 3)) - change) / change.abs()


def patch_sums(maps, patch_size):
    """(B, S, S) pixel maps -> (B, g, g): each patch's P x P pixels summed."""
    B, S, _ = maps.shape
    g = S // patch_size
    return maps.reshape(B, g, patch_size, g, patch_size).sum(dim=(2, 4))


def float64_copy(model):
    """A float64 copy of a Python model, for references free of float32 noise."""
    return copy.deepcopy(model).double()


def smallest_gap_at_threshold(attentions, fusion, discard_ratio):
    """The smallest gap between the k-th and (k+1)-th weakest link over all
    layers and images: if float32 noise exceeded it, two programs could
    legitimately discard different entries."""
    N = attentions[0].shape[-1]
    P = N - 1
    k = math.floor(discard_ratio * P * P)
    gap = math.inf
    for a in attentions:
        a = a.double()
        fused = {"mean": a.mean(1), "max": a.max(1).values, "min": a.min(1).values}[fusion]
        s = torch.sort(fused[:, 1:, 1:].reshape(a.shape[0], -1), dim=1).values
        if 0 < k < P * P:
            gap = min(gap, (s[:, k] - s[:, k - 1]).min().item())
    return gap


def patch_distances(grid, patch_size):
    """(P, P): pixels between the centres of patches q and k (row-major grid)."""
    rows = torch.arange(grid * grid, dtype=torch.float64) // grid
    cols = torch.arange(grid * grid, dtype=torch.float64) % grid
    dr = rows[:, None] - rows[None, :]
    dc = cols[:, None] - cols[None, :]
    return patch_size * torch.sqrt(dr * dr + dc * dc)


def mean_attention_distance(attentions, patch_size, renormalize=False, prefix=1):
    """ViT paper Fig. 7: per layer and head, the mean over query patches of the
    attention-weighted pixel distance to the key patches. -> (L, H), averaged
    over images. The first `prefix` tokens (class token, registers) are left out."""
    per_layer = []
    for a in attentions:
        W = a.double()[:, :, prefix:, prefix:]  # (B, H, P, P): the prefix tokens dropped
        if renormalize:
            sums = W.sum(-1, keepdim=True)
            W = torch.where(sums > 0, W / sums.clamp_min(1e-300), torch.zeros_like(W))
        grid = math.isqrt(W.shape[-1])
        D = patch_distances(grid, patch_size)
        per_layer.append((W * D).sum(-1).mean(-1))  # (B, H)
    return torch.stack(per_layer, dim=1).mean(0)  # (L, H)


# ---------------------------------------------------------------------------
# Running vit and reporting.


def parse_args(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--vit", required=True, help="path to the vit binary")
    parser.add_argument("--workdir", required=True, help="scratch folder (created)")
    args = parser.parse_args()
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    # The references' tensors are tiny: one thread is plenty, and on a busy
    # 2-core machine (ctest -j2, a build) two OpenMP threads that spin while
    # they wait run far slower than one.
    torch.set_num_threads(1)
    return args


def run_vit(vit, *args, cwd=None, threads=2):
    """Runs `vit ARGS --device cpu --threads THREADS --quiet`; exits 1 on failure.
    The analyses of small models and few images take threads=1: on a busy
    2-core machine two threads that spin while they wait made `vit
    faithfulness` far slower."""
    command = [str(Path(vit).resolve()), *map(str, args), "--device", "cpu", "--threads", str(threads), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if result.returncode != 0:
        print("FAILED: " + " ".join(command), file=sys.stderr)
        print(result.stdout + result.stderr, file=sys.stderr)
        sys.exit(1)
    return result.stdout


def json_output(text):
    """The JSON document in a command's stdout. spdlog writes its lines there
    too (e.g. a warning), so start at the first line that opens the document."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip() in ("[", "{", "[]", "{}"):
            return json.loads("".join(lines[i:]))
    raise ValueError("no JSON document in vit's output:\n" + text)


class Report:
    """Collects comparisons; exit status 1 if any failed."""

    def __init__(self, check):
        self.check = check
        self.failures = 0

    def close(self, what, ours, theirs, tolerance):
        ours = torch.as_tensor(ours, dtype=torch.float64)
        theirs = torch.as_tensor(theirs, dtype=torch.float64)
        if ours.shape != theirs.shape:
            print(f"{self.check}: {what}: FAIL shape {list(ours.shape)} vs Python {list(theirs.shape)}")
            self.failures += 1
            return
        diff = (ours - theirs).abs().max().item() if ours.numel() else 0.0
        ok = diff <= tolerance
        scale = theirs.abs().max().item() if theirs.numel() else 0.0
        print(f"{self.check}: {what} {list(ours.shape)}: max |delta| = {diff:.3g} "
              f"(values up to {scale:.3g}; tolerance {tolerance:g}) {'OK' if ok else 'FAIL'}")
        self.failures += 0 if ok else 1

    def equal(self, what, ours, theirs):
        ok = ours == theirs
        print(f"{self.check}: {what}: {'OK' if ok else 'FAIL'}" + ("" if ok else f" (vit {ours!r} vs Python {theirs!r})"))
        self.failures += 0 if ok else 1

    def finish(self):
        print(f"{self.check}: {'PASSED' if self.failures == 0 else f'{self.failures} FAILED'}")
        return 0 if self.failures == 0 else 1


# ---------------------------------------------------------------------------
# What the check scripts share: two small models, their inputs, main().

# A: class-token pooling, qkv bias, RGB, on an 8x8 grid of 4 px patches;
# B: mean pooling, no qkv bias, head width != dim / heads, gray, LayerNorm eps
# 1e-5, on a 5x5 grid of 6 px patches.
MODEL_A = {"image_size": 32, "patch_size": 4, "channels": 3, "num_classes": 5, "dim": 48, "depth": 3,
           "heads": 3, "mlp_dim": 96, "pool": "cls", "qkv_bias": True, "layer_norm_eps": 1e-6}
MODEL_B = {"image_size": 30, "patch_size": 6, "channels": 1, "num_classes": 4, "dim": 40, "depth": 3,
           "heads": 4, "dim_head": 12, "mlp_dim": 64, "pool": "mean", "qkv_bias": False,
           "layer_norm_eps": 1e-5}


def full_config(name, model, mean, std):
    return {"name": name, "model": model, "data": {"dataset": "image-folder", "mean": mean, "std": std}}


def config_a(name):
    return full_config(name, MODEL_A, [0.5, 0.4, 0.3], [0.25, 0.3, 0.2])


def config_b(name, model=MODEL_B):
    return full_config(name, model, [0.45], [0.22])


def write_weights(work, name, config, state, metadata):
    """`state` in `name`.safetensors with `metadata`; with none (a plain timm
    file) the architecture goes to `name`.json for --config. -> vit's model flags."""
    extra = ()
    if metadata is None:
        config_path = work / f"{name}.json"
        config_path.write_text(json.dumps(config))
        extra = ("--config", config_path)
    weights = work / f"{name}.safetensors"
    write_safetensors(weights, state, metadata)
    return ("--checkpoint", weights, *extra)


def write_random_model(work, name, config, with_metadata, generator):
    """Random weights in `name`.safetensors, with vit_config in __metadata__ or
    as a plain timm file given --config. -> (Python model, vit's model flags)."""
    model = VisionTransformer(config["model"]).eval()
    randomize(model, generator)
    metadata = {"format": "pt", "vit_config": json.dumps(config)} if with_metadata else None
    return model, write_weights(work, name, config, model.state_dict(), metadata)


def write_pngs(work, stem, arrays):
    """Each array as `stem`-<i>.png in work. -> the paths, in order."""
    paths = [work / f"{stem}-{i}.png" for i in range(len(arrays))]
    for path, array in zip(paths, arrays):
        write_png(path, array)
    return paths


def write_random_images(work, name, count, m, generator):
    """`count` random images for model config m. -> (uint8 pixels, PNG paths)."""
    pixels, arrays = random_images(count, m["channels"], m["image_size"], generator)
    return pixels, write_pngs(work, name, arrays)


def run_model(model, pixels, data):
    """The model on uint8 pixels normalised with data's mean and std. -> (logits, attentions)."""
    with torch.no_grad():
        return model(normalize(pixels, data["mean"], data["std"]))


def models_a_and_b(check_model, prefix):
    """A body for run_check that runs check_model(report, vit, work, name,
    config, with_metadata, generator) on A with vit_config in __metadata__ and
    on B as a plain timm file."""

    def body(report, vit, work, generator):
        check_model(report, vit, work, "a", config_a(f"{prefix}-a"), True, generator)
        check_model(report, vit, work, "b", config_b(f"{prefix}-b"), False, generator)

    return body


def run_check(description, check, seed, body):
    """A script's main: parses --vit and --workdir, runs body(report, vit,
    work, generator) with a generator seeded `seed`. -> exit status."""
    args = parse_args(description)
    report = Report(check)
    body(report, args.vit, Path(args.workdir), torch.Generator().manual_seed(seed))
    return report.finish()
