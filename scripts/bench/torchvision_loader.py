#!/usr/bin/env python3
"""The torchvision input pipeline as a careful user runs it on one core,
timed for scripts/bench/pipeline.sh: RandomResizedCrop(224) and
RandomHorizontalFlip per image, uint8 batches collated by a DataLoader in
the process (num_workers 0: on one core a worker process only adds the
copy of every batch through shared memory), normalised per batch as floats.

Variants (--variant):
  pil  ImageFolder's PIL loader, transforms v1 on PIL images, PILToTensor
       (run with Pillow, or with pillow-simd installed over it);
  v2   torchvision.io.decode_jpeg of the file's bytes, transforms v2 on the
       uint8 tensor (torchvision >= 0.15);
  pil with --shards: WebDataset shards (pip's webdataset, as timm and
       OpenCLIP read them), shuffle(1000), PIL decoding.
It times --batches batches after --warmup and prints one JSON line.

Usage: torchvision_loader.py (--folder DIR | --shards PATTERN) [--variant pil|v2]
       [--workers 0] [--batch 64] [--batches 40]
"""
import argparse
import json
import time

import torch
import torchvision
from torchvision import datasets, transforms

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255


def pil_transform():
    return transforms.Compose([transforms.RandomResizedCrop(224),
                               transforms.RandomHorizontalFlip(), transforms.PILToTensor()])


def v2_dataset(folder):
    from torchvision.io import ImageReadMode, decode_jpeg, read_file
    from torchvision.transforms import v2
    transform = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()])
    return datasets.ImageFolder(
        folder, loader=lambda path: decode_jpeg(read_file(path), mode=ImageReadMode.RGB),
        transform=transform)


def loader_of(a):
    if a.shards:
        import webdataset as wds
        data = (wds.WebDataset(a.shards, shardshuffle=100).shuffle(1000).decode("pil")
                .to_tuple("jpg;jpeg;png;webp", "cls").map_tuple(pil_transform(), lambda c: c)
                .batched(a.batch, partial=False))
        return wds.WebLoader(data, batch_size=None, num_workers=a.workers)
    data = (v2_dataset(a.folder) if a.variant == "v2"
            else datasets.ImageFolder(a.folder, transform=pil_transform()))
    return torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, drop_last=True,
                                       num_workers=a.workers, persistent_workers=a.workers > 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder")
    p.add_argument("--shards")
    p.add_argument("--variant", choices=("pil", "v2"), default="pil")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    loader = loader_of(a)
    done, start = 0, None
    while done < a.warmup + a.batches:
        for images, labels in loader:
            images = (images.float() - MEAN) / STD  # the batch the model reads
            done += 1
            if done == a.warmup:
                start = time.perf_counter()
            if done == a.warmup + a.batches:
                break
    seconds = time.perf_counter() - start
    import PIL
    print(json.dumps({"images_per_sec": a.batches * a.batch / seconds, "variant": a.variant,
                      "source": "shards" if a.shards else "folder",
                      "torchvision": torchvision.__version__, "pillow": PIL.__version__}))


if __name__ == "__main__":
    main()
