"""``unroll`` on a ``for``: each trip of the loop runs that many copies of its body (Triton's
``tl.range(loop_unroll_factor=)``, its loop-unroll pass; the trips left over run one by one after),
so the loads of several trips can be in flight together, as Inductor's fully unrolled loops over
static sizes have them. Speed only: the checker, interpreter, lowering (``tt.loop_unroll_factor``),
emitter and prompt have it; the meaning of the loop does not change."""

from __future__ import annotations

import json

import pytest
import torch
from test_emit import TritonInterpreter, check_in_triton_interpreter, let, o, triton_interpreter  # noqa: F401
from test_flatten import persistent_matmul

from kernelgen.check.checker import check
from kernelgen.cli import main as cli_main
from kernelgen.emit.module import emit_triton
from kernelgen.errors import KernelgenError, SemanticError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.lower.lowering import lower
from kernelgen.model.prompt import system_prompt


def row_sums(unroll: int | None = 4, step: object = "B") -> dict:
    """out[m] = sum of x[m, :], one row per program, B columns a trip; the loop unrolled."""
    cols = o("add", lhs="k", rhs=o("arange", size="B"))
    chunk = o("load", ptr=o("add", lhs="x", rhs=o("add", lhs=o("mul", lhs=o("program_id"), rhs="N"), rhs="cols")),
              mask=o("lt", lhs="cols", rhs="N"), cache="evict_first")
    loop = o("for", var="k", stop="N", step=step, carry=[{"name": "acc", "init": o("full", shape=["B"], value=0.0, dtype="f32"),
                                                        "next": o("add", lhs="acc", rhs="chunk")}],
             body=[let("cols", cols), let("chunk", chunk)], **({} if unroll is None else {"unroll": unroll}))
    return {"name": "row_sums", "inputs": [{"name": "x", "dtype": "f32", "shape": ["M", "N"]}],
            "outputs": [{"name": "out", "dtype": "f32", "shape": ["M"]}],
            "params": [{"name": "x"}, {"name": "out"}, {"name": "N"}], "meta": [{"name": "B", "value": 16}],
            "grid": ["M"],
            "body": [loop, o("store", ptr=o("add", lhs="out", rhs=o("program_id")), value=o("sum", x="acc", axis=0))]}


@pytest.mark.parametrize("n", [1, 16, 40, 64, 80, 150])  # 1, 1, 3, 4, 5 and 10 trips of 16 columns
def test_an_unrolled_loop_computes_what_the_plain_one_does(n: int) -> None:
    x = torch.randn(3, n)
    for unroll in (None, 1, 2, 4, 8, 16):
        out = interpret(check(kernel_from_obj(row_sums(unroll))), {"x": x})["out"]
        torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("value, code", [(3, "bad_value"), (0, "bad_value"), (32, "bad_value"), (True, "bad_type"),
                                         (4.0, "bad_type"), ("4", "bad_type")])
def test_unroll_is_one_or_a_power_of_two_up_to_16(value: object, code: str) -> None:
    kernel = row_sums()
    kernel["body"][0]["unroll"] = value
    with pytest.raises(KernelgenError) as raised:
        check(kernel_from_obj(kernel))
    assert [(d.code, d.path) for d in raised.value.diagnostics] == [(code, "/body/0/unroll")]


@pytest.mark.parametrize("inner", [False, True], ids=["outer", "inner"])
def test_a_flattened_nest_is_not_unrolled(inner: bool) -> None:
    """Triton unrolls before it fuses: an unrolled loop of a flattened nest leaves it no nest of two
    loops to fuse (nor a fused loop to unroll), so the checker refuses the pair at the unroll."""
    kernel = persistent_matmul()
    walk = kernel["body"][0]
    (walk["body"][4] if inner else walk)["unroll"] = 2
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(kernel))
    path = "/body/0/body/4/unroll" if inner else "/body/0/unroll"
    assert [(d.code, d.path) for d in raised.value.diagnostics] == [("flatten_nest", path)]
    walk["flatten"] = False
    check(kernel_from_obj(kernel))  # unrolled, not flattened: fine


def test_the_lowering_marks_the_loop_and_triton_unrolls_it() -> None:
    ttir = lower(check(kernel_from_obj(row_sums(4))), ("N",)).ttir
    assert ttir.count("tt.loop_unroll_factor = 4") == 1
    for unroll in (None, 1):
        assert "tt.loop_unroll_factor" not in lower(check(kernel_from_obj(row_sums(unroll))), ("N",)).ttir
    for unroll, loops, loads in ((None, 1, 1), (4, 2, 5)):
        compiled = compile_kernel(check(kernel_from_obj(row_sums(unroll))), "sm_90", divisible_by_16=("N",),
                                  in_process=True, cache=False)
        # Unrolled: a loop of four copies of the body and one for the trips left over, one by one.
        assert compiled.ttir.count("scf.for") == loops
        assert compiled.ptx.count("ld.global") == loads


def test_a_dynamic_step_is_unrolled_too() -> None:
    """A step the kernel reads at run time (positive or not: a step <= 0 runs no trip)."""
    kernel = row_sums(2, step="S")
    kernel["inputs"].append({"name": "S", "dtype": "i32"})
    kernel["params"].append({"name": "S"})
    checked = check(kernel_from_obj(kernel))
    assert "tt.loop_unroll_factor = 2" in lower(checked, ()).ttir
    compiled = compile_kernel(checked, "sm_90", in_process=True, cache=False)
    assert compiled.ttir.count("scf.for") == 2  # Triton unrolls a loop whose step it learns at run time too
    x = torch.randn(2, 70)
    out = interpret(checked, {"x": x, "S": 16})["out"]
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-5)


def test_the_emitter_writes_tl_range_loop_unroll_factor(triton_interpreter: TritonInterpreter) -> None:  # noqa: F811
    checked = check(kernel_from_obj(row_sums(4)))
    assert "loop_unroll_factor=4" in emit_triton(checked)
    assert "loop_unroll_factor" not in emit_triton(check(kernel_from_obj(row_sums(1))))
    check_in_triton_interpreter(triton_interpreter, checked, {"x": torch.randn(5, 83)}, {"out": (1e-5, 1e-5)})


def test_the_prompt_tells_the_model() -> None:
    prompt = system_prompt()
    assert '"unroll"?:1|2|4|8|16' in prompt and "`unroll` (speed only)" in prompt


@pytest.mark.gpu
@pytest.mark.parametrize("sizes", [["M=64", "N=4096"], ["M=7", "N=150"], ["M=3", "N=5"]], ids=["aligned", "ragged", "one-trip"])
@pytest.mark.parametrize("unroll", [2, 8])
def test_the_gpu_matches_the_interpreter(sizes: list[str], unroll: int, tmp_path, monkeypatch, capsys) -> None:
    """Every trip count a copy of the body can leave over (0 to unroll - 1 after the unrolled loop)."""
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(row_sums(unroll)))
    status = cli_main(["run", str(path)] + [a for s in sizes for a in ("--size", s)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert all(line.split(": ")[1] == "ok" for line in printed.strip().splitlines())
