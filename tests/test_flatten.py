"""``flatten`` on a ``for``: Triton pipelines the loop and the fors directly in its body as one
loop (``tl.range(flatten=True)``, its fuse-nested-loops pass), so a persistent kernel loads its
next tile's first K blocks during this tile's epilogue. Speed only: the checker, interpreter,
lowering (``tt.flatten``), emitter and prompt have it; the meaning of the loop does not change."""

from __future__ import annotations

import json
import re

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, let, o, triton_interpreter  # noqa: F401

from kernelgen.check.checker import check
from kernelgen.cli import main as cli_main
from kernelgen.gpu.compile import compile_kernel
from kernelgen.emit.module import emit_triton
from kernelgen.errors import SemanticError
from kernelgen.interp.execute import interpret
from kernelgen.lower.lowering import lower
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.model.prompt import system_prompt


def persistent_matmul(flatten: bool = True, programs: int = 3, out: str = "f32") -> dict:
    """c = a @ b (f16 in, f32 or f16 out) by ``programs`` programs that walk the [BM, BN] tiles,
    each tile's K loop inside the walk."""
    tiles_n = o("cdiv", lhs="N", rhs="BN")
    rows = o("add", lhs=o("mul", lhs="tile_m", rhs="BM"), rhs=o("arange", size="BM"))
    cols = o("add", lhs=o("mul", lhs="tile_n", rhs="BN"), rhs=o("arange", size="BN"))
    ks = o("add", lhs="k0", rhs=o("arange", size="BK"))
    a = o("load", ptr=o("add", lhs="a", rhs=o("add", lhs=o("mul", lhs=o("expand_dims", x="rows", axis=1), rhs="K"),
                                               rhs=o("expand_dims", x="ks", axis=0))),
          mask=o("and", lhs=o("expand_dims", x=o("lt", lhs="rows", rhs="M"), axis=1),
                 rhs=o("expand_dims", x=o("lt", lhs="ks", rhs="K"), axis=0)))
    b = o("load", ptr=o("add", lhs="b", rhs=o("add", lhs=o("mul", lhs=o("expand_dims", x="ks", axis=1), rhs="N"),
                                               rhs=o("expand_dims", x="cols", axis=0))),
          mask=o("and", lhs=o("expand_dims", x=o("lt", lhs="ks", rhs="K"), axis=1),
                 rhs=o("expand_dims", x=o("lt", lhs="cols", rhs="N"), axis=0)))
    k_loop = o("for", var="k0", stop="K", step="BK", num_stages=3,
               carry=[{"name": "acc", "init": o("full", shape=["BM", "BN"], value=0.0, dtype="f32"),
                       "next": o("dot", lhs="a_tile", rhs="b_tile", acc="acc")}],
               body=[let("ks", ks), let("a_tile", a), let("b_tile", b)])
    store = o("store", ptr=o("add", lhs="c", rhs=o("add", lhs=o("mul", lhs=o("expand_dims", x="rows", axis=1), rhs="N"),
                                                  rhs=o("expand_dims", x="cols", axis=0))),
              value="acc" if out == "f32" else o("cast", x="acc", dtype=out), mask=o("and", lhs=o("expand_dims", x=o("lt", lhs="rows", rhs="M"), axis=1),
                                  rhs=o("expand_dims", x=o("lt", lhs="cols", rhs="N"), axis=0)))
    walk = o("for", var="tile", start=o("program_id"), stop=o("mul", lhs=o("cdiv", lhs="M", rhs="BM"), rhs=tiles_n),
             step="PROGRAMS", flatten=flatten,
             body=[let("tile_m", o("idiv", lhs="tile", rhs=tiles_n)), let("tile_n", o("rem", lhs="tile", rhs=tiles_n)),
                   let("rows", rows), let("cols", cols), k_loop, store])
    return {
        "name": "persistent_matmul",
        "inputs": [{"name": "a", "dtype": "f16", "shape": ["M", "K"]}, {"name": "b", "dtype": "f16", "shape": ["K", "N"]}],
        "outputs": [{"name": "c", "dtype": out, "shape": ["M", "N"]}],
        "params": [{"name": p} for p in ("a", "b", "c", "M", "N", "K")],
        "meta": [{"name": "BM", "value": 16}, {"name": "BN", "value": 32}, {"name": "BK", "value": 16},
                 {"name": "PROGRAMS", "value": programs}],
        "grid": ["PROGRAMS"],
        "body": [walk]}


def test_a_flattened_walk_computes_what_the_plain_one_does() -> None:
    a, b = torch.randn(37, 50).half(), torch.randn(50, 70).half()
    for flatten in (True, False):
        out = interpret(check(kernel_from_obj(persistent_matmul(flatten))), {"a": a, "b": b})["c"]
        torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-4, atol=1e-4)


def _no_inner_loop(walk: dict) -> None:
    walk["body"] = walk["body"][:4]  # the tile's coordinates only: no K loop, no store


def _loop_in_an_if(walk: dict) -> None:
    walk["body"][4:] = [o("if", cond=o("gt", lhs="K", rhs=0), then=walk["body"][4:])]


def _two_inner_loops(walk: dict) -> None:
    walk["body"].insert(4, o("for", var="j", stop=2, body=[]))


def _three_levels(walk: dict) -> None:
    walk["body"][4]["body"].append(o("for", var="j", stop=2, body=[]))


def _inside_another_for(kernel: dict) -> None:
    kernel["body"] = [o("for", var="rep", stop=1, body=kernel["body"])]


def _bound_read_from_the_walk(walk: dict) -> None:
    walk["body"][4]["stop"] = o("minimum", lhs="K", rhs=o("mul", lhs=o("add", lhs="tile_m", rhs=1), rhs=1000))


@pytest.mark.parametrize("change, path", [
    (lambda k: _no_inner_loop(k["body"][0]), "/body/0/flatten"),
    (lambda k: _loop_in_an_if(k["body"][0]), "/body/0/flatten"),  # not directly in the body
    (lambda k: _two_inner_loops(k["body"][0]), "/body/0/flatten"),
    (lambda k: _three_levels(k["body"][0]), "/body/0/flatten"),
    (_inside_another_for, "/body/0/body/0/flatten"),
    (lambda k: _bound_read_from_the_walk(k["body"][0]), "/body/0/flatten"),  # Triton compiled it unfused
], ids=["no-inner-loop", "loop-in-an-if", "two-inner-loops", "three-levels", "inside-another-for", "varying-bound"])
def test_flatten_takes_the_outer_loop_of_a_two_loop_nest(change, path: str) -> None:
    """The one nest Triton 3.6's fuse-nested-loops pass fuses; any other it leaves as it is,
    silently, so the checker says so at the flatten."""
    kernel = persistent_matmul()
    change(kernel)
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(kernel))
    assert [(d.code, d.path) for d in raised.value.diagnostics] == [("flatten_nest", path)]


def test_the_lowering_marks_the_loop_and_triton_fuses_the_nest() -> None:
    checked = check(kernel_from_obj(persistent_matmul()))
    ttir = lower(checked, ("K", "N")).ttir
    assert ttir.count("tt.flatten") == 1
    assert "tt.flatten" not in lower(check(kernel_from_obj(persistent_matmul(flatten=False))), ("K", "N")).ttir
    k_loop = re.compile(r"scf\.for .* step %c16_i32")  # the K loop, BK = 16 at a time
    for flatten in (True, False):
        compiled = compile_kernel(check(kernel_from_obj(persistent_matmul(flatten))), "sm_90",
                                  divisible_by_16=("K", "N"), in_process=True, cache=False)
        # Fused: one loop over every (tile, K block), a step of 1, in place of the nest.
        assert bool(k_loop.search(compiled.ttgir)) is not flatten


def two_trip_scalar_nest() -> dict:
    """A persistent copy whose flattened walk holds a 2-trip loop that carries a scalar computed
    from constants and touches no memory: Triton 3.6's fuse-nested-loops pass fails on it."""
    inner = o("for", var="it", stop=2, carry=[{"name": "r", "init": 0.5, "next": o("mul", lhs="r", rhs=1.5)}], body=[])
    offs = o("add", lhs=o("mul", lhs="t", rhs=16), rhs=o("arange", size=16))
    walk = o("for", var="t", start=o("program_id"), stop="T", step=o("num_programs"), flatten=True,
             body=[inner, let("offs", offs),
                   o("store", ptr=o("add", lhs="y", rhs="offs"),
                     value=o("mul", lhs=o("load", ptr=o("add", lhs="x", rhs="offs")), rhs="r"))])
    return {"name": "two_trip", "inputs": [{"name": "x", "dtype": "f32", "shape": ["T", 16]}],
            "outputs": [{"name": "y", "dtype": "f32", "shape": ["T", 16]}],
            "params": [{"name": "x"}, {"name": "y"}, {"name": "T"}], "grid": [o("minimum", lhs="T", rhs=o("num_sms"))],
            "body": [walk]}


def test_a_flatten_triton_cannot_compile_is_dropped_and_recorded() -> None:
    """flatten is a speed hint: where Triton's pass fails on the nest, the kernel compiles without
    it (the same loops) and the compiled kernel says so; the pipeline records it in the result."""
    from kernelgen.gpu.compile import has_flatten, without_flatten

    checked = check(kernel_from_obj(two_trip_scalar_nest()))
    plain = without_flatten(checked)
    assert has_flatten(checked) and not has_flatten(plain) and plain.types is checked.types
    compiled = compile_kernel(checked, "sm_90", cache=False)
    assert "TritonGPUFuseNestedLoops" in compiled.metadata["flatten_dropped"]
    assert "tt.flatten" not in compiled.ttir
    assert "flatten_dropped" not in compile_kernel(check(kernel_from_obj(persistent_matmul())), "sm_90",
                                                   divisible_by_16=("K", "N"), cache=False).metadata


def test_the_emitter_writes_tl_range_flatten(triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    checked = check(kernel_from_obj(persistent_matmul()))
    assert "flatten=True" in emit_triton(checked)
    check_in_triton_interpreter(triton_interpreter, checked, {"a": torch.randn(37, 50).half(), "b": torch.randn(50, 70).half()},
                                {"c": (1e-3, 1e-3)})


def test_the_prompt_tells_the_model() -> None:
    prompt = system_prompt()
    assert "flatten" in prompt and "flatten_nest" in prompt


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [["M=1000", "N=512", "K=768"], ["M=33", "N=70", "K=50"]], ids=["aligned", "ragged"])
@pytest.mark.parametrize("flatten", [True, False], ids=["flat", "nested"])
def test_the_gpu_matches_the_interpreter(sizes: list[str], flatten: bool, tmp_path, monkeypatch, capsys) -> None:
    """f16 out: an f32 sum of 768 f16 products cancels below f32's default tolerance in the
    order the GPU sums them, nested or flat."""
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(persistent_matmul(flatten, programs=132, out="f16")))
    status = cli_main(["run", str(path)] + [a for s in sizes for a in ("--size", s)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert all(line.split(": ")[1] == "ok" for line in printed.strip().splitlines())
