"""Print the size draws CPU mode checks a candidate file on (all calls' task, seed 0), to see which
sizes a wrong path is (not) reached at. usage: python draws_of.py FILE.json [VARIANT_INDEX]"""
import json, sys
from kernelgen.task.spec import get_task
from kernelgen.task.case import Case, Settings
from kernelgen.harness.pipeline import stage_parse, stage_check
from kernelgen.task.draws import case_draws

entry = json.load(open(sys.argv[1]))
task = get_task(entry["task"])
vi = int(sys.argv[2]) if len(sys.argv) > 2 else 0
s = Settings()
case = Case(task=task, answer=json.dumps(entry["kernel"]), settings=s)
stage_parse(case)
stage_check(case)
checked = case.calls_checked[vi] if case.calls_checked else case.checked
vtask = task.variant_tasks()[vi] if task.variants else task
for d in case_draws(vtask, checked, s.shapes, s.seed, s.gpu):
    print(d.kind, d.sizes, d.order or "", "extreme" if d.extreme else "", d.num_sms or "")
