"""vit's streamed crops against torchvision's, on what tests/pycheck_test.cpp
wrote into --workdir:

- boxes_<H>x<W>_<name>.csv: 10,000 random resized crop boxes (top, left,
  height, width) that vit drew for an H x W image with the scale and ratio
  of the file's first line. torchvision's RandomResizedCrop.get_params draws
  10,000 more; the two samples' area shares, log aspect ratios and relative
  corners must have the same distribution: a two-sample Kolmogorov-Smirnov
  test, D below its critical value at alpha = 0.001.
- eval_<k>.jpg and eval_<k>.png: a photograph and vit's evaluation transform
  of it (shorter side to floor(224 / 0.875) = 256, centre 224). torchvision's
  eval transform (PIL, Resize(256), CenterCrop(224)) of the JPEG must agree
  within a mean absolute difference of 2 on uint8, and its largest
  difference is reported (the two resize filters differ: PIL's antialiased
  bilinear against OpenCV's area average, and vit decodes large JPEGs at a
  reduced DCT scale).
- eval_<k>_bilinear.png and eval_<k>_bicubic.png: the same with
  data.interpolation bilinear and bicubic, which are Pillow's filters to the
  bit: torchvision's transform with InterpolationMode.BILINEAR and BICUBIC
  must give the same bytes. Pillow before 13 ran the horizontal pass first
  whatever the shape; vit follows Pillow 13, so with an older Pillow an image
  whose height shrinks by over twice as many pixels as its width is only
  reported.

Usage: check_crops.py --vit VIT --workdir DIR (VIT unused: the C++ test drew
the boxes with vit's own functions).
"""
import argparse
import math
import sys
from pathlib import Path

import numpy as np
import torch
import PIL
from PIL import Image
from torchvision import transforms
from torchvision.transforms import InterpolationMode
from torchvision.transforms import RandomResizedCrop


def ks_statistic(a, b):
    a, b = np.sort(a), np.sort(b)
    values = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, values, side="right") / len(a)
    cdf_b = np.searchsorted(b, values, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def features(boxes, height, width):
    top, left, h, w = boxes.T.astype(np.float64)
    return {
        "area share": h * w / (height * width),
        "log aspect ratio": np.log(w / h),
        "relative top": np.where(h < height, top / np.maximum(height - h, 1), 0.5),
        "relative left": np.where(w < width, left / np.maximum(width - w, 1), 0.5),
    }


def check_boxes(path, failures):
    lines = path.read_text().splitlines()
    scale_low, scale_high, ratio_low, ratio_high = map(float, lines[0].split(","))
    ours = np.array([list(map(int, line.split(","))) for line in lines[1:]])
    height, width = map(int, path.stem.split("_")[1].split("x"))
    torch.manual_seed(0)
    image = torch.empty(1, height, width)
    theirs = np.array([RandomResizedCrop.get_params(image, [scale_low, scale_high],
                                                    [ratio_low, ratio_high])
                       for _ in range(len(ours))])
    critical = 1.949 * math.sqrt(2.0 / len(ours))  # alpha = 0.001
    ours_f, theirs_f = features(ours, height, width), features(theirs, height, width)
    for name in ours_f:
        d = ks_statistic(ours_f[name], theirs_f[name])
        ok = d < critical
        print(f"{path.name}: {name}: KS D = {d:.4f} (critical {critical:.4f}) "
              f"{'ok' if ok else 'DIFFERENT'}")
        if not ok:
            failures.append(f"{path.name} {name}")


def check_eval(jpeg, failures):
    ours = np.asarray(Image.open(jpeg.with_suffix(".png")).convert("RGB"), dtype=np.int32)
    transform = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
    theirs = np.asarray(transform(Image.open(jpeg).convert("RGB")), dtype=np.int32)
    if ours.shape != theirs.shape:
        failures.append(f"{jpeg.name}: shape {ours.shape} against torchvision's {theirs.shape}")
        return
    difference = np.abs(ours - theirs)
    mean, largest = float(difference.mean()), int(difference.max())
    within2 = float((difference <= 2).mean())
    size = Image.open(jpeg).size
    print(f"{jpeg.name} ({size[0]}x{size[1]}): mean |difference| {mean:.3f}, largest {largest}, "
          f"{100 * within2:.1f}% of values within 2")
    if mean >= 2.0:
        failures.append(f"{jpeg.name}: mean difference {mean:.3f}")


def pillow_major():
    return int(PIL.__version__.split(".")[0])


def check_pillow_filter(jpeg, mode, failures):
    name = mode.value
    ours = np.asarray(Image.open(jpeg.with_name(f"{jpeg.stem}_{name}.png")).convert("RGB"),
                      dtype=np.int32)
    image = Image.open(jpeg).convert("RGB")
    transform = transforms.Compose([transforms.Resize(256, interpolation=mode),
                                    transforms.CenterCrop(224)])
    theirs = np.asarray(transform(image), dtype=np.int32)
    width, height = image.size
    short = min(width, height)
    resized = (256 * height // short, 256 * width // short)
    order_differs = (height - resized[0] > 0 and height - resized[0] > 2 * (width - resized[1])
                     and pillow_major() < 13)
    differing = int((ours != theirs).sum()) if ours.shape == theirs.shape else -1
    print(f"{jpeg.name} ({width}x{height}) {name}: {differing} of {theirs.size} values differ "
          f"from Pillow {PIL.__version__}'s"
          + (" (its passes run in the other order: reported only)" if order_differs else ""))
    if differing != 0 and not order_differs:
        failures.append(f"{jpeg.name} {name}: {differing} values differ")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vit")
    p.add_argument("--workdir", required=True)
    a = p.parse_args()
    work = Path(a.workdir)
    failures = []
    boxes = sorted(work.glob("boxes_*.csv"))
    jpegs = sorted(work.glob("eval_*.jpg"))
    if not boxes or not jpegs:
        print(f"nothing to check in {work}")
        return 1
    for path in boxes:
        check_boxes(path, failures)
    for jpeg in jpegs:
        check_eval(jpeg, failures)
        for mode in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
            check_pillow_filter(jpeg, mode, failures)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("crops and the evaluation transform agree with torchvision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
