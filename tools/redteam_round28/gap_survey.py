"""For each task with extreme_domains: per size name, the largest value any draw reaches, against the largest an
ordinary draw (extreme=False) reaches, split by whether that draw keeps the values as drawn (order None) or not.
.venv/bin/python tools/redteam_round28/gap_survey.py > tools/redteam_round28/gap_survey.txt"""
import json, sys, glob
import yaml
from kernelgen.harness import pipeline as P
from kernelgen.task.case import Case, Settings
from kernelgen.task.spec import get_task
from kernelgen.task import draws as D

s = Settings(gpu=False)
names = sys.argv[1:] or sorted(p[6:-5] for p in glob.glob("bench/*/*.yaml") if "extreme_domains" in open(p).read())
for name in names:
    try:
        task = get_task(name)
        if not task.extreme_domains or not task.sizes:
            continue
        golden = yaml.safe_load(open(f"bench/{name}.yaml"))["golden"]
        case = Case(task, json.dumps(golden), s)
        P.stage_parse(case); P.stage_check(case)
        every = D.case_draws(task, case.checked, s.shapes, s.seed, False)
    except Exception as exc:
        print(f"{name}: ERROR {exc!r}"[:200]); continue
    row = []
    for n, r in task.sizes.items():
        top = max(d.sizes[n] for d in every)
        plain = max([d.sizes[n] for d in every if not d.extreme and d.order is None] or [0])
        plain_kinds = sorted({d.kind for d in every if not d.extreme and d.order is None and d.sizes[n] == plain})
        anyord = max([d.sizes[n] for d in every if not d.extreme] or [0])
        from kernelgen.task.random_sizes import DEFAULT_CPU_MAX
        cap = min(r.max, r.cpu_max or DEFAULT_CPU_MAX)
        past = sorted({f"{d.kind}/{d.order}" for d in every if not d.extreme and d.sizes[n] > cap})
        row.append(f"{n}: max {r.max} cpu_max {cap} drawn {top} ordinary-plain {plain} {plain_kinds} ordinary-any {anyord}"
                   f" ordinary past cpu_max: {past}")
    print(f"{name}: " + " | ".join(row), flush=True)
