"""Judge red-team kernel files one at a time, as tests/test_redteam.py does, and print each file's
expected outcome beside today's verdict (FALSE PASS where a wrong kernel gets ok).

Run from the repository root: ``python tools/redteam_verdicts.py [--gpu] FILE.json ...`` (default:
every file in tests/redteam/). CPU mode by default; ``--gpu`` judges in GPU mode as the catalogue's
GPU test does (compiled, launched on the GPU's draws with guard bands, refereed by the interpreter),
against the file's ``gpu`` outcome where it has one."""
import json, os, sys, time
from pathlib import Path
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import get_task

NEEDS_COMPILE = {"compile_error", "lowering_error"}
here = Path(__file__).resolve().parents[1] / "tests" / "redteam"


def judge(files: list[Path], gpu_settings: Settings | None) -> None:
    for p in files:
        e = json.loads(p.read_text())
        answer = e["answer"] if "answer" in e else json.dumps(e["kernel"])
        expected = e.get("gpu", e)["outcome"] if gpu_settings else e["outcome"]
        expected = [expected] if isinstance(expected, str) else expected
        s = gpu_settings or Settings(gpu=False, compile=e["outcome"] in NEEDS_COMPILE or e.get("compile", False))
        t = time.time()
        try:
            r = evaluate_answer(get_task(e["task"]), answer, s)
            got, first = r.outcome.value, r.first_diagnostic()
        except Exception as exc:
            got, first = "CRASH", repr(exc)[:300]
        flag = "" if got in expected else ("  <== FALSE PASS" if got == "ok" else "  <== DIFFERS")
        print(f"{p.stem}: expected {'/'.join(expected)}, got {got} ({time.time()-t:.1f}s){flag}\n"
              f"    {str(first)[:300]}", flush=True)


def main(argv: list[str]) -> None:
    gpu = "--gpu" in argv
    files = [Path(a) for a in argv if a != "--gpu"] or sorted(here.glob("*.json"))
    if not gpu:
        return judge(files, None)
    from kernelgen.gpu.devices import executor_env, share_cpu_threads, worker_gpu
    from kernelgen.gpu.executor import Executor
    from kernelgen.gpu.launch import prepare_gpu
    share_cpu_threads()
    env = executor_env(worker_gpu())
    os.environ.update(env)
    with Executor(env=env, initializer=prepare_gpu, default_timeout=60.0, grace=2.0) as executor:
        judge(files, Settings(gpu=True, executor=executor, time_kernels=False))


if __name__ == "__main__":
    main(sys.argv[1:])
