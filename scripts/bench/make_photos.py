#!/usr/bin/env python3
"""A folder of real photographs at ImageNet's sizes, for the streamed
pipeline's benchmarks: windows of the photographs in OpenCV's sample data
(Debian's opencv-doc: aerial views, fruit, a baboon, buildings, a squirrel,
...) at their own scale, never resized: 500 pixels on the longer side and
333 to 400 on the shorter (ImageNet's typical 500 x 375), three in four
landscape, each from a photograph that holds it, flipped at random, saved
as JPEG (quality 85 to 95), in the layout of an image folder:
OUT/train/<class>/*.jpg and OUT/val/<class>/*.jpg. It prints the mean size
in bytes.

Usage: make_photos.py SOURCE_DIR OUT --train N [--val N] [--classes 10] [--seed 0]
"""
import argparse
import random
from pathlib import Path

from PIL import Image

# The colour photographs among opencv-doc's examples/data (no logos,
# calibration boards or drawings).
PHOTOS = ["aero1", "aero3", "aloeL", "aloeR", "apple", "baboon", "building", "butterfly",
          "ela_original", "fruits", "home", "left", "leuvenA", "leuvenB",
          "licenseplate_motion", "messi5", "orange", "pca_test1", "squirrel_cls", "stuff"]


def one_photo(sources, rng):
    longer, shorter = 500, rng.randint(333, 400)
    w, h = (longer, shorter) if rng.random() < 0.75 else (shorter, longer)
    source = rng.choice([s for s in sources if s.size[0] >= w and s.size[1] >= h])
    left, top = rng.randint(0, source.size[0] - w), rng.randint(0, source.size[1] - h)
    image = source.crop((left, top, left + w, top + h))
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    return image


def write_split(out, sources, count, classes, rng):
    """-> the bytes written."""
    written = 0
    for i in range(count):
        folder = out / f"class{i % classes:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{i:06d}.jpg"
        one_photo(sources, rng).save(path, quality=rng.randint(85, 95))
        written += path.stat().st_size
    return written


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("--train", type=int, required=True)
    p.add_argument("--val", type=int, default=0)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    sources = [Image.open(Path(a.source) / f"{name}.jpg").convert("RGB") for name in PHOTOS]
    rng = random.Random(a.seed)
    written = write_split(Path(a.out) / "train", sources, a.train, a.classes, rng)
    if a.val:
        written += write_split(Path(a.out) / "val", sources, a.val, a.classes, rng)
    print(f"{a.out}: {a.train + a.val} photographs, {written / (a.train + a.val) / 1000:.0f} KB "
          "on average")


if __name__ == "__main__":
    main()
