"""Optimization rounds (kernelgen.model.optimize) and the compiler's facts (kernelgen.gpu.facts).

The model is a real HTTP server on loopback that writes a slow ReLU first (each program reads
a strided column: scalar, uncoalesced loads) and the fast one (contiguous blocks: 128-bit
loads) only when its prompt says that its global loads are not vectorized. On this CPU
machine the facts come from real sm_90 compiles, the answers run through the real pipeline
(the interpreter), and the times come in through the loop's measuring seam, ``evaluate``;
the GPU test at the end runs the same model through ``pytest bench`` on a GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgen.errors import CompileError, Diagnostic, Outcome
from kernelgen.gpu.facts import estimate_occupancy, format_facts, kernel_facts, ptx_accesses
from kernelgen.model.generation import GenerationCache, generate, task_request
from kernelgen.task.metrics import fast_p, geomean_speedup, score
from kernelgen.model.optimize import CPU_SKIP, answer_facts, optimization_summary, optimize, optimize_messages
from kernelgen.lang.parse import kernel_to_json
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.model.providers import make_provider
from kernelgen.model.providers.base import Sampling
from kernelgen.task.results import CaseResult, Timing
from kernelgen.task.spec import get_task
from test_providers import Answer, ScriptedServer, Seen, chat_completion, openai_at

ROOT = Path(__file__).resolve().parent.parent
TASK = get_task("relu")
FAST = kernel_to_json(TASK.golden)
_golden = json.loads(FAST)
# offs = program_id + arange(BLOCK) * num_programs: every element once, but a warp's lanes read
# addresses num_programs apart, one 32-bit load each.
SLOW = json.dumps({**_golden, "body": [
    {"op": "let", "name": "offs", "value": {"op": "add", "lhs": {"op": "program_id"}, "rhs": {
        "op": "mul", "lhs": {"op": "arange", "size": "BLOCK"}, "rhs": {"op": "num_programs"}}}},
    *_golden["body"][1:]]}, separators=(",", ":"))
SLOWER = SLOW.replace('"value":1024', '"value":512')
WRONG = FAST.replace('"rhs":0.0', '"rhs":1.0')
CPU = Settings(target="sm_90", shapes=2, gpu=False)
TIMES_MS = {SLOW: 1.0, SLOWER: 2.0, FAST: 0.25}
EAGER_MS = 0.5


def optimizing_model(seen: Seen, index: int) -> Answer:
    """Slow first; in the rounds a wrong answer, then a slower one, then the fast kernel, but
    only if the prompt says its loads are not vectorized (else the slower one again)."""
    prompt = seen.body["messages"][-1]["content"]
    if "# Your fastest correct kernel so far" not in prompt:
        text = SLOW
    elif "was not kept" not in prompt:
        text = WRONG
    elif "it failed" in prompt:
        text = SLOWER
    else:
        text = FAST if "global loads: 8 instructions, not vectorized" in prompt else SLOWER
    return Answer(200, chat_completion(text))


def facts_reading_model(seen: Seen, index: int) -> Answer:
    """Slow first; then the fast kernel if the prompt says its loads are not vectorized."""
    prompt = seen.body["messages"][-1]["content"]
    shown_scalar_loads = "# Your fastest correct kernel so far" in prompt and "not vectorized" in prompt
    return Answer(200, chat_completion(FAST if shown_scalar_loads else SLOW))


def timing(kernel_ms: float) -> Timing:
    sizes = dict(TASK.bench_sizes)
    seconds = kernel_ms / 1e3
    return Timing(sizes=sizes, kernel_ms=kernel_ms, eager_ms=EAGER_MS, speedup=EAGER_MS / kernel_ms,
                  gbps=TASK.bytes_moved(sizes) / seconds / 1e9, tflops=TASK.flop_count(sizes) / seconds / 1e12,
                  roofline_fraction=0.05 / kernel_ms)


def measured(times: dict[str, float]):
    """The loop's measuring seam: the real pipeline (CPU mode), then the given time of a correct
    answer, as the GPU's time stage would have set it."""
    def evaluate(answer: str) -> CaseResult:
        result = evaluate_answer(TASK, answer, CPU, provider="openai", model="test-model")
        if result.ok:
            result.timing = timing(times[answer])
        return result

    return evaluate


def sm90_facts(answer: str):
    return answer_facts(TASK, answer, CPU)


def run_rounds(provider, rounds: int, cache=None, times=TIMES_MS, facts_of=sm90_facts) -> CaseResult:
    evaluate = measured(times)
    request = task_request(TASK, Sampling(temperature=0.0, max_tokens=512, seed=3))
    first = evaluate(generate(provider, request, cache).text)
    first.artifacts["prompt"] = request.prompt_text()
    return optimize(provider, request, first, rounds, evaluate, facts_of, cache)


# ---------------------------------------------------------------------------------------------
# Facts


def test_facts_tell_the_scalar_loads_from_the_vectorized_ones() -> None:
    slow, fast = sm90_facts(SLOW), sm90_facts(FAST)
    assert slow.target == fast.target == "sm_90" and slow.num_warps == 4
    assert (slow.loads.count, slow.loads.vectorized, slow.loads.widths) == (8, 0, {32: 8})
    assert (slow.stores.count, slow.stores.vectorized) == (8, 0)
    assert (fast.loads.count, fast.loads.vectorized, fast.loads.widths) == (2, 2, {128: 2})
    assert fast.stores.widths == {128: 2}
    for facts in (slow, fast):
        assert 0 < facts.registers <= 255 and facts.local_bytes == 0 and facts.shared_bytes == 0
        assert facts.dots == 0 and not facts.tensor_cores
    assert "- global loads: 8 instructions, not vectorized (8 x 32-bit)" in format_facts(slow)
    assert "- global loads: 2 instructions, all vectorized (2 x 128-bit)" in format_facts(fast)


def test_the_cli_prints_the_same_facts() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    printed = subprocess.run([sys.executable, "-m", "kernelgen.cli", "compile", "-", "--target", "sm_90",
                              "--divisible-by-16", "N", "--facts"], input=SLOW, capture_output=True, text=True,
                             cwd=ROOT, env=env, timeout=300)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.splitlines() == format_facts(sm90_facts(SLOW))


def test_matmul_dots_are_on_tensor_cores_and_vectorize_only_when_divisible() -> None:
    from kernelgen.check.checker import check
    from kernelgen.gpu.compile import compile_kernel
    from kernelgen.lang.parse import parse_kernel

    checked = check(parse_kernel((ROOT / "examples" / "matmul.json").read_text()))
    plain = kernel_facts(compile_kernel(checked, target="sm_90"))
    divisible = kernel_facts(compile_kernel(checked, target="sm_90", divisible_by_16=("M", "N", "K")))
    assert plain.dots == 1 and plain.wgmma > 0 and plain.tensor_cores
    assert plain.loads.vectorized == 0 and plain.loads.widths == {16: plain.loads.count}
    assert divisible.loads.count == divisible.loads.vectorized > 0  # cp.async of 16 bytes
    assert plain.shared_bytes > 0


def test_ptx_accesses_reads_predicates_vectors_async_copies_and_mma() -> None:
    ptx = "\n".join([
        "\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];",
        "\tld.global.nc.b16 { %rs1 }, [ %rd2 + 0 ];",
        "\t@!%p2 st.global.v2.b32 [ %rd3 + 0 ], { %r5, %r6 };",
        "\tcp.async.cg.shared.global [ %r7 + 0 ], [ %rd4 + 0 ], 0x10, %r8;",
        "\tcp.async.ca.shared.global [ %r14 + 0 ], [ %rd7 + 0 ], 4, %r15;",
        "\tcp.async.commit_group;",
        "\tcp.async.bulk.prefetch.tensor.2d.L2.global.tile [ %rd8, { %r16, %r17 } ];",
        "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 { %f1 }, { %r9 }, { %r10 }, { %f2 };",
        "\twgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 { %r11 }, %rd5, %rd6, 1, 1, 1, 0, 1;",
        "\tld.shared.v4.b32 { %r12 }, [ %r13 ];",
    ])
    loads, stores, mma, wgmma = ptx_accesses(ptx)
    assert loads.widths == {128: 2, 32: 1, 16: 1} and (loads.count, loads.vectorized) == (4, 2)
    assert stores.widths == {64: 1} and stores.vectorized == 1
    assert (mma, wgmma) == (1, 1)


@pytest.mark.parametrize("target, registers, shared, warps, expected", [
    # 128 registers x 32 lanes = 4096 a warp: 16384 / 4096 = 4 warps per sub-partition, 16 per SM
    ("sm_90", 128, 0, 4, (4, 16, "registers")),
    ("sm_90", 32, 0, 4, (16, 64, "warps")),
    # 100 KiB + 1 KiB reserved per program: 2 fit in 228 KiB
    ("sm_90", 32, 100 * 1024, 4, (2, 8, "shared memory")),
    # sm_86 has 48 warps an SM: 6 programs of 8 warps
    ("sm_86", 32, 0, 8, (6, 48, "warps")),
    ("sm_80", 32, 0, 1, (32, 32, "programs per SM")),
    ("sm_89", 255, 0, 4, (2, 8, "registers")),  # 8192 registers a warp: 2 per sub-partition, 8 per SM
])
def test_occupancy_follows_the_targets_limits(target, registers, shared, warps, expected) -> None:
    occupancy = estimate_occupancy(target, registers, shared, warps)
    assert (occupancy.blocks, occupancy.warps, occupancy.limited_by) == expected


# ---------------------------------------------------------------------------------------------
# The prompt


def test_the_prompt_shows_times_facts_and_the_rejected_round_but_keys_without_times() -> None:
    request = task_request(TASK)
    facts = format_facts(sm90_facts(SLOW))
    shown = timing(1.0).model_copy(update={"compiled_ms": 0.4, "speedup_vs_compiled": 0.4})
    from kernelgen.task.results import OptimizationRound

    rejected = OptimizationRound(round=2, outcome=Outcome.OK, verdict="slower", kernel_ms=2.0)
    messages = optimize_messages(request.messages, SLOW, shown, facts, rejected)
    assert len(messages) == 2 and messages[0] == request.messages[0]
    text = messages[1].content
    assert text.startswith(request.messages[1].content)
    assert f"# Your fastest correct kernel so far\n{SLOW}" in text
    assert "- measured at N=16777216: 1 ms" in text and "speedup over it: 0.5x" in text
    assert "- torch.compile: 0.4 ms; your speedup over it: 0.4x" in text and "5.0% of the roofline" in text
    assert "\n".join(facts) in text
    assert "# Your previous answer (round 2) was not kept\n- it was correct but not faster: 2 ms against 1 ms" in text
    assert text.rstrip().endswith("nothing before or after it.")
    keyed = optimize_messages(request.messages, SLOW, timing(1.3), facts, rejected, measured=False)[1].content
    assert "# How it ran" not in keyed and " ms" not in keyed
    assert "\n".join(facts) in keyed and "- it was correct but not faster\n" in keyed
    failed = OptimizationRound(round=1, outcome=Outcome.WRONG_RESULT, stage="verify", verdict="failed",
                               diagnostics=[Diagnostic("/outputs/y", "mismatch", "12 elements differ").to_dict()])
    text = optimize_messages(request.messages, SLOW, shown, facts, failed)[1].content
    assert "- it failed: wrong_result at verify\n- /outputs/y: mismatch: 12 elements differ" in text


# ---------------------------------------------------------------------------------------------
# The loop


def test_a_wrong_and_a_slower_answer_never_replace_the_best_and_the_facts_bring_the_fast_one() -> None:
    with ScriptedServer(optimizing_model) as server:
        result = run_rounds(openai_at(server), rounds=3)
    optimization = result.optimization
    assert [r.verdict for r in optimization.rounds] == ["first", "failed", "slower", "kept"]
    assert [r.kernel_ms for r in optimization.rounds] == [1.0, None, 2.0, 0.25]
    assert optimization.rounds[1].outcome == Outcome.WRONG_RESULT and optimization.rounds[1].stage == "verify"
    assert optimization.best_round == 3 and optimization.before.kernel_ms == 1.0
    assert result.ok and result.artifacts["answer"] == FAST and result.timing.kernel_ms == 0.25
    assert result.artifacts["facts"].startswith("- compiled for sm_90")
    assert "all vectorized" in result.artifacts["facts"]
    assert optimization.rounds[0].facts["loads"]["vectorized"] == 0
    assert optimization.rounds[3].facts["loads"]["vectorized"] == 2 and optimization.rounds[3].key
    # Rounds 2 and 3 still showed the slow kernel, the best so far, with the reason for the last refusal.
    prompts = [seen.body["messages"][-1]["content"] for seen in server.seen]
    assert all(f"so far\n{SLOW}" in p for p in prompts[1:])
    assert "it failed: wrong_result at verify" in prompts[2] and "not faster: 2 ms against 1 ms" in prompts[3]
    assert result.artifacts["prompt"] == "\n\n".join(m["content"] for m in server.seen[3].body["messages"])
    assert [r["verdict"] for r in json.loads(result.artifacts["optimize_rounds"])] == ["failed", "slower", "kept"]


def test_without_the_facts_the_model_never_writes_the_fast_kernel() -> None:
    def no_facts(answer: str):
        raise CompileError(Diagnostic("", "no_cuobjdump", "cuobjdump is missing"))

    with ScriptedServer(optimizing_model) as server:
        result = run_rounds(openai_at(server), rounds=3, facts_of=no_facts)
    assert [r.verdict for r in result.optimization.rounds] == ["first", "failed", "slower", "slower"]
    assert result.artifacts["answer"] == SLOW and result.optimization.best_round == 0
    assert "facts are unavailable: no_cuobjdump" in server.seen[1].body["messages"][-1]["content"]


def test_without_timing_no_round_runs_and_the_facts_stay() -> None:
    with ScriptedServer(optimizing_model) as server:
        provider = openai_at(server)
        request = task_request(TASK)
        first = evaluate_answer(TASK, provider.generate(request).text, CPU)
        result = optimize(provider, request, first, 2, measured(TIMES_MS), sm90_facts)
    assert len(server.seen) == 1
    assert result.optimization.skipped == CPU_SKIP and len(result.optimization.rounds) == 1
    assert "not vectorized" in result.artifacts["facts"]
    assert optimization_summary("pipeline", [result]) == [f"pipeline: {CPU_SKIP}"]


def test_a_provider_failure_ends_the_rounds_and_keeps_the_best() -> None:
    def failing_in_the_rounds(seen: Seen, index: int) -> Answer:
        if "# Your fastest correct kernel so far" in seen.body["messages"][-1]["content"]:
            return Answer(500, {"error": {"message": "overloaded"}})
        return Answer(200, chat_completion(SLOW))

    with ScriptedServer(failing_in_the_rounds) as server:
        result = run_rounds(openai_at(server), rounds=2)
    assert result.ok and result.artifacts["answer"] == SLOW and len(result.optimization.rounds) == 1
    assert result.optimization.stopped.startswith("round 1: ") and "500" in result.optimization.stopped
    assert optimization_summary("pipeline", [result])[0].endswith("; 1 cases stopped early by a provider failure")


def _comparable(result: CaseResult) -> str:
    return result.model_dump_json(exclude={"duration_s"})


def test_replay_reproduces_a_run_with_optimization_rounds_bit_for_bit(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path / "generations")
    with ScriptedServer(optimizing_model) as server:
        recorded = run_rounds(openai_at(server), rounds=3, cache=cache)
    assert len(server.seen) == 4 and len(list(cache.records())) == 4
    replay = make_provider(f"replay:{cache.directory}")
    assert _comparable(run_rounds(replay, rounds=3)) == _comparable(recorded)
    # Other times (a GPU never measures the same twice) key the same rounds: the answers replay.
    noisy = run_rounds(replay, rounds=3, times={k: v * 1.07 for k, v in TIMES_MS.items()})
    assert [r.key for r in noisy.optimization.rounds] == [r.key for r in recorded.optimization.rounds]
    assert noisy.artifacts["answer"] == FAST and noisy.timing.kernel_ms == pytest.approx(0.2675)


def test_scores_before_and_after_optimization(tmp_path: Path) -> None:
    with ScriptedServer(optimizing_model) as server:
        optimized = run_rounds(openai_at(server), rounds=3)
    failed = evaluate_answer(TASK, WRONG, CPU)
    cases = [optimized, failed]
    assert fast_p(cases, 1.0, before=True) == 0.0 and fast_p(cases, 1.0) == 0.5
    assert fast_p(cases, 1.5) == 0.5 and geomean_speedup(cases) == (2.0, 1)
    assert geomean_speedup(cases, before=True) == (0.5, 1)
    scores = score(cases)
    assert scores.fast_before[1.5] == 0.0 and scores.fast[1.5] == 0.5 and scores.geomean_before == (0.5, 1)
    assert optimization_summary("pipeline", cases) == [
        "pipeline: optimization rounds: 3 answers over 1 cases, 1 kept",
        "pipeline: before -> after optimization: fast_1 0.0% -> 50.0%; fast_1.5 0.0% -> 50.0%; "
        "geometric-mean speedup 0.50x -> 2.00x"]
    from kernelgen.report.compare import compare_lines, load_runs
    from kernelgen.report.store import RunWriter

    writer = RunWriter(tmp_path / "run.jsonl")
    for case in cases:
        writer.add(case)
    writer.close()
    lines = compare_lines(load_runs([tmp_path / "run.jsonl"]))
    table = lines[lines.index("== optimization rounds (speedups before the rounds and after them)") + 1:]
    assert table[0].split() == ["tier", "run", "optimized", "answers", "kept", "fast_1", "before", "after",
                                "fast_1.5", "before", "after", "geomean", "before", "after"]
    assert table[1].split() == ["easy", "run", "1", "3", "1", "0.0%", "50.0%", "0.0%", "50.0%", "0.50x", "2.00x"]
    assert table[2].split()[0] == "all" and table[3] == ""


# ---------------------------------------------------------------------------------------------
# End to end: pytest bench with the loopback model


def run_bench(server: ScriptedServer, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = "sk-loopback"
    return subprocess.run([sys.executable, "-m", "pytest", "bench/easy/test_easy.py::test_pipeline[relu]", "-q",
                           "-p", "no:cacheprovider", "--wandb", "off", "--llm", "openai", "--model", "tiny",
                           "--base-url", server.url + "/v1", "--kg-cache", str(tmp_path / "generations"),
                           "--kg-results", str(tmp_path / "run.jsonl"), "--optimize-rounds", "1", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_cpu_mode_says_once_that_the_rounds_are_skipped(tmp_path: Path) -> None:
    with ScriptedServer(facts_reading_model) as server:
        run = run_bench(server, tmp_path, "--kg-mode", "cpu", "--kg-shapes", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(server.seen) == 1
    assert run.stdout.count(CPU_SKIP) == 2  # the header at the start, the summary at the end
    from kernelgen.report.store import load_artifacts, read_run

    case = read_run(tmp_path / "run.jsonl")[0]
    assert case.optimization.skipped == CPU_SKIP
    assert "not vectorized" in load_artifacts(tmp_path / "run.jsonl", case)["facts"]


@pytest.mark.gpu
def test_on_a_gpu_the_model_is_shown_the_facts_and_its_faster_kernel_is_kept(tmp_path: Path) -> None:
    with ScriptedServer(facts_reading_model) as server:
        # Untuned and without torch.compile: the case's timing is then the kept round's own.
        run = run_bench(server, tmp_path, "--kg-mode", "gpu", "--kg-tune", "off", "--kg-compiled", "off")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(server.seen) == 2
    assert "global loads: 8 instructions, not vectorized" in server.seen[1].body["messages"][-1]["content"]
    from kernelgen.report.store import read_run

    case = read_run(tmp_path / "run.jsonl")[0]
    first, second = case.optimization.rounds
    assert (first.verdict, second.verdict, case.optimization.best_round) == ("first", "kept", 1)
    assert second.kernel_ms < first.kernel_ms and case.timing.kernel_ms == second.kernel_ms
    assert "before -> after optimization" in run.stdout
    print("\n".join(run.stdout.split("kernelgen summary")[-1].splitlines()[1:]))
