import json, sys
from kernelgen.harness.pipeline import Case, Settings, stage_parse, stage_check
from kernelgen.task.spec import get_task
from kernelgen.task import draws
def main():
    a = sys.argv[1]
    if a.endswith(".json"):
        e = json.load(open(a)); task = get_task(e["task"]); k = json.dumps(e["kernel"])
    else:
        task = get_task(a); from kernelgen.lang.parse import kernel_to_json; k = kernel_to_json(task.golden)
    case = Case(task, k, Settings(gpu=False)); stage_parse(case); stage_check(case)
    print("extent", draws.block_extent(case.checked))
    for d in draws.case_draws(task, case.checked, 5, Settings(gpu=False).seed, False):
        print(d.kind, d.sizes, d.extreme, d.order, d.num_sms)
if __name__ == "__main__":
    main()
