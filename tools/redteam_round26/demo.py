"""Each wrong candidate with a DEMO point in make.py, run as the harness runs one call
(kernelgen.task.variants.verify_call_cpu) at allowed sizes: it must raise WrongResult there.
Also prints the reference and the kernel on the first differing element.

    .venv/bin/python tools/redteam_round26/demo.py [NAME ...]
"""
import json, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make import CANDIDATES, DEMO  # noqa: E402
from kernelgen.errors import WrongResult
from kernelgen.lang.parse import parse_kernel
from kernelgen.task import variants as VA
from kernelgen.task.spec import get_task

names = sys.argv[1:] or list(DEMO)
for name in names:
    entry = CANDIDATES[name]
    call_name, sizes, extreme, _ = DEMO[name]
    task = get_task(entry["task"])
    call = next(t for t in task.variant_tasks() + VA.unlisted_calls(task) if t.variant.name == call_name)
    kernel = parse_kernel(json.dumps(entry["kernel"]))
    golden = task.golden
    try:
        VA.verify_call_cpu(call, golden, sizes, 0, extreme=extreme)
        golden_ok = "golden ok"
    except WrongResult as e:
        golden_ok = f"GOLDEN FAILS: {e}"
    try:
        VA.verify_call_cpu(call, kernel, sizes, 0, extreme=extreme)
        print(f"{name}: call {call_name} sizes {sizes} extreme={extreme}: NOT SHOWN WRONG ({golden_ok})")
    except WrongResult as e:
        print(f"{name}: call {call_name} sizes {sizes} extreme={extreme}: WrongResult ({golden_ok})\n    {str(e)[:400]}")
