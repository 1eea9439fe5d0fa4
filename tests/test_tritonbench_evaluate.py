"""Scoring TritonBench-T operators: the result comparison, call and execution accuracy with
right and wrong wrappers, whole cases from a model's (replayed) answers, perf inputs and the
track's summary (CPU)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from golden_edits import pinned
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgen.errors import Outcome
from kernelgen.model.generation import GenerationCache, make_record
from kernelgen.lang.parse import parse_kernel
from kernelgen.harness.pipeline import Settings
from kernelgen.model.providers import make_provider
from kernelgen.model.providers.base import Completion
from kernelgen.model.providers.replay import ReplayProvider
from kernelgen.task.results import CaseResult
from kernelgen.tritonbench.compare import compare_results
from kernelgen.tritonbench.evaluate import check_accuracy, evaluate_operator, track_summary
from kernelgen.tritonbench.generate import request_for
from kernelgen.tritonbench.goldens import golden_answer
from kernelgen.gpu.function import wrapper
from kernelgen.tritonbench.speedup import describe_case, perf_arguments

CPU = Settings(target="sm_90", gpu=False)


# -- comparing results ----------------------------------------------------------------------

float_tensors = st.lists(st.floats(-1e3, 1e3, width=32), max_size=6).map(lambda v: torch.tensor(v, dtype=torch.float32))
int_tensors = st.lists(st.integers(-100, 100), min_size=1, max_size=6).map(torch.tensor)
leaves = st.one_of(st.integers(-10, 10), st.booleans(), st.floats(allow_nan=True, allow_infinity=False, width=32),
                   st.text(max_size=5), st.none(), float_tensors, int_tensors)
containers = lambda inner: st.one_of(st.lists(inner, max_size=3).map(tuple),  # noqa: E731
                                     st.dictionaries(st.text(min_size=1, max_size=4), inner, max_size=3))
results = st.recursive(leaves, containers, max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(results)
def test_any_result_equals_itself(value):
    assert compare_results(value, value) == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=20), st.data())
def test_a_change_beyond_the_tolerance_is_found_where_it_is(values, data):
    expected = torch.tensor(values, dtype=torch.float32)
    index = data.draw(st.integers(0, len(values) - 1))
    actual = expected.clone()
    actual[index] += 1e-3 + 1e-3 * abs(float(expected[index]))
    found = compare_results({"case": (expected,)}, {"case": (actual,)})
    assert [(d.path, d.code) for d in found] == [("/case/0", "mismatch")]
    assert f"first at [{index}]" in found[0].message


@pytest.mark.parametrize("expected, actual, code", [
    (torch.ones(3), 1.0, "wrong_type"),
    (5.5, torch.tensor(5.5), "wrong_type"),
    (torch.ones(3), torch.ones(1, 3), "wrong_shape"),
    (torch.ones(3), torch.ones(3, dtype=torch.float64), "wrong_dtype"),
    (torch.tensor([1, 2]), torch.tensor([1, 3]), "mismatch"),
    (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 0.0]), "mismatch"),
    ((torch.ones(2), torch.ones(2)), (torch.ones(2),), "wrong_length"),
    (True, 1, "wrong_type"),
    ("All input elements must be positive", "other message", "mismatch"),
    ({"a": 1}, {"b": 1}, "missing_case"),
])
def test_differences_have_a_code(expected, actual, code):
    assert code in [d.code for d in compare_results(expected, actual)]


def test_within_tolerance_and_nan_agree():
    assert compare_results(torch.tensor([1.0, float("nan"), -0.0]), torch.tensor([1.0 + 1e-6, float("nan"), 0.0])) == []
    assert compare_results(2.0, 2.0 + 1e-6) == []


# -- accuracy -------------------------------------------------------------------------------


def test_the_golden_wrapper_is_accurate(sample):
    accuracy = check_accuracy(sample.operator("sub"), wrapper(golden_answer("sub"), "sub"), "cpu", seed=0)
    assert accuracy.execution_ok
    assert accuracy.test_cases == {f"test_case_{i}": "ok" for i in range(1, 5)}


def test_a_wrong_wrapper_fails_the_cases_it_gets_wrong(sample):
    def sub_ignoring_alpha(input, other, *, alpha=1, out=None):
        return torch.sub(input, other, out=out)

    accuracy = check_accuracy(sample.operator("sub"), sub_ignoring_alpha, "cpu", seed=0)
    assert accuracy.call_ok and not accuracy.execution_ok
    assert accuracy.test_cases["test_case_2"] == "mismatch"
    assert [c for c, verdict in accuracy.test_cases.items() if verdict == "mismatch"] == ["test_case_2"]


def test_a_wrapper_that_raises_fails_the_call_with_the_tests_line(sample):
    def sub(input, other):  # no alpha: test 2 passes alpha=2
        return input - other

    accuracy = check_accuracy(sample.operator("sub"), sub, "cpu", seed=0)
    assert not accuracy.call_ok
    failure = accuracy.call_failure
    assert failure.outcome == Outcome.RUNTIME_ERROR
    assert "TypeError" in failure.diagnostics[0].message and "sub.py" in failure.diagnostics[0].message


def test_unseeded_tests_see_the_same_draws_on_both_sides(sample):
    # tanh's test 3 draws randn(100, 100) without a seed: torch.tanh itself must agree.
    accuracy = check_accuracy(sample.operator("tanh"), lambda x, out_tensor=None: torch.tanh(x), "cpu", seed=7)
    assert accuracy.execution_ok


def test_the_accuracy_job_crosses_the_executors_process_boundary(sample):
    from kernelgen.gpu.executor import Executor
    from kernelgen.tritonbench.evaluate import accuracy_job

    with Executor() as executor:
        accuracy = executor.call(accuracy_job, sample.operator("max"), golden_answer("max"), 0, "cpu", timeout=120)
    assert accuracy.execution_ok and accuracy.test_cases["test_case_3"] == "ok"


# -- whole cases ----------------------------------------------------------------------------


def replayed(sample, tmp_path, name: str, answer: str) -> ReplayProvider:
    """A provider answering ``answer`` for operator ``name``: a recorded generation replayed."""
    operator = sample.operator(name)
    request = request_for(operator, "simp", golden_answer(name))
    completion = Completion(text=answer, provider="openai", model="recorded", latency_s=1.5, tokens_in=10,
                            tokens_out=20, token_source="server", constrained="response_format")
    GenerationCache(tmp_path).store(make_record(request, completion))
    return ReplayProvider(tmp_path)


def test_a_golden_case_is_ok(sample):
    result = evaluate_operator(sample.operator("logsumexp"), make_provider("reference"), CPU)
    assert result.ok and result.track == "tritonbench" and result.mode == "cpu"
    assert result.extra["call_accuracy"] and result.extra["execution_accuracy"] and result.extra["speedup"] is None
    assert {"prompt", "answer", "ast", "ttir", "ptx"} <= set(result.artifacts)


def test_an_operator_without_a_golden_is_unsupported_and_says_why(sample, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGEN_BENCH_DIR", str(tmp_path))  # a bench folder without goldens
    result = evaluate_operator(sample.operator("matmul"), make_provider("reference"), CPU)
    assert result.outcome == Outcome.UNSUPPORTED and result.stage == "generate"
    assert result.diagnostics[0]["code"] == "no_golden" and "matmul" in result.diagnostics[0]["message"]
    assert not result.extra["call_accuracy"]


def test_a_models_wrong_answer_is_a_wrong_result(sample, tmp_path):
    golden = json.loads(golden_answer("sub"))
    store = golden["body"][-1]
    store["value"]["rhs"] = store["value"]["rhs"]["rhs"]  # input - other: alpha ignored
    result = evaluate_operator(sample.operator("sub"), replayed(sample, tmp_path, "sub", json.dumps(golden)), CPU)
    assert result.outcome == Outcome.WRONG_RESULT and result.stage == "verify"
    assert result.extra["call_accuracy"] and not result.extra["execution_accuracy"]
    assert result.diagnostics[0]["path"] == "/test_case_2"
    assert result.generation.tokens_out == 20 and result.provider == "replay"


def test_a_models_answer_that_does_not_check_fails_at_check(sample, tmp_path):
    golden = json.loads(golden_answer("exp"))
    golden["body"][-1]["value"]["x"] = "undefined_value"
    result = evaluate_operator(sample.operator("exp"), replayed(sample, tmp_path, "exp", json.dumps(golden)), CPU)
    assert (result.outcome, result.stage) == (Outcome.SEMANTIC_ERROR, "check")
    assert result.diagnostics[0]["code"] == "undefined_name"


def test_a_models_answer_with_the_wrong_signature_fails_the_call(sample, tmp_path):
    golden = json.loads(golden_answer("exp"))
    golden["inputs"][0]["name"] = "x"
    golden["params"][0]["name"] = "x"
    golden["body"][2]["value"]["ptr"]["lhs"] = "x"
    result = evaluate_operator(sample.operator("exp"), replayed(sample, tmp_path, "exp", json.dumps(golden)), CPU)
    assert result.outcome == Outcome.OK  # exp's tests pass the input positionally
    golden = json.loads(golden_answer("logsumexp"))
    golden["inputs"][1]["name"] = "axis"
    result = evaluate_operator(sample.operator("logsumexp"),
                               replayed(sample, tmp_path / "l", "logsumexp", json.dumps(golden)), CPU)
    assert (result.outcome, result.stage) == (Outcome.LAUNCH_ERROR, "host")
    assert "unexpected keyword argument 'dim'" in result.diagnostics[0]["message"]


def test_a_correct_answer_that_refuses_the_perf_calls_is_named_in_cpu_mode(sample, tmp_path):
    """add_gelu's tests pass float32, its perf script float16: an answer pinned to f32 passes
    both accuracies, and CPU mode, which runs no perf size, still binds each perf call and says
    that none would be timed."""
    only_f32 = pinned(golden_answer("add_gelu"), "f32")
    result = evaluate_operator(sample.operator("add_gelu"), replayed(sample, tmp_path, "add_gelu", only_f32), CPU)
    assert result.ok and result.extra["execution_accuracy"]
    problems = result.extra["perf_problems"]
    assert len(problems) == len(sample.operator("add_gelu").perf.cases)
    assert problems[0]["path"] == "/perf/0" and problems[0]["code"] == "bad_arguments"
    assert problems[0]["message"].startswith("float16[4096], float16[4096]: ") and "declared f32" in problems[0]["message"]
    lines = "\n".join(track_summary([result]))
    assert "correct, but refusing or failing perf calls (no speedup): 1: add_gelu: float16[4096]" in lines
    golden = evaluate_operator(sample.operator("add_gelu"), make_provider("reference"), CPU)
    assert golden.extra["perf_problems"] == []


def two_launch_exp() -> str:
    """exp as a program of two launches: exp into a scratch tensor, then a copy to the result."""
    golden = json.loads(golden_answer("exp"))
    body = golden.pop("body")
    first = json.loads(json.dumps(body))
    first[-1]["ptr"]["lhs"] = "staged"
    copy = body[:2] + [{"op": "store", "ptr": {"op": "add", "lhs": "result", "rhs": "offsets"}, "mask": "in_bounds",
                        "value": {"op": "load", "ptr": {"op": "add", "lhs": "staged", "rhs": "offsets"}, "mask": "in_bounds"}}]
    grid, params = golden.pop("grid"), golden.pop("params")
    golden["scratch"] = [{"name": "staged", "dtype": "f32", "shape": ["N"]}]
    golden["launches"] = [{"name": "exp_into_scratch", "params": [params[0], {"name": "staged"}, params[2]], "grid": grid,
                           "body": first},
                          {"name": "copy_out", "params": [{"name": "staged"}, params[1], params[2]], "grid": grid,
                           "body": copy}]
    return json.dumps(golden)


def test_an_answer_of_several_launches_builds_and_runs_like_one_kernel(sample, tmp_path):
    """A model may answer with a program (split-K, two phases): each launch compiles, and the
    artifacts hold every launch's TTIR and PTX."""
    result = evaluate_operator(sample.operator("exp"), replayed(sample, tmp_path, "exp", two_launch_exp()),
                               Settings(target="sm_90", gpu=False, compile=True))
    assert result.ok and result.extra["execution_accuracy"], result.diagnostics
    assert "// launch 0: exp_into_scratch" in result.artifacts["ptx"] and "// launch 1: copy_out" in result.artifacts["ttir"]


def test_a_perf_call_meta_tensors_cannot_bind_is_not_blamed_on_the_answer(sample, monkeypatch):
    """A number passed as a 1-element tensor is read with .item(), which a meta tensor cannot
    give: the call is reported as not bound on meta tensors, not as a refusal (nor a crash)."""
    import kernelgen.tritonbench.tuning as tuning

    real = tuning.perf_arguments

    def number_as_tensor(operator, index, device, seed):
        args, kwargs = real(operator, index, device, seed)
        return args, {name: torch.empty(1, device=device) for name in kwargs}  # alpha=1 as a tensor

    monkeypatch.setattr(tuning, "perf_arguments", number_as_tensor)
    operator = sample.operator("fused_mv_sigmoid_sub")
    _, problems = tuning.perf_buckets(operator, parse_kernel(golden_answer(operator.name)))
    assert problems and {p.code for p in problems} == {"perf_not_bound"}
    assert "not bound on meta tensors (" in problems[0].message
    result = evaluate_operator(operator, make_provider("reference"), CPU)
    assert result.ok and {p["code"] for p in result.extra["perf_problems"]} == {"perf_not_bound"}
    assert "refusing or failing perf calls" not in "\n".join(track_summary([result]))


# -- perf inputs ----------------------------------------------------------------------------


def test_perf_calls_are_built_from_the_static_reading(sample):
    args, kwargs = perf_arguments(sample.operator("sub_gelu"), 0, "cpu", seed=0)
    assert [a.shape for a in args] == [torch.Size([4096])] * 2 and kwargs == {"alpha": 1, "approximate": "none"}
    again, _ = perf_arguments(sample.operator("sub_gelu"), 0, "cpu", seed=0)
    assert all(torch.equal(a, b) for a, b in zip(args, again))
    assert describe_case(sample.operator("fused_mv_sigmoid_sub").perf.cases[0]) == "float32[64, 64], float32[64], 0.5"


def test_every_golden_binds_every_perf_call(sample):
    """The operators' tests and perf scripts call them in different dtypes (max: int64 and
    float32; add_gelu, addmm, matrix_vector_dot: float32 and float16): each golden is generic
    over a dtype variable, and takes every perf call, bound on meta tensors as CPU mode does.
    (log_tanh's perf inputs are the script's rand() + 1e-6, positive: its precondition holds.)"""
    from kernelgen.tritonbench.goldens import UnsupportedOperator
    from kernelgen.tritonbench.tuning import perf_buckets

    refused = {}
    for operator in sample.operators:
        try:
            answer = golden_answer(operator.name)
        except UnsupportedOperator:
            continue
        _, problems = perf_buckets(operator, parse_kernel(answer))
        if problems:
            refused[operator.name] = problems[0].message
    assert refused == {}
    args, kwargs = perf_arguments(sample.operator("max"), 0, "cpu", seed=0)  # and runs: a float32 row's max
    values, indices = wrapper(golden_answer("max"), "max")(args[0][:64], **kwargs)
    assert torch.equal(values, args[0][:64].max(0).values) and int(indices) == int(args[0][:64].argmax())


# -- the summary ----------------------------------------------------------------------------


def case(name: str, outcome: Outcome, call: bool, execution: bool, speedup: float | None, mode: str = "gpu"):
    return CaseResult(task=name, tier="tritonbench", track="tritonbench", provider="reference", model="golden",
                      outcome=outcome, mode=mode, target="sm_90",
                      extra={"call_accuracy": call, "execution_accuracy": execution, "speedup": speedup})


def test_the_summary_counts_every_operator():
    results = [case("a", Outcome.OK, True, True, 2.0), case("b", Outcome.OK, True, True, 0.5),
               case("c", Outcome.OK, True, True, None), case("d", Outcome.WRONG_RESULT, True, False, None),
               case("e", Outcome.UNSUPPORTED, False, False, None)]
    lines = "\n".join(track_summary(results))
    assert "call accuracy:      4/5 (80.0%)" in lines
    assert "execution accuracy: 3/5 (60.0%)" in lines
    assert "unsupported by the language (1, counted as failures): e" in lines
    assert f"geometric mean {math.sqrt(2.0 * 0.5):.2f}x over the 2 operators" in lines
    assert "faster than the reference: 1/5 (20.0%)" in lines


def test_the_summary_in_cpu_mode_says_speedup_was_not_measured():
    lines = track_summary([case("a", Outcome.OK, True, True, None, mode="cpu")])
    assert any("not measured" in line for line in lines)
    assert track_summary([]) == []


def test_a_perf_result_as_accurate_as_the_reference_agrees_where_a_fixed_tolerance_cannot_tell():
    """log_softmax of a float32 linear whose logits sit near 8192 (ulp 1e-3) keeps values near 0:
    two summation orders differ there beyond (rtol, atol), so the perf call is judged against the
    float64 truth (the reference's own accuracy); a wrong element is as far from the truth and
    still fails."""
    from kernelgen.tritonbench.speedup import disagreement

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(64, 2048, generator=g) / 8, torch.randn(4, 2048, generator=g) / 8
    bias = torch.full((4,), 8192.0)

    def reference(x, w, bias):
        return torch.log_softmax(x @ w.t() + bias, dim=-1)

    def halves(x, w, bias):  # another summation order, as a kernel's K loop has
        return torch.log_softmax(x[:, :1000] @ w[:, :1000].t() + bias + x[:, 1000:] @ w[:, 1000:].t(), dim=-1)

    args = [x, w, bias]
    assert compare_results(reference(*args), halves(*args)), "the orders agree within the fixed tolerance: no test"
    assert disagreement(reference, halves, args, {}) == []

    def wrong(x, w, bias):
        out = halves(x, w, bias)
        out[3, int(out[3].argmax())] += 5e-2
        return out

    found = disagreement(reference, wrong, args, {})
    assert len(found) == 1 and "1 of 256 elements" in found[0].message

    def float32_only(x, w, bias):
        if x.dtype != torch.float32:
            raise RuntimeError("float32 only")
        return reference(x, w, bias)

    assert disagreement(float32_only, halves, args, {})  # no truth to judge by: the fixed tolerance stands
