"""On a GPU machine: the fixed cost every time the harness reports carries, and where it comes from.

The harness times each call between CUDA events after zeroing a 256 MiB buffer
(:func:`kernelgen.gpu.timing.timed_windows`), as Triton's ``do_bench`` does. A kernel of tens of
microseconds then carries a cost no kernel can avoid: the launch, and the write-back of the dirty
L2 lines the zeroing left. This times copies from nothing to 1 GiB (read B bytes, write B) and
reads alone (a sum) under that timer, with the zeroing flush and with a flush that only reads the
buffer (clean lines), and fits ``time = fixed + bytes / bandwidth`` over the sizes past L2:

    python tools/timer_floor.py --out floor.json

``tools/speedup_table.py --fixed-us C`` then gives each task's attainable floor (C plus its bytes at
the copy bandwidth) and what a kernel at that floor would show against torch.compile.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZES_MIB = (0, 1, 4, 16, 64, 128, 256, 512, 1024)
FIT_FROM_MIB = 64  # past the H200's 50 MB of L2


class ReadFlush:
    """A flush that reads the buffer instead of writing it: it evicts as the harness's does, but
    leaves clean lines, so the next kernel writes nothing back. Duck-typed for ``timed_windows``,
    which calls ``zero_()``."""

    def __init__(self, buffer) -> None:
        self.buffer = buffer

    def zero_(self) -> None:
        self.buffer.view(-1).sum()


def _fit(points: list[tuple[int, float]]) -> dict[str, float]:
    """Least squares of ms = fixed + bytes / bandwidth."""
    xs = [b for b, _ in points]
    ys = [t for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return {"fixed_us": (my - slope * mx) * 1e3, "bytes_per_s": 1e3 / slope}


def measure(repetitions: int) -> dict:
    import torch

    from kernelgen.gpu.timing import flush_buffer, timed_windows

    flushes = {"zero": flush_buffer(), "read": ReadFlush(flush_buffer())}
    result: dict = {"device": torch.cuda.get_device_name(), "rows": [], "fits": {}}
    for name, flush in flushes.items():
        for op in ("copy", "sum"):
            points = []
            for mib in SIZES_MIB:
                n = max(1, (mib << 20) // 4)
                src = torch.ones(n, dtype=torch.float32, device="cuda")
                dst = torch.empty_like(src)
                fn = (lambda: dst.copy_(src)) if op == "copy" else (lambda: src.sum())
                ms = statistics.median(timed_windows(fn, flush, repetitions, 5).times)
                moved = n * 4 * (2 if op == "copy" else 1)
                result["rows"].append({"flush": name, "op": op, "mib": mib, "bytes": moved, "ms": ms})
                if mib >= FIT_FROM_MIB:
                    points.append((moved, ms))
                print(f"{name:5s} {op:4s} {mib:5d} MiB  {ms * 1e3:9.1f} us  {moved / ms / 1e9:6.3f} TB/s", flush=True)
                del src, dst
            result["fits"][f"{name}/{op}"] = _fit(points)
            fit = result["fits"][f"{name}/{op}"]
            print(f"{name:5s} {op:4s} fit: fixed {fit['fixed_us']:.2f} us, {fit['bytes_per_s'] / 1e12:.3f} TB/s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the rows and fits as JSON")
    parser.add_argument("--repetitions", type=int, default=50)
    args = parser.parse_args()
    result = measure(args.repetitions)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
