"""The comparison's floor at the reference's own rounding error (kernelgen.task.wide_reference):
where a task is ill-conditioned at a draw, a correct kernel (or an exact one) passes although
the reference itself is far from the exact result, and wrong answers still fail on that draw.

standardize_rows on a row a few f32 ulps wide ([9.645966, 9.645984, 9.645975, 9.645970]):
exactly [-1.049, 1.296, 0.185, -0.432], torch's f32 reference [-1.111, 1.234, 0.123, -0.494] (its f32
mean is rounded), the golden [-1.108, 1.231, 0.123, -0.492]: 6% off, as any f32 kernel is."""

from __future__ import annotations

import torch

from kernelgen.host.wrapper import call_kernel
from kernelgen.interp.execute import interpret
from kernelgen.task.compare import FLOOR_CRITERION, Tolerance, compare_tensors, floorable
from kernelgen.task.spec import get_task
from kernelgen.task.verify import compare_outputs, run_reference
from kernelgen.task.wide_reference import WideReference

TASK = get_task("med/standardize_rows")
# The ill-conditioned row with well-conditioned ones (values bf16 does not hold); torch's
# reference differs from the golden on the first only with two rows or more (one row takes
# another path through torch.std).
X = torch.tensor([[9.645966, 9.645984, 9.645975, 9.645970], [1.1, 5.3, -2.7, 0.45], [-2.7, 7.9, 12.3, 4.4],
                  [12.3, 0.45, 3.3, -1.9]])
SIZES = {"M": 4, "N": 4}


def judged(out: torch.Tensor, task=TASK) -> list:
    expected = run_reference(task, {"x": X})
    return compare_outputs(task, {"out": out}, expected, {"x": X}, SIZES)


def standardized(x: torch.Tensor, correction: int = 1) -> torch.Tensor:
    return (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True, correction=correction)


def test_the_golden_passes_where_the_reference_itself_is_off() -> None:
    golden = call_kernel(TASK.golden, [X], {}, interpret)
    want = run_reference(TASK, {"x": X})["out"]
    assert not compare_tensors(golden, want, "f32").ok  # rtol and atol alone fail it
    assert judged(golden) == []


def test_a_result_computed_in_f64_passes() -> None:
    exact = standardized(X.double()).float()
    assert not compare_tensors(exact, run_reference(TASK, {"x": X})["out"], "f32").ok
    assert judged(exact) == []


def test_wrong_answers_still_fail_on_the_same_draw() -> None:
    wrong = {"biased std (divided by N)": standardized(X, correction=0),
             "mean not subtracted": X / X.std(1, keepdim=True),
             "computed in bf16": standardized(X.bfloat16()).float()}
    for name, out in wrong.items():
        problems = judged(out)
        assert [d.code for d in problems] == ["mismatch"], name
        assert FLOOR_CRITERION in problems[0].message, name


def test_a_later_output_is_judged_with_its_floor_too() -> None:
    """col_mean_var: the mean right, the variance not (N - 1 for N)."""
    task = get_task("med/col_mean_var")
    x = torch.tensor([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0], [2.0, 2.5, 7.0]])
    expected = run_reference(task, {"x": x})
    got = {"mean": x.mean(0), "var": x.var(0, correction=1)}
    assert [(d.path, d.code) for d in compare_outputs(task, got, expected, {"x": x}, {"M": 3, "N": 3})] == \
        [("/outputs/1", "mismatch")]


def test_no_floor_where_the_reference_refuses_f64() -> None:
    strict = TASK.model_copy(update={"reference": "def reference(x):\n"
                                                  "    assert x.dtype == torch.float32\n"
                                                  "    return (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)\n"})
    want = run_reference(strict, {"x": X})["out"]
    assert bool(WideReference(strict, {"x": X}).result("out", want).isnan().all())
    assert [d.code for d in judged(standardized(X.double()).float(), strict)] == ["mismatch"]


def test_no_floor_where_the_reference_reads_its_dtypes_limits() -> None:
    """log_clamped_eps clamps at torch.finfo(x.dtype).eps: on f64 copies at f64's eps, another
    function, whose distance from the f32 reference (20 at x = 0) is no rounding error."""
    (f32,) = [t for t in get_task("easy/log_clamped_eps").variant_tasks() if t.variant.name == "f32"]
    x = torch.tensor([[0.0, 1e-9, 0.5, 2.0]])
    expected = run_reference(f32, {"x": x})
    for floor in (1e-10, 1e-6):
        got = torch.log(torch.clamp(x, min=floor))
        assert [d.code for d in compare_outputs(f32, {"y": got}, expected, {"x": x}, {"M": 1, "N": 4})] == ["mismatch"]


def test_the_floor_counts_from_both_the_reference_and_its_f64_result() -> None:
    """Within twice the reference's own error of both: an answer on the far side of the
    reference, twice its error from it but three from the f64 result, fails (0.8187 against
    0.7443, whose f64 result is 0.7071); the golden's, the reference's and the f64 result pass."""
    want, wide = torch.tensor([0.7443]), torch.tensor([0.7071], dtype=torch.float64)
    for value, ok in [(0.7433, True), (0.7443, True), (0.7071, True), (0.8187, False), (0.68, True), (0.6, False)]:
        assert compare_tensors(torch.tensor([value]), want, "f32", wide=wide).ok is ok, value


def test_exact_outputs_get_no_floor() -> None:
    """A tolerance of 0 asks for equal values, floor or not (f32 and f16 alike)."""
    exact = Tolerance(rtol=0.0, atol=0.0)
    assert not floorable("f32", exact) and not floorable("f16", exact)
    want, wide = torch.tensor([1.0]), torch.tensor([1.5], dtype=torch.float64)
    assert not compare_tensors(torch.tensor([1.25]), want, "f32", exact, wide=wide).ok


def test_no_floor_where_the_f64_run_computes_another_function() -> None:
    """The review's cases: a reference that branches on its dtype, one that maps an overflow to
    f32's largest value, and an f16 input compared with an f32 scalar (torch rounds the scalar to
    f16, f64 does not): their f64 results differ by more than rounding, and wrong answers there
    fail."""
    relu = get_task("easy/relu")
    x = torch.tensor([100.0, 1.0, -2.0])
    for reference, wrong in [
        ("def reference(x):\n    return x * 2 if x.dtype == torch.float32 else x * 5\n", x * 7),
        ("def reference(x):\n    return torch.nan_to_num(torch.exp(x))\n",
         torch.tensor([0.0, float(torch.exp(torch.tensor(1.0))), float(torch.exp(torch.tensor(-2.0)))])),
    ]:
        task = relu.model_copy(update={"reference": reference})
        expected = run_reference(task, {"x": x})
        got = {name: wrong for name in expected}
        assert [d.code for d in compare_outputs(task, got, expected, {"x": x}, {"N": 3})] == ["mismatch"], reference
    threshold = torch.tensor(0.3, dtype=torch.float32).item()
    x16 = torch.tensor([0.3, 0.5, 0.1], dtype=torch.float16)
    want = torch.where(x16 > threshold, x16, torch.full_like(x16, -1.0))
    wide = torch.where(x16.double() > threshold, x16.double(), torch.full_like(x16.double(), -1.0))
    at_least = torch.where(x16 >= threshold, x16, torch.full_like(x16, -1.0))  # '>=' for '>'
    assert not compare_tensors(at_least, want, "f16", wide=wide).ok
