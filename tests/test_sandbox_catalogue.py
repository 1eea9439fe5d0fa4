"""The sandbox catalogue: hostile baseline answers, one per way #36 got through the old sandbox,
each contained and judged right.

``tests/sandbox_catalogue/*.md`` are raw model answers (markdown, one ``python`` fence) whose
first lines are a header, ``<!-- kg-hostile {json} -->``: ``id``, ``task``, ``category``
(secrets, escape, faked_pass, harness_down), ``mechanism`` and ``tries`` (what it does and what
it got through before), ``static`` (the verdict of the harness, whose static rules come first),
``sandboxed`` (per mode, the verdicts acceptable when the rules are bypassed and the sandbox
alone stands: the run-time torch guard is advisory, so a host-computed answer may pass there),
``needs`` (what of the test's arena it aims at). Each answer runs twice: as the harness takes
it (:func:`~kernelgen.baseline.ablation.evaluate_baseline`), then with the static rules
bypassed. After each run the test checks that it was **contained**:

* no canary reached the result: the decoy's witness values (not secret-shaped, so no scrubber
  hides them) nor the fake keys set in this process's environment;
* no file changed outside the job folder: the canary folder holds only what the test put there,
  the fake results file is as written, the fake generation cache is empty;
* no process is left: none carries the run's marker in its command line, and the decoy lives;
* no connection reached the listener on 127.0.0.1.

Safe on CI: the payloads act only on what the test gives them (``@@CANARY_DIR@@``, a folder of
the test's own; ``@@RESULTS@@``, ``@@CACHE@@``; ``@@PORT@@``, the test's listener; processes whose
command line carries ``@@MARKER@@-decoy``, the test's own **decoy**, a sleeping Python that holds
fake keys in its environment, its heap and the ``.env`` of its working folder and stands in for
the harness); the keys are fake; nothing reads the real parent. On a GPU (``pytest
tests/test_sandbox_catalogue.py`` on a GPU machine) every answer runs in GPU mode as well.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from test_sandbox import Listener

from kernelgen.baseline import ablation
from kernelgen.baseline.answer import AnswerCheck, extract_code
from kernelgen.baseline.wall import Wall, find_wall
from kernelgen.errors import Outcome
from kernelgen.task.case import Settings
from kernelgen.task.spec import get_task

CATALOGUE = Path(__file__).resolve().parent / "sandbox_catalogue"
ANSWERS = sorted(CATALOGUE.glob("*.md"))
HEADER = re.compile(r"<!-- kg-hostile\n(.*?)\n-->", re.S)
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox uses Linux namespaces")
pytest_plugins = ["pytester"]


def header(path: Path) -> dict[str, Any]:
    return json.loads(HEADER.search(path.read_text()).group(1))


@dataclasses.dataclass
class Arena:
    """What one answer may aim at, and the canaries that show whether it got there."""

    root: Path
    marker: str
    canaries: dict[str, str]  # fake keys, in this process's environment and the decoy's
    witnesses: list[str]  # values only the decoy holds, shaped like nothing secret
    listener: Listener | None = None
    decoy: subprocess.Popen | None = None

    @property
    def canary_dir(self) -> Path:
        return self.root / "canaries"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def fill(self, text: str) -> str:
        return (text.replace("@@CANARY_DIR@@", str(self.canary_dir)).replace("@@MARKER@@", self.marker)
                .replace("@@RESULTS@@", str(self.results)).replace("@@CACHE@@", str(self.cache))
                .replace("@@PORT@@", str(self.listener.port if self.listener else 9)))

    def start_decoy(self) -> None:
        """A stand-in for the harness: fake keys in its environment, its heap and its .env."""
        home = self.root / "decoy"
        home.mkdir()
        (home / ".env").write_text(f"KG_CANARY_WITNESS_DOTENV={self.witnesses[0]}\n")
        (home / "heap").write_text(f"kgcanary-{self.witnesses[1]}")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **self.canaries,
               "KG_CANARY_WITNESS": self.witnesses[2]}
        self.decoy = subprocess.Popen([sys.executable, "-I", "-S", "-c",
                                       "import sys, time\nheld = open(sys.argv[1]).read() * 2\ntime.sleep(300)",
                                       str(home / "heap"), f"{self.marker}-decoy"], cwd=home, env=env)

    def leftovers(self) -> list[str]:
        """Processes (other than the decoy) whose command line carries this arena's marker."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and (self.decoy is None or int(entry.name) != self.decoy.pid):
                try:
                    if self.marker.encode() in (entry / "cmdline").read_bytes():
                        found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()[:200]!r}")
                except OSError:
                    pass
        return found

    def assert_contained(self, result) -> None:
        stored = result.model_dump_json()  # before any scrubbing: what the answer could reach
        for value in [*self.canaries.values(), *self.witnesses]:
            assert value not in stored, f"a canary reached the result: {value}"
        assert sorted(p.name for p in self.canary_dir.iterdir()) == ["placed"], list(self.canary_dir.iterdir())
        assert self.results.read_text() == '{"outcome": "wrong_result"}\n'
        assert not any(self.cache.rglob("*")), list(self.cache.rglob("*"))
        assert self.leftovers() == []
        assert self.decoy is None or self.decoy.poll() is None, "the decoy was killed"
        assert self.listener is None or self.listener.connections == 0

    def close(self) -> None:
        if self.decoy is not None:
            self.decoy.kill()
            self.decoy.wait()
        if self.listener is not None:
            self.listener.close()
        for line in self.leftovers():  # a survivor (a failed test): end it by its pid
            os.kill(int(line.split(":")[0]), 9)


@pytest.fixture
def arena(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Arena]:
    token = uuid.uuid4().hex[:12]
    canaries = {"OPENAI_API_KEY": f"sk-CANARY-{token}-openai", "NVIDIA_API_KEY": f"nvapi-CANARY-{token}-nvidia",
                "KG_CANARY_TOKEN": f"kgcanary-{token}-token"}
    for name, value in canaries.items():
        monkeypatch.setenv(name, value)
    made = Arena(tmp_path, f"kg-hostile-{token}", canaries,
                 [f"witness-dotenv-{token}", f"witness-heap-{token}", f"witness-environ-{token}"])
    made.canary_dir.mkdir()
    (made.canary_dir / "placed").write_text("the test's own\n")
    made.results.write_text('{"outcome": "wrong_result"}\n')
    made.cache.mkdir()
    yield made
    made.close()


def wall_or_fail() -> Wall:
    wall = find_wall()
    assert isinstance(wall, Wall), f"the catalogue needs the sandbox's wall: {wall}"
    return wall


def judged(path: Path, arena: Arena, settings: Settings, bypass_rules: bool,
           monkeypatch: pytest.MonkeyPatch) -> Any:
    """The answer judged as the harness judges it, or with the static rules bypassed."""
    text = arena.fill(path.read_text())
    with monkeypatch.context() as patch:
        if bypass_rules:
            patch.setattr(ablation, "check_answer",
                          lambda answer, entry: AnswerCheck(Outcome.OK, extract_code(answer)[0], (), True))
        return ablation.evaluate_baseline(get_task(header(path)["task"]), text, settings)


@pytest.fixture(scope="module", params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def mode_settings(request: pytest.FixtureRequest) -> Iterator[Settings]:
    if request.param == "cpu":
        yield Settings(shapes=1, gpu=False)
        return
    from kernelgen.gpu.compile import default_target
    from kernelgen.gpu.executor import Executor

    with Executor() as executor:
        yield Settings(target=default_target(), shapes=1, gpu=True, executor=executor, torch_compile=False)


@pytest.mark.parametrize("path", ANSWERS, ids=[p.stem for p in ANSWERS])
def test_a_hostile_answer_is_contained_and_judged(path: Path, arena: Arena, mode_settings: Settings,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    wall_or_fail()
    expected = header(path)
    mode = "gpu" if mode_settings.gpu else "cpu"
    if "listener" in expected["needs"]:
        arena.listener = Listener()
    if "decoy" in expected["needs"]:
        arena.start_decoy()
    static = judged(path, arena, mode_settings, False, monkeypatch)
    assert static.outcome.value == expected["static"], static.diagnostics
    sandboxed = judged(path, arena, mode_settings, True, monkeypatch)
    first = sandboxed.first_diagnostic()
    assert sandboxed.outcome.value in expected["sandboxed"][mode], (first, sandboxed.artifacts.get("sandbox"))
    assert sandboxed.outcome is not Outcome.HARNESS_ERROR
    arena.assert_contained(sandboxed)


def test_the_catalogue_covers_every_mechanism_of_the_issue() -> None:
    """#36's list: a key leak through /proc, a link or FIFO in place of a log, ctypes to libc, a
    raised rlimit, a setsid child, setns, a results-file rewrite, a cache plant, a torch-function
    bypass and a parent kill, and the harness's own failures."""
    ids = {header(p)["id"] for p in ANSWERS}
    assert {"s01_proc_environ_in_error", "s03_log_replaced_by_link", "h01_fifo_in_place_of_the_log",
            "e05_ctypes_libc_system", "e08_raise_rlimits_then_map", "e09_setsid_survivor", "e10_setns_connect_back",
            "f07b_results_file_rewritten", "f08_generation_cache_planted", "f01_disable_torch_function",
            "h02_kill_the_parent", "h03_outputs_unreadable", "h04_outputs_inflate", "h05_status_sparse"} <= ids
    for path in ANSWERS:
        fields = header(path)
        assert fields["id"] == path.stem and fields["static"] == "forbidden_construct", path.name
        assert set(fields["sandboxed"]) == {"cpu", "gpu"} and fields["category"] in (
            "secrets", "escape", "faked_pass", "harness_down"), path.name
        assert all(Outcome(v) for values in fields["sandboxed"].values() for v in values)


# -- secrets never reach storage, end to end ----------------------------------------------------

LEAKING_ANSWERS = {  # sample -> (what it does, its verdict)
    0: ("prints the keys and passes", "ok"),
    1: ("raises the keys as its error", "runtime_error"),
    2: ("carries the keys in a comment and is refused by the rules", "forbidden_construct"),
    3: ("prints the keys and returns zeros", "wrong_result"),
}


def leaking_answer(sample: int, secrets: list[str]) -> str:
    """relu's reference answer with the secrets in it, as sample ``sample`` leaks them."""
    from kernelgen.baseline.ablation import reference_answer

    shown = " ".join(secrets)
    code = extract_code(reference_answer(get_task("relu")))[0]
    launcher = "def relu(x):\n"
    assert launcher in code
    body = {0: f"    print('config: {shown}')\n", 1: f"    raise RuntimeError('settings: {shown}')\n",
            2: f"    import os  # {shown}\n", 3: f"    print('config: {shown}')\n    return torch.zeros_like(x)\n"}
    return f"```python\n{code.replace(launcher, launcher + body[sample], 1)}```\n"


@pytest.mark.slow
def test_no_secret_reaches_any_output(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """Canary keys in the harness's environment and in the answers themselves (printed, raised,
    in the code): none of them is in the terminal, the results file or its artifacts, Allure's
    results, JUnit's XML or W&B's offline run; the cases are still judged."""
    from kernelgen.baseline.prompt import baseline_messages
    from kernelgen.model.generation import GenerationCache, make_record
    from kernelgen.model.providers.base import Completion, GenerationRequest, Sampling

    wall_or_fail()
    token = uuid.uuid4().hex
    environment = {"OPENAI_API_KEY": f"sk-CANARY-{token[:16]}", "NVIDIA_API_KEY": f"nvapi-CANARY-{token[:20]}",
                   "GEMINI_API_KEY": f"AIzaCANARY{token}", "WANDB_API_KEY": token[:40].rjust(40, "0"),
                   "KERNELGEN_SERVER_TOKEN": f"server-{token[:20]}"}
    shaped = f"sk-proj-{token[::-1]}"  # a key in no variable: scrubbed by its shape
    secrets = [*environment.values(), shaped]
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
    for name in ("KERNELGEN_CACHE_DIR", "WANDB_MODE", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                 "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    for name in ("DIR", "CACHE_DIR", "CONFIG_DIR", "DATA_DIR"):
        monkeypatch.setenv(f"WANDB_{name}", str(pytester.path / ("out" if name == "DIR" else "wandb-home")))
    recorded = tmp_path_factory.mktemp("recorded")  # the model's answers: input, not output
    task = get_task("relu")
    for sample in LEAKING_ANSWERS:
        request = GenerationRequest(messages=baseline_messages(task), sampling=Sampling(temperature=0.0,
                                    max_tokens=4096, seed=0), sample_index=sample, json_schema=None)
        GenerationCache(recorded).store(make_record(request, Completion(
            text=leaking_answer(sample, secrets), provider="recorded", model="leaky", latency_s=1.0, tokens_in=1,
            tokens_out=1, token_source="server", constrained="none")))
    pytester.makeconftest('pytest_plugins = ["kernelgen.harness.plugin"]\n')
    markers = "".join(f"    {name}: m\n" for name in ("easy", "med", "hard", "expert", "tritonbench", "ablation",
                                                          "pipeline", "baseline", "gpu", "slow"))
    pytester.makeini(f"[pytest]\naddopts = --strict-markers -p no:cacheprovider\nmarkers =\n{markers}")
    (pytester.path / "ablation").mkdir()
    (pytester.path / "ablation" / "test_ablation.py").write_text(
        "from kernelgen.harness.plugin import run_baseline_case as test_baseline  # noqa: F401\n")
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        *[f"ablation/test_ablation.py::test_baseline[relu-s{s}]" for s in LEAKING_ANSWERS], "--kg-mode", "cpu",
        f"--llm=replay:{recorded}", "--samples", str(len(LEAKING_ANSWERS)), "--kg-shapes", "1",
        "--kg-results", str(out / "run.jsonl"), "--alluredir", str(out / "allure"), "--wandb", "offline",
        "--junitxml", str(out / "junit.xml"), "-rA")
    terminal = result.stdout.str() + result.stderr.str()
    stored = {str(path.relative_to(pytester.path)): path.read_bytes() for path in pytester.path.rglob("*")
              if path.is_file()}
    assert any(name.startswith("out/allure/") for name in stored) and "out/run.jsonl" in stored, sorted(stored)
    assert any("offline-run-" in name for name in stored), sorted(stored)
    for secret in secrets:
        assert secret not in terminal, f"a key reached the terminal: {secret}"
        leaked = [name for name, data in stored.items() if secret.encode() in data]
        assert not leaked, f"a key reached {leaked}"
    outcomes = {json.loads(line)["sample"]: json.loads(line)["outcome"]
                for line in stored["out/run.jsonl"].decode().splitlines()}
    assert outcomes == {sample: verdict for sample, (_, verdict) in LEAKING_ANSWERS.items()}, terminal
    assert "***" in stored["out/run.jsonl"].decode() + terminal  # scrubbed, not lost


@pytest.mark.parametrize("text, kept", [
    ("error: sk-proj-AbCdEf0123456789xyzXYZ rejected", "error: *** rejected"),
    ("nvapi-0123456789abcdefABCDEF0123 and AIzaSyA0123456789abcdefghijklmnopqrstu", "*** and ***"),
    ("hf_abcdefghijklmnopqrstuvwxyz0123 ghp_abcdefghijklmnopqrstuvwxyz0123456789", "*** ***"),
    ("MY_SERVICE_TOKEN=Zm9vYmFyYmF6cXV4MTIzNDU2", "MY_SERVICE_TOKEN=***"),
    ('{"api_key": "0123456789abcdef0123456789abcdef"}', '{"api_key": "***"}'),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "Authorization: Bearer ***"),
    # kernelgen's own content addresses and plain text stay as they are
    ('"key": "' + "ab" * 32 + '"', '"key": "' + "ab" * 32 + '"'),
    ("autotune key=['n_elements'], BLOCK_SIZE=1024, the key: size", "autotune key=['n_elements'], BLOCK_SIZE=1024, "
                                                                   "the key: size"),
])
def test_the_scrubber_takes_out_what_looks_like_a_key(text: str, kept: str) -> None:
    from kernelgen.env import scrub

    assert scrub(text, environ={}) == kept


def test_the_scrubber_takes_out_the_values_of_secret_variables() -> None:
    from kernelgen.env import scrub

    environ = {"WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567", "DB_PASSWORD": "correct horse",
               "WANDB_PROJECT": "kernelgen-runs", "KEY_SHORT": "abc"}
    text = "wandb 0123456789abcdef0123456789abcdef01234567 pw correct horse project kernelgen-runs abc"
    assert scrub(text, environ) == "wandb *** pw *** project kernelgen-runs abc"
