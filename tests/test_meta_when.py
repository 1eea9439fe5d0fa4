"""A meta value by dtype binding (``"when": [{"dtypes": {"T": "f32"}, "value": 128}]``): one
generic kernel serves f16 and f32 calls with the tile each can hold (an f32 tile takes twice the
shared memory of an f16 one). Each variant gets its values where it is made concrete
(:func:`kernelgen.lang.generic.instantiate`), so the checker, interpreter, lowering, emitter and
compiler see plain values; the tuner starts each call's search from that call's values."""

from __future__ import annotations

import copy

import pytest
import torch
from test_emit import let, o

from kernelgen.check.checker import check
from kernelgen.emit.module import emit_triton
from kernelgen.errors import SemanticError
from kernelgen.gpu.tune import Config, Variant, search_space
from kernelgen.interp.execute import interpret
from kernelgen.lang.generic import instantiate, meta_values
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.lower.lowering import lower
from kernelgen.model.prompt import system_prompt


def scaled_copy(when: list | None = None) -> dict:
    """y = 2 x for a dtype variable T in {f16, f32}, BLOCK elements a program; BLOCK 256 unless
    ``when`` says otherwise (default: 64 for f32)."""
    offs = o("add", lhs=o("mul", lhs=o("program_id"), rhs="BLOCK"), rhs=o("arange", size="BLOCK"))
    return {"name": "scaled_copy", "dtypes": [{"name": "T", "of": ["f16", "f32"]}],
            "inputs": [{"name": "x", "dtype": "T", "shape": ["N"]}], "outputs": [{"name": "y", "dtype": "T", "shape": ["N"]}],
            "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}],
            "meta": [{"name": "BLOCK", "value": 256,
                      "when": [{"dtypes": {"T": "f32"}, "value": 64}] if when is None else when}],
            "grid": [o("cdiv", lhs="N", rhs="BLOCK")],
            "body": [let("offs", offs), let("ok", o("lt", lhs="offs", rhs="N")),
                     o("store", ptr=o("add", lhs="y", rhs="offs"), mask="ok",
                       value=o("mul", lhs=o("load", ptr=o("add", lhs="x", rhs="offs"), mask="ok"), rhs=2.0))]}


def test_each_variant_takes_its_binding_s_value() -> None:
    kernel = kernel_from_obj(scaled_copy())
    assert check(kernel).meta == {"BLOCK": 256}  # the default variant: T = f16, its first dtype
    assert check(kernel, dtypes={"T": "f16"}).meta == {"BLOCK": 256}
    assert check(kernel, dtypes={"T": "f32"}).meta == {"BLOCK": 64}
    assert check(kernel, {"BLOCK": 32}, {"T": "f32"}).meta == {"BLOCK": 32}  # an override (the tuner's) wins
    concrete = instantiate(kernel, {"T": "f32"})
    assert [(m.name, m.value, m.when) for m in concrete.meta] == [("BLOCK", 64, [])]
    assert meta_values(kernel) == {"BLOCK": 256} and meta_values(kernel, {"T": "f32"}) == {"BLOCK": 64}


def test_the_first_when_that_matches_wins() -> None:
    kernel = kernel_from_obj(scaled_copy([{"dtypes": {"T": "f32"}, "value": 128}, {"dtypes": {"T": "f32"}, "value": 32}]))
    assert check(kernel, dtypes={"T": "f32"}).meta == {"BLOCK": 128}


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_the_interpreter_and_the_lowering_see_the_variant_s_blocks(dtype: str) -> None:
    checked = check(kernel_from_obj(scaled_copy()), dtypes={"T": dtype})
    block = {"f16": 256, "f32": 64}[dtype]
    x = torch.randn(1000).to(getattr(torch, {"f16": "float16", "f32": "float32"}[dtype]))
    torch.testing.assert_close(interpret(checked, {"x": x})["y"], x * 2)
    assert f"tensor<{block}x" in lower(checked, ()).ttir and f"tensor<{320 - block}x" not in lower(checked, ()).ttir
    assert f"    BLOCK = {block}\n" in emit_triton(checked)


@pytest.mark.parametrize("change, path, code", [
    (lambda m: m.update(when=[{"dtypes": {"U": "f32"}, "value": 64}]), "/meta/0/when/0/dtypes/U", "bad_dtype_variable"),
    (lambda m: m.update(when=[{"dtypes": {"T": "bf16"}, "value": 64}]), "/meta/0/when/0/dtypes/T", "bad_dtype_variable"),
    (lambda m: m.update(when=[{"dtypes": {}, "value": 64}]), "/meta/0/when/0/dtypes", "bad_dtype_variable"),
    (lambda m: m.update(when=[{"dtypes": {"T": "f32"}, "value": 0}]), "/meta/0/when/0/value", "bad_value"),
], ids=["undeclared-variable", "dtype-not-taken", "no-dtypes", "below-one"])
def test_a_bad_when_is_refused_where_it_is(change, path: str, code: str) -> None:
    document = scaled_copy()
    change(document["meta"][0])
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(document))
    assert [(d.code, d.path) for d in raised.value.diagnostics] == [(code, path)]


def test_a_kernel_without_dtype_variables_has_no_when() -> None:
    document = scaled_copy()
    del document["dtypes"]
    for spec in (*document["inputs"], *document["outputs"]):
        spec["dtype"] = "f32"
    with pytest.raises(SemanticError) as raised:
        check(kernel_from_obj(document))
    assert [(d.code, d.path) for d in raised.value.diagnostics] == [("bad_dtype_variable", "/meta/0/when")]


def test_the_tuner_starts_each_call_from_its_own_values() -> None:
    """A call's as-written configuration is its binding's values: an f32 call is not searched
    around (nor overridden with) the f16 call's tile."""
    kernel = kernel_from_obj(scaled_copy())
    f32 = Variant.of(dtypes={"T": "f32"})
    assert Config.as_written(kernel).meta == (("BLOCK", 256),)
    assert Config.as_written(kernel, f32).meta == (("BLOCK", 64),)
    assert search_space(kernel, "quick", f32)[0] == Config.as_written(kernel, f32)
    assert {c.meta for c in search_space(kernel, "quick", f32)} >= {(("BLOCK", 32),), (("BLOCK", 128),)}
    assert f32.check(kernel, Config.as_written(kernel, f32)).meta == {"BLOCK": 64}


def test_a_program_of_launches_resolves_its_shared_meta_per_variant() -> None:
    one = scaled_copy()
    document = {key: one[key] for key in ("name", "dtypes", "inputs", "outputs", "meta")}
    launch = {key: copy.deepcopy(one[key]) for key in ("params", "grid", "body")}
    document["launches"] = [{"name": "first", **launch}, {"name": "second", **copy.deepcopy(launch)}]
    checked = check(kernel_from_obj(document), dtypes={"T": "f32"})
    assert [each.meta for each in checked.launches] == [{"BLOCK": 64}, {"BLOCK": 64}]


def test_the_prompt_tells_the_model() -> None:
    prompt = system_prompt()
    assert '"when"?:[MetaWhen]' in prompt and "MetaWhen" in prompt


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("n", [1000, 4096])
def test_the_gpu_runs_each_variant_with_its_blocks_as_the_interpreter_does(dtype: str, n: int) -> None:
    """Each variant compiled with its own BLOCK, launched on the grid its value gives (a grid
    from another variant's value would leave elements unwritten: poison, which fails)."""
    from kernelgen.gpu.compile import compile_document
    from kernelgen.gpu.launch import run_on_gpu

    checked = check(kernel_from_obj(scaled_copy()), dtypes={"T": dtype})
    x = torch.randn(n).to(getattr(torch, {"f16": "float16", "f32": "float32"}[dtype]))
    compiled = compile_document(checked)
    assert f"tensor<{ {'f16': 256, 'f32': 64}[dtype] }x" in compiled.ttir
    torch.testing.assert_close(run_on_gpu(compiled, checked, {"x": x}, to_cpu=True)["y"], interpret(checked, {"x": x})["y"],
                               rtol=0, atol=0)
