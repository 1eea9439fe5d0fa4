"""The sandbox runs a model's Triton answer and nothing escapes it.

A catalogue of answers goes through the baseline as the harness takes it (static rules, then
the sandbox in Triton's interpreter) and each gets its outcome. The answers the static rules
refuse are also run in the sandbox directly, to show that the sandbox alone contains them:
no file appears outside its directory, no connection reaches a server listening on
127.0.0.1, no command runs, no secret is in its environment.

Every sandbox run starts Python, torch and Triton (seconds), so the runs are made once, two
at a time, in a module fixture, and the tests look at their results.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

from kernelgen.lang import nodes as L
from kernelgen.baseline.answer import EntryPoint, check_answer
from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton
from kernelgen.errors import Outcome
from kernelgen.lang.parse import parse_kernel
from kernelgen.baseline.child import classify
from kernelgen.baseline.sandbox import SEED_KERNEL, SandboxResult, run_calls_in_sandbox, run_in_sandbox, sandbox_environment
from kernelgen.baseline.wall import JOB_MOUNT, Wall, find_wall, seccomp_file, user_options, wall_command

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox uses Linux limits")

VECTOR_ADD = emit_triton(check(parse_kernel((ROOT / "examples" / "vector_add.json").read_text())))
ENTRY = EntryPoint("vector_add", (L.Input(name="x", dtype="f32", shape=["N"]), L.Input(name="y", dtype="f32", shape=["N"])),
                   (L.Input(name="out", dtype="f32", shape=["N"]),))
X, Y = torch.randn(300, generator=torch.Generator().manual_seed(0)), torch.randn(300)
X2, Y2 = torch.randn(300), torch.randn(300)  # what a refilled call's tensors hold
SECRETS = {"OPENAI_API_KEY": "sk-test", "HF_TOKEN": "hf_test", "WANDB_API_KEY": "w", "AWS_SECRET_ACCESS_KEY": "a",
           "KERNELGEN_SERVER_TOKEN": "t"}

# A kernel and its launch (the sandbox's own seed answer); each answer below opens the launcher
# with its own lines.
KERNEL = SEED_KERNEL.replace("def vector_add(x, y):\n", "def vector_add(x, y):\n{body}", 1)


def answer(body: str = "", change: tuple[str, str] | None = None) -> str:
    """A fenced answer: the kernel with ``body`` opening the launcher, and ``change`` (old,
    new) made to the code, which must contain ``old``."""
    code = KERNEL.format(body=textwrap.indent(textwrap.dedent(body).strip() + "\n", "    ") if body else "")
    if change is not None:
        assert change[0] in code, change[0]
        code = code.replace(*change)
    return f"Here you go:\n```python\n{code}```\n"


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.server.close()


ESCAPES = textwrap.dedent('''\
    import os, pathlib, shutil, socket, subprocess, sys

    def vector_add(x, y):
        escaped = []
        attempts = {
            "open": lambda: open(TARGETS[0], "w").write("escaped"),
            "pathlib": lambda: pathlib.Path(TARGETS[1]).write_text("escaped"),
            "mkdir": lambda: os.mkdir(TARGETS[2]),
            "rename": lambda: (open("inside.txt", "w").close(), os.rename("inside.txt", TARGETS[3])),
            "symlink": lambda: (os.symlink(os.path.dirname(TARGETS[4]), "link"),
                                open(os.path.join("link", os.path.basename(TARGETS[4])), "w").close()),
            "copy": lambda: (open("inside2.txt", "w").close(), shutil.copyfile("inside2.txt", TARGETS[5])),
            "os.system": lambda: os.system("touch " + TARGETS[6]),
            "subprocess": lambda: subprocess.run(["touch", TARGETS[7]]),
            "socket": lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2),
            "dns": lambda: socket.getaddrinfo("example.com", 80),
            "fork": lambda: os.fork(),
            "kill": lambda: os.kill(os.getppid(), 0),
        }
        for name, attempt in attempts.items():
            try:
                attempt()
                escaped.append(name)
            except OSError:
                pass
        secrets = [k for k in os.environ if k in SECRETS]
        facts = {"escaped": escaped, "secrets": secrets, "home_is_cwd": os.environ["HOME"] == os.getcwd(),
                 "cwd": os.getcwd(), "environment": sorted(os.environ)}
        return torch.tensor(list(json.dumps(facts).encode()), dtype=torch.uint8)
    ''')


def escapes_code(targets: list[Path], port: int) -> str:
    return (f"import json\nimport torch\nTARGETS = {[str(t) for t in targets]!r}\nPORT = {port}\n"
            f"SECRETS = {sorted(SECRETS)!r}\n" + ESCAPES)


# name -> (answer text, whether it goes through the static rules first, run_in_sandbox options)
def catalogue(targets: list[Path], port: int) -> dict[str, tuple[str, bool, dict[str, Any]]]:
    return {
        "correct": (f"```python\n{VECTOR_ADD}```", True, {}),
        "two_outputs": (answer(change=("    return out\n", "    return out, out.view(-1)\n")), True, {}),
        "infinite_loop": (answer("while True:\n    pass"), True, {"timeout_s": 5.0}),
        "wrapper_raises": (answer("raise ValueError('boom')"), True, {}),
        "kernel_compile_error": (answer(change=("    mask = offs < n\n", "    mask = offs < n\n    tl.dot(offs, offs)\n")),
                                 True, {}),
        "kernel_raises": (answer(change=("    mask = offs < n\n", "    mask = offs < n\n    raise RuntimeError('kernel failed')\n")),
                          True, {}),
        "bad_return": (answer(change=("    return out\n", "    return [1, 2]\n")), True, {}),
        "memory": (answer("big = torch.empty(1 << 30)"), True, {"memory_limit_bytes": 3 << 30}),
        # The last element never stored
        "unwritten_tail": (answer(change=("    mask = offs < n\n", "    mask = offs < n - 1\n")), True, {}),
        "syntax_in_sandbox": ("```python\ndef vector_add(x, y:\n```", False, {}),
        "no_entry_in_sandbox": (answer(change=("def vector_add(", "def other(")), False, {}),
        "write_in_sandbox": (answer(f"open({str(targets[8])!r}, 'w').write('escaped')"), False, {}),
        "escapes": (f"```python\n{escapes_code(targets, port)}```", False, {}),
        # PyTorch doing the work where the static rules lose track (a tuple, a bound method)
        # and host NumPy through a bound method: the guard refuses them as they run, even
        # where the answer catches the refusal and lets its kernel compute.
        "torch_via_tuple": (answer("result = (x,)[0].add(y)", ("    return out\n", "    return result\n")), True, {}),
        "numpy_via_bound_method": (answer("to_host = x.numpy\nhost = to_host()"), True, {}),
        "refusal_caught": (answer("try:\n    (x,)[0].add(y)\nexcept Exception:\n    pass"), True, {}),
        # copy_ is a move, as .to() is: a copy into another dtype rounds on the host (round 19: an
        # f32 GEMM result rounded into the f16 output)
        "copy_converting": (answer("half = torch.empty(x.shape, dtype=torch.float16)\nhalf.copy_(x)"), True, {}),
        # Results kept by data_ptr: the call made again on refilled tensors returns stale ones.
        "cache_by_data_ptr": (answer("if x.data_ptr() in SEEN:\n    return SEEN[x.data_ptr()]",
                                     ("    return out\n", "    SEEN[x.data_ptr()] = out\n    return out\n"))
                              .replace("def vector_add", "SEEN = {}\n\n\ndef vector_add"), True,
                              {"refill": [X2, Y2]}),
    }


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="module")
def targets() -> Iterator[list[Path]]:
    """Paths outside the sandbox that an escaping answer would create: in the repository, in
    /tmp, and the like. They must not exist after the runs."""
    tag = uuid.uuid4().hex[:8]
    paths = [ROOT / f"escaped_{tag}_open.txt", Path("/tmp") / f"escaped_{tag}_pathlib.txt",
             Path("/tmp") / f"escaped_{tag}_dir", ROOT / "tests" / f"escaped_{tag}_rename.txt",
             ROOT / f"escaped_{tag}_symlink.txt", Path("/tmp") / f"escaped_{tag}_copy.txt",
             ROOT / f"escaped_{tag}_system.txt", ROOT / f"escaped_{tag}_subprocess.txt",
             ROOT / f"escaped_{tag}_write.txt"]
    yield paths
    for path in paths:
        if path.is_dir():
            path.rmdir()
        elif path.exists():
            path.unlink()


@pytest.fixture(scope="module")
def results(targets: list[Path], listener: Listener) -> dict[str, SandboxResult | Outcome]:
    """Each catalogue answer as the harness would judge it: the static verdict when it fails,
    else the sandbox's result (Triton's interpreter, two runs at a time)."""
    cases = catalogue(targets, listener.port)

    def judge(name: str) -> SandboxResult | Outcome:
        text, static, options = cases[name]
        verdict = check_answer(text, ENTRY)
        if static and not verdict.ok:
            return verdict.outcome
        return run_in_sandbox(verdict.code, "vector_add", [X, Y], device="interpreter", **options)

    with pytest.MonkeyPatch.context() as patch:
        for name, value in SECRETS.items():
            patch.setenv(name, value)
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(cases, pool.map(judge, cases)))


def result(results: dict[str, Any], name: str) -> SandboxResult:
    value = results[name]
    assert isinstance(value, SandboxResult), f"{name} stopped at the static rules: {value}"
    return value


# -- the catalogue ---------------------------------------------------------------------------


def test_a_correct_answer_runs_in_the_interpreter(results: dict[str, Any]) -> None:
    run = result(results, "correct")
    assert run.outcome is Outcome.OK, run.stderr_tail
    (out,) = run.outputs
    torch.testing.assert_close(out, X + Y)
    assert run.isolation.startswith("bubblewrap"), run.isolation


def test_memory_no_program_stores_is_garbage_in_the_interpreter(results: dict[str, Any]) -> None:
    """Triton's interpreter reads torch.empty's memory as the host left it, often zeros, where a
    GPU's holds whatever was there: the child makes it NaN."""
    run = result(results, "unwritten_tail")
    assert run.outcome is Outcome.OK, run.stderr_tail
    (out,) = run.outputs
    torch.testing.assert_close(out[:-1], (X + Y)[:-1])
    assert out[-1].isnan()


def test_several_outputs_come_back_in_order(results: dict[str, Any]) -> None:
    run = result(results, "two_outputs")
    assert run.outcome is Outcome.OK, run.stderr_tail
    assert len(run.outputs) == 2 and all(torch.equal(o, X + Y) for o in run.outputs)


def test_an_infinite_loop_times_out(results: dict[str, Any]) -> None:
    run = result(results, "infinite_loop")
    assert run.outcome is Outcome.TIMEOUT and 5.0 <= run.duration_s < 60
    assert "no result after 5 s" in run.error


def test_a_launcher_that_raises_is_a_runtime_error(results: dict[str, Any]) -> None:
    run = result(results, "wrapper_raises")
    assert run.outcome is Outcome.RUNTIME_ERROR and run.error == "ValueError: boom"
    assert "Traceback" in run.stderr_tail and "raise ValueError('boom')" in run.stderr_tail


def test_a_kernel_triton_rejects_is_a_compile_error(results: dict[str, Any]) -> None:
    run = result(results, "kernel_compile_error")
    assert run.outcome is Outcome.COMPILE_ERROR, (run.error, run.stderr_tail)


def test_a_kernel_that_raises_is_a_runtime_error(results: dict[str, Any]) -> None:
    run = result(results, "kernel_raises")
    assert run.outcome is Outcome.RUNTIME_ERROR and "kernel failed" in run.error


def test_returning_something_else_than_tensors_is_a_runtime_error(results: dict[str, Any]) -> None:
    run = result(results, "bad_return")
    assert run.outcome is Outcome.RUNTIME_ERROR and "must return a tensor" in run.error


def test_the_memory_limit_holds(results: dict[str, Any]) -> None:
    run = result(results, "memory")
    assert run.outcome is Outcome.RUNTIME_ERROR
    assert "memory" in (run.error + run.stderr_tail).lower()


def test_a_syntax_error_and_a_missing_entry_point_in_the_sandbox(results: dict[str, Any]) -> None:
    assert result(results, "syntax_in_sandbox").outcome is Outcome.SYNTAX_ERROR
    missing = result(results, "no_entry_in_sandbox")
    assert missing.outcome is Outcome.NO_KERNEL and "vector_add" in missing.error


@pytest.mark.parametrize("text, outcome", [
    ("I would rather not.", Outcome.NO_KERNEL),
    ("```python\ndef vector_add(x, y)\n    return x\n```", Outcome.SYNTAX_ERROR),
    (answer("import os\nos.system('touch /tmp/escaped')"), Outcome.FORBIDDEN_CONSTRUCT),
    (answer("import socket\nsocket.create_connection(('127.0.0.1', 80))"), Outcome.FORBIDDEN_CONSTRUCT),
    (answer("open('/work/escaped.txt', 'w')"), Outcome.FORBIDDEN_CONSTRUCT),
    (answer("return torch.matmul(x[None], y[:, None])"), Outcome.FORBIDDEN_CONSTRUCT),
])
def test_the_static_rules_stop_the_rest_of_the_catalogue(text: str, outcome: Outcome) -> None:
    assert check_answer(text, ENTRY).outcome is outcome


@pytest.mark.parametrize("name, refused", [("torch_via_tuple", "add()"), ("numpy_via_bound_method", "numpy()"),
                                           ("refusal_caught", "add()"), ("copy_converting", "copy_()")])
def test_pytorch_computing_is_refused_as_it_runs(results: dict[str, Any], name: str, refused: str) -> None:
    run = result(results, name)
    assert run.outcome is Outcome.FORBIDDEN_CONSTRUCT and run.error.startswith(refused), (run.error, run.stderr_tail)


def test_a_refilled_call_shows_results_kept_between_calls(results: dict[str, Any]) -> None:
    run = result(results, "cache_by_data_ptr")
    assert run.outcome is Outcome.OK, run.stderr_tail
    assert len(run.calls) == 1 and torch.equal(run.outputs[0], X + Y) and torch.equal(run.again[0][0], X + Y)
    assert run.again_modified == ((),)  # the refill itself is not the answer's modification


def test_the_baseline_judges_results_kept_between_calls_wrong() -> None:
    """Through the harness: the smallest call's tensors refilled and called again (on a GPU, the
    timed call's, after the repetitions a cache would have made free)."""
    from kernelgen.baseline.ablation import evaluate_baseline, reference_answer
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.spec import get_task

    task = get_task("relu")
    code = reference_answer(task).replace("def relu(x):\n", "SEEN = {}\n\n\ndef relu(x):\n    if x.data_ptr() in SEEN:\n"
                                          "        return SEEN[x.data_ptr()]\n", 1)
    code = code.replace("    return y\n", "    SEEN[x.data_ptr()] = y\n    return y\n")
    result = evaluate_baseline(task, code, Settings(gpu=False, shapes=1))
    assert result.outcome is Outcome.WRONG_RESULT and "called again on the same tensors" in \
        result.diagnostics[0]["message"], result.diagnostics


# -- nothing escapes -------------------------------------------------------------------------


def test_a_write_outside_is_refused_and_is_a_runtime_error(results: dict[str, Any], targets: list[Path]) -> None:
    run = result(results, "write_in_sandbox")
    assert run.outcome is Outcome.RUNTIME_ERROR and "PermissionError" in run.error
    assert not targets[8].exists()


def test_nothing_escapes(results: dict[str, Any], targets: list[Path], listener: Listener) -> None:
    run = result(results, "escapes")
    assert run.outcome is Outcome.OK, run.stderr_tail
    facts = json.loads(bytes(run.outputs[0].tolist()).decode())
    assert facts["escaped"] == []
    assert [path for path in targets if path.exists()] == []
    assert listener.connections == 0
    assert facts["secrets"] == [] and facts["home_is_cwd"]
    assert set(facts["environment"]) <= {"PATH", "HOME", "TMPDIR", "PYTHONPATH", "PYTHONNOUSERSITE",
                                         "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "TRITON_CACHE_DIR",
                                         "TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "LANG",
                                         "LC_ALL", "TZ", "LD_LIBRARY_PATH", "LC_CTYPE", "PWD"}
    assert facts["cwd"] == JOB_MOUNT, "the child sees its job folder at /job, not where it is"


# -- the walls one at a time -----------------------------------------------------------------


def test_the_environment_keeps_only_what_is_needed(tmp_path: Path) -> None:
    parent = {"PATH": "/usr/bin", "HOME": "/root", "OPENAI_API_KEY": "k", "HF_TOKEN": "t", "WANDB_MODE": "offline",
              "AWS_SECRET_ACCESS_KEY": "s", "CUDA_VISIBLE_DEVICES": "1", "LD_LIBRARY_PATH": "/usr/lib",
              "PYTHONPATH": "/elsewhere", "SSH_AUTH_SOCK": "/tmp/agent", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
              "KERNELGEN_GPU_LOCK": "/tmp/kernelgen-gpu-GPU-1.lock"}
    env = sandbox_environment(parent, tmp_path, "cuda", tmp_path / "cache")
    assert env["PATH"] == "/usr/bin" and env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["LD_LIBRARY_PATH"] == "/usr/lib"
    # The worker's GPU, in PCI order, and its turns on it with the other workers (timing.gpu_turn).
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and env["KERNELGEN_GPU_LOCK"] == "/tmp/kernelgen-gpu-GPU-1.lock"
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "cache") and "TRITON_INTERPRET" not in env
    assert not {"OPENAI_API_KEY", "HF_TOKEN", "WANDB_MODE", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK"} & set(env)
    assert str(ROOT) in env["PYTHONPATH"].split(os.pathsep) and "/elsewhere" not in env["PYTHONPATH"]
    interpreted = sandbox_environment(parent, tmp_path, "interpreter", tmp_path / "cache")
    assert interpreted["TRITON_INTERPRET"] == "1" and interpreted["CUDA_VISIBLE_DEVICES"] == ""
    # GPU mode's second look: the interpreter on the worker's GPU's tensors
    on_gpu = sandbox_environment(parent, tmp_path, "cuda_interpreter", tmp_path / "cache")
    assert on_gpu["TRITON_INTERPRET"] == "1" and on_gpu["CUDA_VISIBLE_DEVICES"] == "1"


CONNECT = "import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n" \
          "    print('connected')\nexcept OSError as exc:\n    print(type(exc).__name__)\n"


def test_the_wall_alone_has_no_route_to_the_host(listener: Listener, tmp_path: Path) -> None:
    """A plain Python (no audit hook) inside bubblewrap's network namespace reaches nothing."""
    wall = find_wall()
    assert isinstance(wall, Wall), wall
    seccomp = seccomp_file(processes=False)
    info_read, info_write = os.pipe()
    command, mounts = wall_command(wall, job_dir=tmp_path, device="interpreter", environ={}, seccomp_fd=seccomp,
                                   info_fd=info_write,
                                   command=[sys.executable, "-c", CONNECT.format(port=listener.port)])
    try:
        os.chown(tmp_path, *(2 * [wall.as_user])) if wall.as_user is not None else None
        before = listener.connections
        run = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"},
                             pass_fds=(seccomp, info_write, *mounts.fds), **user_options(wall))
    finally:
        mounts.close()
        for fd in (seccomp, info_read, info_write):
            os.close(fd)
    assert run.stdout.strip() not in ("", "connected"), run.stderr
    assert listener.connections == before


def test_the_audit_hook_alone_refuses_network_and_writes(listener: Listener, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    inside = tmp_path / "inside"
    inside.mkdir()
    script = textwrap.dedent(f'''\
        from kernelgen.baseline.child import install_guard
        install_guard([{str(inside)!r}], compiler_tools=False)
        open({str(inside / "ok.txt")!r}, "w").write("fine")
        for attempt in (lambda: open({str(outside)!r}, "w"), lambda: __import__("os").system("true")):
            try:
                attempt()
                print("escaped")
            except PermissionError:
                print("refused")
        ''') + CONNECT.format(port=listener.port)
    before = listener.connections
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.stdout.split() == ["refused", "refused", "PermissionError"], run.stderr
    assert (inside / "ok.txt").read_text() == "fine" and not outside.exists()
    assert listener.connections == before


def test_only_triton_compilers_may_be_spawned_and_only_on_a_gpu() -> None:
    """subprocess starts programs with posix_spawn after its Popen event; both are checked."""
    from kernelgen.baseline.child import _Guard

    gpu, interpreter = _Guard(["/nowhere"], compiler_tools=True), _Guard(["/nowhere"], compiler_tools=False)
    gpu("os.posix_spawn", ("/usr/local/cuda/bin/ptxas", ["ptxas", "-v"], {}))
    gpu("subprocess.Popen", ("/usr/local/cuda/bin/ptxas", ["ptxas"], None, None))
    with pytest.raises(PermissionError):  # a compiler told to run something else (gcc -wrapper)
        gpu("subprocess.Popen", ("gcc", ["gcc", "-wrapper", "/bin/sh,-c,id", "-x", "c", "/dev/null"], None, None))
    for guard, program in ((gpu, "/bin/sh"), (interpreter, "/usr/local/cuda/bin/ptxas")):
        with pytest.raises(PermissionError):
            guard("os.posix_spawn", (program, [program], {}))


def test_the_child_needs_no_more_than_its_import_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child finds kernelgen, torch, Triton and NumPy only (its PYTHONPATH): the torch
    guard's allowed names come in the job, not from kernelgen.baseline.answer, whose language models
    need pydantic (on the H200 runner pydantic sat outside those roots, and every GPU baseline
    failed to start). Here the child runs with pydantic made unimportable."""
    wrapper = tmp_path / "python-without-pydantic"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        # called as: WRAPPER -s -B -m kernelgen.baseline.child JOB_DIR
        exec {sys.executable} -s -B -c "import runpy, sys; sys.modules['pydantic'] = None; \\
        sys.argv = ['kernelgen.baseline.child', '$5']; runpy.run_module('kernelgen.baseline.child', run_name='__main__')"
        """))
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))
    run = run_in_sandbox(VECTOR_ADD, "vector_add", [X, Y], device="interpreter")
    assert run.outcome is Outcome.OK, run.stderr_tail
    torch.testing.assert_close(run.outputs[0], X + Y)


def test_exceptions_are_classified() -> None:
    from triton.compiler.errors import CompilationError

    assert classify(SyntaxError("bad")) is Outcome.SYNTAX_ERROR
    assert classify(ValueError("boom")) is Outcome.RUNTIME_ERROR
    compile_error = CompilationError.__new__(CompilationError)
    wrapped = RuntimeError("launch failed")
    wrapped.__cause__ = compile_error
    assert classify(compile_error) is Outcome.COMPILE_ERROR and classify(wrapped) is Outcome.COMPILE_ERROR


@pytest.mark.gpu
def test_a_correct_answer_runs_on_the_gpu() -> None:
    run = run_in_sandbox(VECTOR_ADD, "vector_add", [X, Y], device="cuda")
    assert run.outcome is Outcome.OK, run.stderr_tail
    torch.testing.assert_close(run.outputs[0], X + Y)


# Timing cheats: PyTorch computing in the calls after the first (the timed ones, where the
# guard was not), and a result kept by data_ptr and returned in the timed repetitions alone,
# which it finds by counting its calls (it computes in the first two and from the 113th on,
# where a check after the timing came: every checked repetition is now stale).
TIMED_TORCH = "CALLS = [0]\n\n" + KERNEL.format(body=textwrap.indent(textwrap.dedent("""\
    CALLS[0] += 1
    if CALLS[0] > 1:
        return torch.add(x, y)
    """), "    "))
COUNTING_CACHE = "CALLS, KEPT = {}, {}\n\n" + KERNEL.format(body=textwrap.indent(textwrap.dedent("""\
    n = CALLS[x.data_ptr()] = CALLS.get(x.data_ptr(), 0) + 1
    if 2 < n <= 112 and x.data_ptr() in KEPT:
        return KEPT[x.data_ptr()]
    """), "    ")).replace("    return out\n", "    KEPT[x.data_ptr()] = out\n    return out\n")


@pytest.mark.gpu
def test_the_timed_calls_run_under_the_torch_guard() -> None:
    run = run_in_sandbox(TIMED_TORCH, "vector_add", [X, Y], device="cuda", timed_inputs=[X, Y])
    assert run.outcome is Outcome.FORBIDDEN_CONSTRUCT, (run.outcome, run.error, run.stderr_tail)


@pytest.mark.gpu
def test_the_call_made_again_cannot_be_told_from_a_timed_repetition() -> None:
    run = run_in_sandbox(COUNTING_CACHE, "vector_add", [X, Y], device="cuda", timed_inputs=[X, Y], refill=[X2, Y2])
    assert run.outcome is Outcome.OK and torch.equal(run.outputs[0].cpu(), (X + Y)), run.stderr_tail
    assert len(run.again) == 3  # the checked repetitions, all stale: the harness's comparison fails them
    assert not any(torch.allclose(again[0].cpu(), X2 + Y2) for again in run.again)


@pytest.mark.gpu
def test_integer_inputs_named_mixed_are_mixed_in_the_timed_calls_on_the_gpu() -> None:
    """On the device: the checked repetitions of an all-integer call get the drawn values with one
    element in eight of the refill's, at the same places in both inputs, and come back right."""
    a, b = torch.randint(-1000, 1000, (4096,), dtype=torch.int32), torch.randint(-1000, 1000, (4096,), dtype=torch.int32)
    a2, b2 = a + 100_000, b + 100_000
    run = run_calls_in_sandbox(SEED_KERNEL, "vector_add", [[a, b]], device="cuda", timed_inputs=[a, b],
                               refill=[a2, b2], mixed=[True, True])
    assert run.outcome is Outcome.OK and len(run.again) == 3, run.stderr_tail
    given_a, given_b = run.again_inputs
    taken = given_a >= 50_000  # the refill's elements: 99000 and up
    assert 0.08 < taken.float().mean().item() < 0.17 and torch.equal(given_b, torch.where(taken, b2, b))
    assert all(torch.equal(again[0].cpu(), given_a + given_b) for again in run.again)


# -- where the wall cannot stand ---------------------------------------------------------------


def test_without_bubblewrap_the_baseline_refuses_unless_told_it_may_run_unsafe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One line saying why; --unsafe-sandbox (``unsafe=True``) runs the child as a plain process,
    audit hook only, and says so in the result."""
    from kernelgen.baseline import wall
    from kernelgen.baseline.wall import SandboxUnavailable

    monkeypatch.setattr(wall, "find_wall", lambda: "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
    with pytest.raises(SandboxUnavailable) as refused:
        run_in_sandbox(VECTOR_ADD, "vector_add", [X, Y], device="interpreter")
    assert str(refused.value) == (
        "/: sandbox_unavailable: the baseline runs model code only inside its sandbox, and bubblewrap (bwrap) is "
        "not installed: apt-get install -y bubblewrap (on your own machine, --unsafe-sandbox runs it without one)")
    run = run_in_sandbox(VECTOR_ADD, "vector_add", [X, Y], device="interpreter", unsafe=True)
    assert run.outcome is Outcome.OK and run.isolation.startswith("none (--unsafe-sandbox"), run.stderr_tail
    torch.testing.assert_close(run.outputs[0], X + Y)


def test_the_seccomp_program_is_well_formed() -> None:
    """Every jump lands inside the program, which ends in returns; both architectures build."""
    import struct

    from kernelgen.baseline.wall import SandboxUnavailable, seccomp_filter

    for machine in ("x86_64", "aarch64"):
        for processes in (False, True):
            program = seccomp_filter(processes, machine)
            instructions = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
            for at, (code, true, false, _) in enumerate(instructions):
                if code & 0x07 == 0x05:  # a jump
                    assert at + 1 + max(true, false) < len(instructions)
            assert all(code == 0x06 for code, *_ in instructions[-3:])
    with pytest.raises(SandboxUnavailable):
        seccomp_filter(False, "riscv64")


def test_results_are_read_within_their_bounds(tmp_path: Path) -> None:
    """A record declaring a tensor of 2**40 elements is refused before anything is allocated;
    records round-trip bit for bit (bf16, bool, empty)."""
    from kernelgen.baseline.child import TensorWriter
    from kernelgen.baseline.sandbox import AnswerFault, read_tensors

    fd = os.open(tmp_path / "results", os.O_RDWR | os.O_CREAT)
    try:
        writer = TensorWriter(fd)
        values = [torch.randn(3, 5).to(torch.bfloat16), torch.tensor([True, False]), torch.empty(0, 4)]
        for position, value in enumerate(values):
            writer.write(0, "output", position, value)
        writer.close()
        back = dict(read_tensors(fd, 1 << 20))
        for position, value in enumerate(values):
            assert back[(0, "output", position)].dtype == value.dtype and torch.equal(back[(0, "output", position)],
                                                                                     value)
        with pytest.raises(AnswerFault, match="larger than"):
            dict(read_tensors(fd, 40))
        header = json.dumps({"call": 0, "role": "output", "position": 9, "dtype": "float32",
                             "shape": [1 << 40]}).encode()
        os.pwrite(fd, len(header).to_bytes(4, "little") + header, os.fstat(fd).st_size)
        with pytest.raises(AnswerFault, match="larger than"):
            dict(read_tensors(fd, 1 << 62))
    finally:
        os.close(fd)


def test_a_slow_answers_fewer_repetitions_are_its_times() -> None:
    """The timer fits as few as 3 repetitions of a slow call in a GPU turn: those are its times,
    not a fault; fewer, more, or anything but finite non-negative numbers are."""
    from kernelgen.baseline.sandbox import AnswerFault, _checked_times

    assert _checked_times([1.0] * 100, 100) == (1.0,) * 100 and _checked_times([2.0] * 3, 100) == (2.0,) * 3
    assert _checked_times([5.0], 0) == ()
    for times in ([1.0] * 2, [1.0] * 101, [1.0, float("nan"), 1.0], [1.0, -1.0, 1.0], [True] * 3, "fast"):
        with pytest.raises(AnswerFault):
            _checked_times(times, 100)


@pytest.mark.parametrize("roofline, outcome", [(0.8, Outcome.OK), (2.5, Outcome.OK), (40.0, Outcome.IMPLAUSIBLE_TIME)])
def test_a_time_the_roofline_cannot_allow_is_rejected(monkeypatch: pytest.MonkeyPatch, roofline: float,
                                                      outcome: Outcome) -> None:
    """The baseline's kernel times come from the answer's own process: one below a third of the
    roofline's floor is no measurement (``implausible_time``), whatever the outputs. The sandbox
    and the eager timing are stood in for: correct outputs, forged times."""
    from kernelgen.baseline import ablation, sandbox
    from kernelgen.harness.pipeline import Settings
    from kernelgen.task.results import Timing
    from kernelgen.task.spec import get_task
    from kernelgen.task.verify import run_reference

    task = get_task("relu")

    def sandboxed(code, entry, calls, *args, refill=None, **options) -> SandboxResult:
        outputs = tuple(tuple(run_reference(task, dict(zip(["x"], call))).values()) for call in [*calls, refill])
        return SandboxResult(Outcome.OK, outputs[0], calls=outputs[:-1], modified=((),) * len(calls),
                             again=(outputs[-1],), again_modified=((),), again_inputs=tuple(refill),
                             times_ms=(1e-4,) * 100)

    monkeypatch.setattr(sandbox, "run_calls_in_sandbox", sandboxed)
    monkeypatch.setattr(ablation, "_timing", lambda task, settings, times, extra: Timing(
        sizes={"N": 1 << 24}, kernel_ms=1e-4, eager_ms=0.1, speedup=1000.0, gbps=1e6, tflops=1.0,
        roofline_fraction=roofline))
    result = ablation.evaluate_baseline(task, ablation.reference_answer(task), Settings(gpu=False, shapes=1))
    assert result.outcome is outcome, result.diagnostics
    if outcome is Outcome.IMPLAUSIBLE_TIME:
        assert (result.stage, result.first_diagnostic().code) == ("time", "implausible_time")
        assert "cannot be true" in result.first_diagnostic().message


@pytest.mark.parametrize("task_id, peak", [("expert/int8_gemm_rowcol_scaled", 1979e12),
                                           ("expert/fp8_gemm_rowwise_bf16", 1979e12),
                                           ("hard/gemm_bias_relu_f16", 989e12), ("relu", 67e12)])
def test_the_roofline_takes_the_peak_of_the_fastest_unit_the_golden_uses(task_id: str, peak: float) -> None:
    """An int8 GEMM measured against f32's peak read 4.4 times its roofline on an H200 (0.029
    ms at its bench sizes, 296 TOP/s) and the baseline rejected a correct answer's time."""
    from kernelgen.baseline.ablation import IMPLAUSIBLE_ROOFLINE
    from kernelgen.gpu.case import peak_flops, roofline_fraction
    from kernelgen.task.spec import get_task

    task = get_task(task_id)
    assert peak_flops(task, "sm_90") == peak
    if task.id == "int8_gemm_rowcol_scaled":
        measured = roofline_fraction(task, task.bench_sizes, 0.028976e-3, 4.0e12, "sm_90")
        assert 0.1 < measured < IMPLAUSIBLE_ROOFLINE
