"""The comparison a case's outputs go through (kernelgen.task.verify.compare_outputs): each way a
result can be wrong, or game the check, gets its own diagnostic, path and message."""

from __future__ import annotations

import math

import pytest
import torch

from kernelgen.host.plan import TORCH_DTYPES, torch_dtype
from kernelgen.task.spec import load_tasks
from kernelgen.task.verify import compare_outputs

TASKS = {t.id: t for t in load_tasks()}


def check(task_id: str, actual: dict, expected: dict, inputs: dict) -> list:
    return compare_outputs(TASKS[task_id], actual, expected, inputs, {"N": 4})


def test_a_matching_result_has_no_diagnostics() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    y = torch.relu(x)
    assert check("relu", {"y": y + 1e-7}, {"y": y}, {"x": x}) == []


def test_a_mismatch_names_the_output_the_count_and_the_first_element() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    wrong = torch.tensor([0.0, 0.5, 2.5, 0.0])
    (found,) = check("relu", {"y": wrong}, {"y": torch.relu(x)}, {"x": x})
    assert (found.path, found.code) == ("/outputs/0", "mismatch")
    assert "1 of 4 elements of y" in found.message and "first at [2]: got 2.5, expected 2" in found.message
    assert "max abs error 0.5" in found.message and "(N=4)" in found.message


def test_an_element_no_store_wrote_is_unwritten_not_a_mismatch() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    poisoned = torch.tensor([0.0, 0.5, math.nan, 0.0])
    written = {"y": torch.tensor([True, True, False, True])}
    (found,) = compare_outputs(TASKS["relu"], {"y": poisoned}, {"y": torch.relu(x)}, {"x": x}, {"N": 4}, written)
    assert found.code == "unwritten" and "1 of 4 elements of y were never written (first at [2])" in found.message


def test_a_nan_the_kernel_wrote_is_a_mismatch_not_unwritten() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    nan_written = torch.tensor([0.0, 0.5, math.nan, 0.0])
    written = {"y": torch.ones(4, dtype=torch.bool)}
    (found,) = compare_outputs(TASKS["relu"], {"y": nan_written}, {"y": torch.relu(x)}, {"x": x}, {"N": 4}, written)
    assert found.code == "mismatch" and "first at [2]: got nan, expected 2" in found.message


def test_an_unwritten_bool_is_found_even_where_the_poison_is_the_right_value() -> None:
    """A bool output's poison is True: an unwritten True element equals the reference."""
    want = torch.tensor([True, False, True, False])
    written = {"out": torch.tensor([False, True, False, True])}
    inputs = {name: want.clone() for name in "abc"}
    (found,) = compare_outputs(TASKS["majority3"], {"out": want.clone()}, {"out": want}, inputs, {"N": 4}, written)
    assert found.code == "unwritten" and "2 of 4 elements of out were never written (first at [0])" in found.message


def test_zeros_where_the_reference_is_not_are_trivial() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    codes = [d.code for d in check("relu", {"y": torch.zeros(4)}, {"y": torch.relu(x)}, {"x": x})]
    assert codes == ["mismatch", "trivial_zeros"]


def test_a_copy_of_an_input_is_named() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    codes = [d.code for d in check("relu", {"y": x.clone()}, {"y": torch.relu(x)}, {"x": x})]
    assert codes == ["mismatch", "copies_input"]


def test_the_costly_copy_evidence_is_weighed_only_for_an_output_equal_to_an_input(monkeypatch) -> None:
    """_telling sorts the whole input (torch.unique: 44 s for 1 GB on two CPU threads, which
    timed a correct group_norm out on the H200): an output unlike every input never needs it."""
    import kernelgen.task.verify as verify

    def refuse(value):
        raise AssertionError("_telling ran for an output that equals no input")

    monkeypatch.setattr(verify, "_telling", refuse)
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    assert check("relu", {"y": torch.relu(x)}, {"y": torch.relu(x)}, {"x": x}) == []


def test_one_element_equal_to_the_input_is_no_evidence_of_copying() -> None:
    """At N=1 a wrong formula's output can equal the input by chance; so can an input of a few
    repeated values. Only the mismatch is reported then."""
    x = torch.tensor([-2.0])
    codes = [d.code for d in compare_outputs(TASKS["relu"], {"y": x.clone()}, {"y": torch.relu(x)}, {"x": x},
                                             {"N": 1})]
    assert codes == ["mismatch"]
    repeated = torch.tensor([-1.0, 2.0, -1.0, 2.0])
    codes = [d.code for d in check("relu", {"y": repeated.clone()}, {"y": torch.relu(repeated)}, {"x": repeated})]
    assert codes == ["mismatch"]


def test_shape_and_dtype_are_checked_before_values() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0, -3.0])
    (shape,) = check("relu", {"y": torch.relu(x)[:3]}, {"y": torch.relu(x)}, {"x": x})
    (dtype,) = check("relu", {"y": torch.relu(x).double()}, {"y": torch.relu(x)}, {"x": x})
    assert (shape.code, dtype.code) == ("wrong_shape", "wrong_dtype")


def test_integer_outputs_compare_exactly_even_past_two_to_the_53() -> None:
    """i64 indices are compared as integers: through float64, 2**53 + 1 would equal 2**53."""
    x = torch.zeros(4, 3)
    big = torch.full((4,), 2**53, dtype=torch.int64)
    (found,) = check("row_argmax", {"out": big + 1}, {"out": big}, {"x": x})
    assert found.code == "mismatch" and "4 of 4 elements" in found.message
    assert "max abs error 1;" in found.message and f"got {2**53 + 1}, expected {2**53}" in found.message


def test_domain_bounds_that_are_host_expressions_of_the_sizes() -> None:
    """An index table drawn for a cache of P pages points inside it at every P; offsets are
    nondecreasing ends of ragged groups whose last one is the row count."""
    from kernelgen.lang import nodes as L
    from kernelgen.task.ranges import Domain
    from kernelgen.task.verify import draw_tensor

    pages = Domain.model_validate({"kind": "integers", "low": 0, "high": {"op": "sub", "lhs": "P", "rhs": 1}})
    table = L.Input(name="table", dtype="i32", shape=["B", 8])
    for p in (1, 3, 50):
        drawn = draw_tensor(table, (64, 8), pages, torch.Generator().manual_seed(p), {"P": p})
        assert drawn.dtype == torch.int32 and int(drawn.min()) >= 0 and int(drawn.max()) == p - 1
    ends = Domain.model_validate({"kind": "ends", "low": 0, "high": "M"})
    drawn = draw_tensor(L.Input(name="offs", dtype="i32", shape=["G"]), (7,), ends, torch.Generator(), {"M": 40})
    assert int(drawn[-1]) == 40 and bool((drawn[1:] >= drawn[:-1]).all()) and int(drawn[0]) >= 0
    assert pages.describe() == 'integers in [0, {"op": "sub", "lhs": "P", "rhs": 1}]'


@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES))
def test_guard_bands_are_intact_until_written_in_every_dtype(dtype: str) -> None:
    """The band is compared bit for bit with its fill as the dtype holds it: f16 holds -7777 as
    -7776, so a comparison with the Python number (the GPU verdict of every f16 kernel on the
    H200 once) calls an untouched band written."""
    from kernelgen.task.verify import guard_fill, guarded, guards_intact

    values = torch.arange(6).reshape(2, 3).to(torch_dtype(dtype))
    buffer, view = guarded(values, guard_fill(values.dtype))
    assert torch.equal(view.view(torch.uint8), values.view(torch.uint8))
    assert guards_intact("x", buffer) == []
    for index in (0, -1):
        written = buffer.clone()
        written[index] = values[0, 0]  # 0, which no fill is
        (found,) = guards_intact("x", written)
        assert found.code == "out_of_bounds_write" and "outside x" in found.message


@pytest.mark.parametrize("chunk", [1, 7, 1 << 24])
def test_a_comparison_in_chunks_counts_and_places_mismatches_as_a_whole_one(monkeypatch, chunk: int) -> None:
    """Large outputs compare a chunk at a time (bounded temporaries on the GPU); the count,
    the first mismatch's index and the largest error are those of the whole tensor."""
    from kernelgen.task import compare

    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", chunk)
    want = torch.arange(60.0).reshape(3, 4, 5)
    got = want.clone()
    got[2, 1, 3] += 1
    got[2, 3, 4] = float("nan")
    found = compare.compare_tensors(got, want, "f32")
    assert (found.mismatches, found.first_mismatch, found.max_abs_error) == (2, (2, 1, 3), math.inf)
    assert compare.compare_tensors(want.long(), want.long(), "i64").ok
    scalar = compare.compare_tensors(torch.tensor(1.0), torch.tensor(2.0), "f32")
    assert (scalar.mismatches, scalar.first_mismatch, scalar.max_abs_error) == (1, (), 1.0)


def test_an_overflow_within_tolerance_of_the_largest_value_is_rounding_not_a_mismatch() -> None:
    """A cumprod that reaches 3.38e38 in f32 may round past the largest finite value on its way
    (f32's rtol 1e-4 around 3.4027e38 reaches past 3.40282e38): inf of the same sign is within
    tolerance there, and only there, where the exact (f64) result is near that largest value too;
    inf of the other sign, or where the value is far below the largest, is a mismatch. Two results
    of one kernel (``overflow``), neither exact, take it wherever one is near the largest value."""
    from kernelgen.task.compare import compare_tensors

    near = torch.tensor([3.4027e38, -3.4027e38, 1e30], dtype=torch.float32)
    exact = near.double()
    for overflowed, rounded in ((torch.tensor([math.inf, -math.inf, 1e30]), near),
                                (near, torch.tensor([math.inf, -math.inf, 1e30]))):
        assert compare_tensors(overflowed, rounded, "f32", wide=exact).ok
        assert compare_tensors(overflowed, rounded, "f32", overflow=True).ok
        assert compare_tensors(overflowed, rounded, "f32").mismatches == 2  # no exact result: no allowance
    assert compare_tensors(torch.tensor([-math.inf, -math.inf, 1e30]), near, "f32", wide=exact).mismatches == 1
    assert compare_tensors(torch.tensor([math.inf, -math.inf, math.inf]), near, "f32", wide=exact).mismatches == 1
    assert compare_tensors(torch.tensor([math.inf]), torch.tensor([3.0e38]), "f32", overflow=True).mismatches == 1


def test_an_exact_infinity_takes_no_finite_stand_in() -> None:
    """1/0 and the max of a row of -inf are infinities exactly: a kernel that stores f32's largest
    value there (a saturating reciprocal, a running max started at -FLT_MAX) is wrong, though that
    value's tolerance reaches past it. The f64 result is not finite there (NaN, as WideReference
    gives it), or lies far past the largest value (exp(100)); in steps, inf is not a tie's neighbour."""
    from kernelgen.task.compare import Tolerance, compare_tensors

    largest = torch.finfo(torch.float32).max
    reference = torch.tensor([math.inf, -math.inf, math.inf])
    saturated = torch.tensor([largest, -largest, largest])
    exact = torch.tensor([math.nan, math.nan, math.exp(100)], dtype=torch.float64)
    assert compare_tensors(saturated, reference, "f32", wide=exact).mismatches == 3
    assert compare_tensors(saturated, reference, "f32").mismatches == 3
    # nor any value where the reference overflowed (its error there is infinite: no floor)
    assert not compare_tensors(torch.tensor([0.0]), torch.tensor([math.inf]), "f32", wide=exact[2:]).ok
    f16 = torch.tensor([math.inf, -math.inf, 1.0]).half()
    judged = compare_tensors(torch.tensor([65504.0, -65504.0, 1.0]).half(), f16, "f16", Tolerance(1e-2, 1e-5, steps=True))
    assert judged.mismatches == 2 and judged.one_step == 0


def test_an_extreme_draw_with_an_order_is_not_taken_for_an_overflow_for_its_own_nans() -> None:
    """The draw scaled far up (homogeneous.UP_SCALES) is extreme: relu's and row_max's NaNs and infinities are the
    extreme domain's, not the scaling's; compared with an ordinary draw it was left unjudged."""
    from kernelgen.task.draws import up_draws
    from kernelgen.task.spec import get_task
    from kernelgen.task.verify import make_inputs, order_overflows, run_reference

    for name in ("easy/relu", "med/row_max"):
        task = get_task(name)
        (draw,) = up_draws(task, 0)
        expected = run_reference(task, make_inputs(task, draw.sizes, 0, extreme=True, order=draw.order))
        assert not order_overflows(task, draw.sizes, 0, expected, draw.order, draw.extreme), name
        assert order_overflows(task, draw.sizes, 0, expected, draw.order), name  # as it was judged before
