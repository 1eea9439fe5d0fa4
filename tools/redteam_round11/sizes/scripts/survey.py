import json, sys, glob, os
from kernelgen.harness.pipeline import Case, Settings, stage_parse, stage_check
from kernelgen.task.spec import get_task
from kernelgen.task import draws
from kernelgen.lang.parse import kernel_to_json
def main():
    for p in sorted(glob.glob(str(__import__("pathlib").Path(__file__).resolve().parents[4] / "bench/*/*.yaml"))):
        tid = p.split("/")[-2] + "/" + os.path.basename(p)[:-5]
        try:
            task = get_task(tid)
            case = Case(task, kernel_to_json(task.golden), Settings(gpu=False)); stage_parse(case); stage_check(case)
            ds = draws.case_draws(task, case.checked, 5, 0, False)
        except Exception as x:
            print(tid, "ERR", str(x)[:80]); continue
        gaps = []
        for n, r in task.sizes.items():
            top = max(d.sizes[n] for d in ds)
            if top < r.max:
                gaps.append(f"{n}:{top}/{r.max}")
        if gaps: print(tid, " ".join(gaps), flush=True)
if __name__ == "__main__":
    main()
