"""Writes an MNIST-like data set of printed digits, for pre-training on a
machine without MNIST: the digits 0-9 drawn in the DejaVu fonts that Debian
ships (fonts-dejavu-core / -extra), each at a random size, slant, rotation,
stroke weight and position, blurred a little, as white on black 28x28 images.
The files are MNIST's IDX layout, gzipped, so `data.dataset = "mnist"` reads
them:
    python3 scripts/bench/make_font_digits.py data/font-digits [--train 60000 --test 10000 --seed 0]
Needs numpy and Pillow (Debian: python3-numpy python3-pil).
"""

import argparse
import glob
import gzip
import struct
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

SIDE = 28
CANVAS = 56  # drawn at twice the size, then reduced, for anti-aliased strokes


def fonts():
    found = sorted(glob.glob("/usr/share/fonts/truetype/dejavu/DejaVu*.ttf"))
    found = [f for f in found if "MathTeX" not in f]
    if not found:
        raise SystemExit("no DejaVu fonts in /usr/share/fonts/truetype/dejavu (apt-get install fonts-dejavu-core)")
    return found


def draw_digit(digit, font_path, rng):
    size = int(rng.integers(30, 44))
    font = ImageFont.truetype(font_path, size)
    image = Image.new("L", (CANVAS, CANVAS), 0)
    draw = ImageDraw.Draw(image)
    stroke = int(rng.integers(0, 3))
    box = draw.textbbox((0, 0), str(digit), font=font, stroke_width=stroke)
    x = (CANVAS - (box[2] - box[0])) / 2 - box[0] + rng.normal(0, 2.5)
    y = (CANVAS - (box[3] - box[1])) / 2 - box[1] + rng.normal(0, 2.5)
    draw.text((x, y), str(digit), fill=255, font=font, stroke_width=stroke, stroke_fill=255)
    shear = rng.normal(0, 0.15)
    image = image.transform(image.size, Image.AFFINE, (1, shear, -shear * CANVAS / 2, 0, 1, 0),
                            resample=Image.BILINEAR)
    image = image.rotate(rng.normal(0, 10), resample=Image.BILINEAR)
    image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2)))
    return np.asarray(image.resize((SIDE, SIDE), Image.LANCZOS), dtype=np.uint8)


def write_idx(path, array):
    magic = 0x0803 if array.ndim == 3 else 0x0801
    with gzip.open(path, "wb") as out:
        out.write(struct.pack(">I", magic))
        out.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        out.write(array.astype(np.uint8).tobytes())


def make(count, rng, font_paths):
    labels = np.arange(count) % 10
    rng.shuffle(labels)
    images = np.stack([draw_digit(int(d), font_paths[int(rng.integers(len(font_paths)))], rng) for d in labels])
    return images, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--train", type=int, default=60000)
    parser.add_argument("--test", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    font_paths = fonts()
    for split, count in (("train", args.train), ("t10k", args.test)):
        images, labels = make(count, rng, font_paths)
        write_idx(out / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(out / f"{split}-labels-idx1-ubyte.gz", labels)
        print(f"{out}/{split}: {count} images from {len(font_paths)} fonts")


if __name__ == "__main__":
    main()
