"""On a GPU machine: how much of the ``products`` room (kernelgen/task/products.py) the goldens of
the tasks that name it use on the GPU, draw by draw, to calibrate PRODUCTS_FACTOR against the
hardware's own accumulation (tensor cores truncate; the CPU's arithmetic does not).

Each golden (or a variant of it: ``TASK:NAME=VALUE,...`` sets meta values, e.g. a split-K
golden's SPLIT) runs on every draw a GPU-mode case takes (hypothesis, targeted and range-maximum
sizes, plain and extreme values) through the harness's own launch and comparison. For each
comparison it prints G, the largest error in units of u times the running sums (what the factor
multiplies), over every element and over those the task's rtol and atol fail alone, and the
verdict. Run from the repository root:

    python tools/products_room.py [--seeds 0 1 2 3] [TASK[:NAME=V,...] ...]

(default: every task naming ``products``, each golden as written, and splitk_gemm_f32out at SPLIT
1 and 2). About a minute a seed on an H100.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import kernelgen.gpu.case as gpu_case  # noqa: E402
from kernelgen.check.checker import check  # noqa: E402
from kernelgen.task import draws  # noqa: E402
from kernelgen.task.case import Case, Settings  # noqa: E402
from kernelgen.task.compare import compare_tensors  # noqa: E402
from kernelgen.task.offset import F32_UNIT  # noqa: E402
from kernelgen.task.products import running_sums  # noqa: E402
from kernelgen.task.spec import get_task, load_tasks  # noqa: E402
from kernelgen.task.verify import scalar_values  # noqa: E402

DEFAULT_VARIANTS = ("splitk_gemm_f32out:SPLIT=1", "splitk_gemm_f32out:SPLIT=2")


def measured(task, outputs, expected, inputs, sizes) -> list[str]:
    """One line per output: the largest error in running-sum units, overall and where the task's
    tolerance alone fails."""
    sums = running_sums(task, inputs, int(sizes[task.tolerance.products])) or {}
    lines = []
    for spec in task.signature.outputs:
        if spec.name not in sums:
            lines.append(f"{spec.name}: no running sums")
            continue
        got = outputs[spec.name].detach().double()
        want = expected[spec.name].detach().double().to(got.device)
        room = F32_UNIT * sums[spec.name].to(got.device)
        finite = want.isfinite() & room.isfinite() & (room > 0)
        g = ((got - want).abs() / room).where(finite, torch.zeros_like(room))
        plain = compare_tensors(outputs[spec.name].detach(), expected[spec.name].detach().to(got.device),
                                spec.dtype, task.tolerance_for(spec.dtype))
        failing = (~torch.isclose(got, want, rtol=task.tolerance.rtol, atol=task.tolerance.atol)) & finite
        g_failing = float(g[failing].max()) if bool(failing.any()) else 0.0
        lines.append(f"{spec.name}: G {float(g.max()):.3f}, G over what rtol/atol fail {g_failing:.3f} "
                     f"({int(failing.sum())} elements; plain tolerance {'passes' if plain.ok else 'fails'})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    args = parser.parse_args()
    names = args.tasks or [t.id for t in load_tasks() if t.tolerance is not None and t.tolerance.products] + \
        list(DEFAULT_VARIANTS)
    worst: dict[str, float] = {}
    original = gpu_case.compare_outputs

    def recording(task, outputs, expected, inputs, sizes, *rest, **kw):
        for line in measured(task, outputs, expected, inputs, sizes):
            print("   ", line, flush=True)
            value = float(line.split("G ")[1].split(",")[0]) if "G " in line else 0.0
            worst[current] = max(worst.get(current, 0.0), value)
        return original(task, outputs, expected, inputs, sizes, *rest, **kw)

    gpu_case.compare_outputs = recording
    for name in names:
        task_id, _, meta = name.partition(":")
        task = get_task(task_id)
        golden = task.golden
        if meta:
            values = dict(item.split("=") for item in meta.split(","))
            golden = golden.model_copy(update={"meta": [m.model_copy(update={"value": int(values.get(m.name, m.value))})
                                                        for m in golden.meta]})
        checked = check(golden)
        for seed in args.seeds:
            current = name
            settings = Settings(gpu=True, seed=seed)
            case = Case(task, "", settings, kernel=golden, checked=checked)
            for draw in draws.case_draws(task, checked, settings.shapes, seed, True):
                started = time.time()
                compiled = gpu_case.compiled_for(case, draw.sizes, scalar_values(task, draw.sizes, seed, draw.extreme))
                problems = gpu_case.verify_job(task, checked, compiled, dict(draw.sizes), seed, draw.extreme,
                                               draw.num_sms)
                verdict = "ok" if not problems else "FAIL " + problems[0].message[:200]
                print(f"{name} seed {seed} {draw.kind} {draw.sizes} extreme={draw.extreme}: {verdict} "
                      f"({time.time() - started:.1f} s)", flush=True)
    print("\nlargest G per golden:", flush=True)
    for name, value in worst.items():
        print(f"  {name}: {value:.3f}")


if __name__ == "__main__":
    main()
