"""TensorBoard reads what `vit train` wrote: the run folder's events files,
read with the tensorboard package's own reader (EventAccumulator, which checks
both CRCs of every record), hold

- a scalar for every numeric field of every metrics.jsonl record, tagged with
  the field's name, at the record's step, equal to it in float32;
- progress/train_loss, progress/lr and progress/images_per_sec, at steps
  within the run, finite;
- the image "curves" (curves.png) at the last step, a PNG of curves.png's size.

Usage: check_tensorboard.py RUN_DIR (needs `pip install tensorboard`).
"""

import json
import math
import struct
import sys
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def main(run_dir):
    run = Path(run_dir)
    files = sorted(run.glob("events.out.tfevents.*"))
    if not files:
        print(f"no events file in {run}")
        return 1
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    accumulator = EventAccumulator(str(run), size_guidance={"scalars": 0, "images": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    failures = []

    for field in records[0]:
        if not isinstance(records[0][field], (int, float)):
            continue
        if field not in tags["scalars"]:
            failures.append(f"no scalar {field}")
            continue
        got = {e.step: e.value for e in accumulator.Scalars(field)}
        want = {r["step"]: float32(r[field]) for r in records}
        if got != want:
            failures.append(f"{field}: TensorBoard has {got}, metrics.jsonl {want}")
    print(f"{len(records)} records, scalars {sorted(tags['scalars'])}")

    last_step = records[-1]["step"]
    for tag in ("progress/train_loss", "progress/lr", "progress/images_per_sec"):
        events = accumulator.Scalars(tag) if tag in tags["scalars"] else []
        if not events:
            failures.append(f"no scalar {tag}")
        elif not all(0 < e.step <= last_step and math.isfinite(e.value) for e in events):
            failures.append(f"{tag}: a step outside 1..{last_step} or a value not finite")
        else:
            print(f"{tag}: {len(events)} points, steps {events[0].step}..{events[-1].step}")

    if "curves" not in tags["images"]:
        failures.append("no image curves")
    else:
        image = accumulator.Images("curves")[-1]
        png = (run / "curves.png").read_bytes()
        width, height = struct.unpack(">II", png[16:24])
        if (image.step, image.width, image.height) != (last_step, width, height):
            failures.append(
                f"curves: step {image.step}, {image.width}x{image.height}; "
                f"expected step {last_step}, {width}x{height}")
        if image.encoded_image_string[:8] != b"\x89PNG\r\n\x1a\n":
            failures.append("curves: not a PNG")
        print(f"curves: {image.width}x{image.height} at step {image.step}")

    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
