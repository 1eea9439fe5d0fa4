"""List the draws (kind, extreme, order, sizes) the harness makes for a task's golden or a candidate file.
.venv/bin/python tools/redteam_round28/list_draws.py med/row_sum [FILE.json]"""
import json, sys
from kernelgen.harness import pipeline as P
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task
from kernelgen.task import draws as D
from kernelgen.task.size_reads import block_extent

task = get_task(sys.argv[1])
import yaml
kernel = json.loads(open(sys.argv[2]).read())["kernel"] if len(sys.argv) > 2 else yaml.safe_load(open(f"bench/{sys.argv[1]}.yaml"))["golden"]
s = Settings(gpu=False)
case = Case(task, json.dumps(kernel), s)
P.stage_parse(case); P.stage_check(case)
print("extent", block_extent(case.checked))
for d in D.case_draws(task, case.checked, s.shapes, s.seed, False):
    print(f"{d.kind:16} ext={int(d.extreme)} order={d.order} {d.sizes}")
