"""Print the size draws a kernel file gets in CPU mode: .venv/bin/python draws_of.py FILE.json"""
import json, sys
from kernelgen.task.case import Settings
from kernelgen.task.spec import get_task
from kernelgen.task.draws import case_draws
from kernelgen.check.checker import check
from kernelgen.lang.parse import parse_kernel
e = json.load(open(sys.argv[1])); task = get_task(e["task"]); s = Settings(gpu=False)
k = parse_kernel(json.dumps(e["kernel"]))
c = check(k)
ch = getattr(c, "checked", c)
for d in case_draws(task, ch, s.shapes, s.seed, False):
    print(d)
