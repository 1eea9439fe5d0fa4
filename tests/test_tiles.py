"""Tiles: ``tile_load`` and ``tile_store`` read and write a block of a tensor view, lanes outside
the view's shape reading 0 and not written (:mod:`kernelgen.check.tile_access`). Every stage has them:
checker (``tile_view``, ``tile_block``), interpreter, lowering (a TMA copy where the strides are
provably 16-byte multiples, the pointer form otherwise), emitter, prompt."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, let, o, triton_interpreter  # noqa: F401

from kernelgen.check.checker import check
from kernelgen.cli import main as cli_main
from kernelgen.gpu.compile import compile_kernel
from kernelgen.emit.module import emit_triton
from kernelgen.errors import InterpreterError, SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lower.lowering import lower
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.model.prompt import system_prompt

PID0 = o("mul", lhs=o("program_id", axis=0), rhs="BM")
PID1 = o("mul", lhs=o("program_id", axis=1), rhs="BN")


def shifted(dtype: str = "f16", shift: int = 1) -> dict:
    """y[i, j] = 2 * x[i - shift, j] (0 where i - shift < 0): the load's offsets start
    ``shift`` rows before the program's block, so the first block reads before the tensor."""
    def view() -> dict:
        return {"shape": ["M", "N"], "strides": ["N", 1]}

    return {
        "name": "shifted", "inputs": [{"name": "x", "dtype": dtype, "shape": ["M", "N"]}],
        "outputs": [{"name": "y", "dtype": dtype, "shape": ["M", "N"]}],
        "params": [{"name": p} for p in ("x", "y", "M", "N")],
        "meta": [{"name": "BM", "value": 16}, {"name": "BN", "value": 32}],
        "grid": [o("cdiv", lhs="M", rhs="BM"), o("cdiv", lhs="N", rhs="BN")],
        "body": [
            let("t", o("tile_load", base="x", **view(), block=["BM", "BN"],
                       offsets=[o("sub", lhs=PID0, rhs=shift), PID1])),
            o("tile_store", base="y", **view(), offsets=[PID0, PID1], value=o("mul", lhs="t", rhs=2.0))]}


def batched() -> dict:
    """c[b] = x[b] + 1 over [B, M, N] through 3-D tiles of [1, BM, BN]."""
    view = {"shape": ["B", "M", "N"], "strides": [o("mul", lhs="M", rhs="N"), "N", 1]}
    offsets = [o("program_id", axis=2), PID0, PID1]
    return {
        "name": "batched", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", "M", "N"]}],
        "outputs": [{"name": "c", "dtype": "f32", "shape": ["B", "M", "N"]}],
        "params": [{"name": p} for p in ("x", "c", "B", "M", "N")],
        "meta": [{"name": "BM", "value": 8}, {"name": "BN", "value": 16}],
        "grid": [o("cdiv", lhs="M", rhs="BM"), o("cdiv", lhs="N", rhs="BN"), "B"],
        "body": [o("tile_store", base="c", **view, offsets=offsets,
                   value=o("add", lhs=o("tile_load", base="x", **view, block=[1, "BM", "BN"], offsets=offsets),
                           rhs=1.0))]}


def expected_shift(x: torch.Tensor, shift: int) -> torch.Tensor:
    y = torch.zeros_like(x)
    y[shift:] = x[:x.shape[0] - shift] * 2
    return y


@pytest.mark.parametrize("m, n", [(1, 1), (5, 7), (33, 130), (64, 64)])
def test_lanes_outside_the_view_read_zero_and_are_not_written(m: int, n: int) -> None:
    x = torch.randn(m, n).half()
    out = interpret(check(kernel_from_obj(shifted())), {"x": x})["y"]
    assert torch.equal(out, expected_shift(x, 1))


def test_a_3d_view_takes_one_batch_per_program() -> None:
    x = torch.randn(3, 9, 20)
    assert torch.equal(interpret(check(kernel_from_obj(batched())), {"x": x})["c"], x + 1)


def _broken(change) -> dict:
    kernel = shifted()
    change(kernel)
    return kernel


@pytest.mark.parametrize("change, path, code", [
    (lambda k: k["body"][0]["value"]["strides"].__setitem__(1, 2), "/body/0/value/strides/1", "tile_view"),
    (lambda k: k["body"][0]["value"]["shape"].__setitem__(0, "t"), "/body/0/value/shape/0", "tile_view"),
    (lambda k: k["body"][0]["value"].__setitem__("base", "M"), "/body/0/value/base", "tile_view"),
    (lambda k: k["body"][0]["value"]["offsets"].pop(), "/body/0/value/offsets", "tile_view"),
    (lambda k: k["body"][0]["value"].__setitem__("block", [512, "BN"]), "/body/0/value/block/0", "tile_block"),
    (lambda k: k["body"][0]["value"].__setitem__("block", ["BM", 4]), "/body/0/value/block/1", "tile_block"),
    (lambda k: k["body"][0]["value"]["offsets"].__setitem__(0, 1.5), "/body/0/value/offsets/0", "needs_int"),
    (lambda k: k["body"][0]["value"]["offsets"].__setitem__(0, o("arange", size=4)), "/body/0/value/offsets/0",
     "needs_int"),
    (lambda k: k["body"][1].__setitem__("base", "x"), "/body/1/base", "store_to_input"),
    (lambda k: k["body"][1].__setitem__("value", o("cast", x="t", dtype="f32")), "/body/1/value", "dtype_mismatch"),
    (lambda k: k["body"][1].__setitem__("value", o("reshape", x="t", shape=[512])), "/body/1/value",
     "shape_mismatch"),
])
def test_the_checker_says_what_and_where(change, path: str, code: str) -> None:
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(_broken(change)))
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == (code, path), diagnostic


def test_bool_tensors_are_not_tiles() -> None:
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(shifted(dtype="bool")))
    assert [(d.code, d.path) for d in raised.value.diagnostics][0] == ("tile_block", "/body/0/value/base")


def test_a_view_larger_than_its_tensor_is_a_fault_at_the_tile() -> None:
    """A lying shape: the view says 2M rows of a tensor of M; its lanes past the tensor are
    reported at the tile's own path, as a masked load's would be."""
    kernel = shifted(shift=0)
    kernel["body"][0]["value"]["shape"][0] = o("mul", lhs="M", rhs=2)
    kernel["body"][0]["value"]["offsets"][0] = o("add", lhs=PID0, rhs="M")
    with pytest.raises(InterpreterError) as raised:
        interpret(check(kernel_from_obj(kernel)), {"x": torch.randn(20, 40).half()})
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == ("out_of_bounds", "/body/0/value")


def test_tiles_that_overlap_across_programs_race() -> None:
    """The careless tiling: each program stores 16 rows but steps by 8, so neighbours write
    the same rows; the race is named at the tile_store."""
    kernel = shifted(shift=0)
    kernel["body"][1]["offsets"][0] = o("mul", lhs=o("program_id", axis=0), rhs=8)
    with pytest.raises(InterpreterError) as raised:
        interpret(check(kernel_from_obj(kernel)), {"x": torch.randn(40, 32).half()})
    [diagnostic] = raised.value.diagnostics
    assert (diagnostic.code, diagnostic.path) == ("race", "/body/1"), diagnostic


def test_strides_proven_16_byte_multiples_lower_to_descriptors() -> None:
    checked = check(kernel_from_obj(shifted()))
    aligned, unknown = lower(checked, ("N",)).ttir, lower(checked, ()).ttir
    assert "tt.make_tensor_descriptor" in aligned and "tt.descriptor_load" in aligned and "tt.descriptor_store" in aligned
    assert "descriptor" not in unknown and "tt.load" in unknown
    batched_ttir = lower(check(kernel_from_obj(batched())), ("N",)).ttir  # M * N: a multiple of 16 too
    assert batched_ttir.count("tt.make_tensor_descriptor") == 2


def test_literal_strides_are_judged_by_their_bytes() -> None:
    """A row of 4 f16 (8 bytes) is not a TMA stride; a row of 8 is."""
    for row, tma in ((4, False), (8, True)):
        kernel = shifted()
        for node in (kernel["body"][0]["value"], kernel["body"][1]):
            node["strides"][0], node["shape"][1] = row, row
        assert ("tt.descriptor_load" in lower(check(kernel_from_obj(kernel))).ttir) is tma


def test_an_innermost_extent_not_proven_a_16_byte_multiple_is_never_a_tma_copy() -> None:
    """On an H100 a TMA store wrote the innermost dimension up to its next 16-byte boundary (N = 5
    f32: 3 elements past it; tools/redteam_round32/tma_guard.py): rows of 16 f16 (32 bytes) whose
    used extent is a size N take the pointer form unless N is found divisible by 16."""
    kernel = shifted()
    for node in (kernel["body"][0]["value"], kernel["body"][1]):
        node["strides"][0] = 16
    checked = check(kernel_from_obj(kernel))
    assert "descriptor" not in lower(checked, ()).ttir
    assert "tt.descriptor_store" in lower(checked, ("N",)).ttir


def test_a_stride_that_may_be_negative_or_zero_is_never_a_tma_stride() -> None:
    """TMA faults on a stride of 0 or below: a scalar input (which a call may pass as -32, also
    divisible by 16) and a literal 0 take the pointer form, a size the TMA copy."""
    kernel = shifted()
    kernel["inputs"].append({"name": "pitch", "dtype": "i32"})
    kernel["params"].append({"name": "pitch"})
    kernel["body"][0]["value"]["strides"][0] = "pitch"
    checked = check(kernel_from_obj(kernel))
    assert "tt.descriptor_load" not in lower(checked, ("N", "pitch")).ttir
    assert "tt.descriptor_store" in lower(checked, ("N", "pitch")).ttir  # y's view: the size N
    kernel["body"][0]["value"]["strides"][0] = 0
    assert "tt.descriptor_load" not in lower(check(kernel_from_obj(kernel)), ("N",)).ttir


def test_sm_90_copies_with_tma_and_sm_80_without() -> None:
    checked = check(kernel_from_obj(shifted()))
    hopper = compile_kernel(checked, "sm_90", divisible_by_16=("N",), in_process=True, cache=False)
    assert "cp.async.bulk.tensor" in hopper.ptx and hopper.metadata["global_scratch_size"] > 0
    ampere = compile_kernel(checked, "sm_80", divisible_by_16=("N",), in_process=True, cache=False)
    assert "cp.async.bulk.tensor" not in ampere.ptx


@pytest.mark.parametrize("kernel", [shifted(), batched()], ids=["shifted", "batched"])
def test_the_emitter_and_tritons_interpreter_agree(kernel: dict,
                                                   triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    checked = check(kernel_from_obj(kernel))
    assert "tl.load" in emit_triton(checked)
    args = {"x": torch.randn(37, 70).half()} if kernel["name"] == "shifted" else {"x": torch.randn(2, 9, 20)}
    check_in_triton_interpreter(triton_interpreter, checked, args)


def test_the_prompt_tells_the_model() -> None:
    prompt = system_prompt()
    assert "tile_load" in prompt and "tile_store" in prompt and "TMA" in prompt


@pytest.mark.gpu
@pytest.mark.parametrize("kernel, sizes", [
    (shifted(), ["M=1000", "N=4096"]),  # N % 16 == 0: TMA
    (shifted(), ["M=1000", "N=4099"]),  # the pointer form
    (batched(), ["B=3", "M=100", "N=64"]),
    (copy.deepcopy(shifted(shift=3)), ["M=17", "N=128"]),
], ids=["tma", "pointers", "batched", "shift3"])
def test_the_gpu_matches_the_interpreter(kernel: dict, sizes: list[str], tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(kernel))
    status = cli_main(["run", str(path)] + [a for s in sizes for a in ("--size", s)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert all(line.split(": ")[1] == "ok" for line in printed.strip().splitlines())
