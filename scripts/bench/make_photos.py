#!/usr/bin/env python3
"""A folder of real photographs of varied size, for the streamed pipeline's
benchmarks: random crops of the photographs in OpenCV's sample data (Debian's
opencv-doc: aerial views, fruit, a baboon, buildings, a squirrel, ...),
each resized so that its longer side is 280 to 520 pixels, at a random
aspect ratio between 3:4 and 4:3, saved as JPEG (quality 85 to 95), in the
layout of an image folder: OUT/train/<class>/*.jpg and OUT/val/<class>/*.jpg.

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
    source = rng.choice(sources)
    w, h = source.size
    share = rng.uniform(0.35, 1.0)
    ratio = rng.uniform(0.75, 4 / 3)
    cw = min(w, int(round((w * h * share * ratio) ** 0.5)))
    ch = min(h, int(round(cw / ratio)))
    left, top = rng.randint(0, w - cw), rng.randint(0, h - ch)
    crop = source.crop((left, top, left + cw, top + ch))
    longer = rng.randint(280, 520)
    scale = longer / max(cw, ch)
    size = (max(1, round(cw * scale)), max(1, round(ch * scale)))
    image = crop.resize(size, Image.BICUBIC)
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    return image


def write_split(out, sources, count, classes, rng):
    for i in range(count):
        folder = out / f"class{i % classes:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        one_photo(sources, rng).save(folder / f"{i:06d}.jpg", quality=rng.randint(85, 95))


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
    write_split(Path(a.out) / "train", sources, a.train, a.classes, rng)
    if a.val:
        write_split(Path(a.out) / "val", sources, a.val, a.classes, rng)


if __name__ == "__main__":
    main()
