"""Judge a task's golden and candidate files under a changed tolerance, without editing the task's YAML:
python tools/redteam_round18/try_tolerance.py [--gpu] [--seeds 0,1,2,3] TASK 'TOLERANCE_JSON' [FILE.json ...]
e.g. try_tolerance.py med/row_mean_bf16 '{"steps": true}' tools/redteam_round18/row_mean_bf16_sum_bf16_before_divide.json
CPU mode by default (as redteam_verdicts.py judges); --gpu compiles and runs on this machine's GPU (GPU mode, as the
plugin runs it, no timing). Each file is judged at each seed."""
import argparse, contextlib, json, time
import yaml
from pathlib import Path
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import Tolerance, get_task

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _executor(gpu: bool):
    if not gpu:
        yield None
        return
    from kernelgen.gpu.executor import Executor
    from kernelgen.gpu.launch import prepare_gpu
    with Executor(initializer=prepare_gpu, default_timeout=60.0) as executor:
        yield executor


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("task")
    parser.add_argument("tolerance")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    tol = json.loads(args.tolerance)
    task = get_task(args.task)
    task = task.model_copy(update={"tolerance": Tolerance(**tol)})
    gold = json.dumps(yaml.safe_load((ROOT / "bench" / f"{args.task}.yaml").read_text())["golden"])
    answers = [("GOLDEN", gold)] + [(Path(f).stem, json.dumps(json.loads(Path(f).read_text())["kernel"]))
                                    for f in args.files]
    with _executor(args.gpu) as executor:
        for seed in (int(s) for s in args.seeds.split(",")):
            for name, answer in answers:
                t = time.time()
                settings = Settings(gpu=args.gpu, executor=executor, time_kernels=False, seed=seed)
                r = evaluate_answer(task, answer, settings)
                print(f"{args.task} {tol} seed {seed}{' gpu' if args.gpu else ''}: {name}: {r.outcome.value} "
                      f"({time.time() - t:.1f}s)\n    {str(r.first_diagnostic())[:300]}", flush=True)


if __name__ == "__main__":
    main()
