#!/usr/bin/env python3
"""The torchvision input pipeline as users write it, timed for
scripts/bench/pipeline.sh: an ImageFolder (or WebDataset shards) through
RandomResizedCrop(224), RandomHorizontalFlip, ToTensor and Normalize, PIL
decoding, a DataLoader with --workers worker processes, shuffled, batches of
--batch. It times --batches batches after a few of warmup and prints one
line: images/s.

Usage: torchvision_loader.py (--folder DIR | --shards PATTERN) --workers N
       [--batch 64] [--batches 40]
"""
import argparse
import json
import time

import torch
from torchvision import datasets, transforms


def transform():
    return transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])


def folder_loader(a):
    data = datasets.ImageFolder(a.folder, transform=transform())
    return torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, drop_last=True,
                                       num_workers=a.workers, persistent_workers=a.workers > 0)


def shard_loader(a):
    import webdataset as wds  # pip's webdataset, the library timm and OpenCLIP use
    data = (wds.WebDataset(a.shards, shardshuffle=100).shuffle(1000).decode("pil")
            .to_tuple("jpg;jpeg;png;webp", "cls").map_tuple(transform(), lambda c: c)
            .batched(a.batch, partial=False))
    return wds.WebLoader(data, batch_size=None, num_workers=a.workers,
                         persistent_workers=a.workers > 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder")
    p.add_argument("--shards")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    loader = folder_loader(a) if a.folder else shard_loader(a)
    done, start = 0, None
    while done < a.warmup + a.batches:
        for images, labels in loader:
            done += 1
            if done == a.warmup:
                start = time.perf_counter()
            if done == a.warmup + a.batches:
                break
    seconds = time.perf_counter() - start
    print(json.dumps({"images_per_sec": a.batches * a.batch / seconds, "workers": a.workers,
                      "source": "shards" if a.shards else "folder"}))


if __name__ == "__main__":
    main()
