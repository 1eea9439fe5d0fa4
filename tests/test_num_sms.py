"""``num_sms``: the SM count of the GPU a launch runs on, a host expression for portable
persistent grids. Where it may appear (grid, params, scratch shapes; not the body, not an
output's shape), what it is off the GPU (the interpreter's 3, so persistent loops iterate at
small sizes), that bounds proofs take it like a size, that no compiled variant assumes its
value, and what the GPU gives (its multiprocessor count)."""

from __future__ import annotations

import copy

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.gpu.compile import divisible_params
from kernelgen.errors import SemanticError
from kernelgen.host.plan import INTERPRETER_NUM_SMS, plan_for_sizes, plan_launch
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import kernel_from_obj

NUM_SMS = {"op": "num_sms"}
BLOCKS = {"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}

# Persistent y = 2 x: min(blocks, num_sms) programs walk the blocks, stepping by num_programs.
PERSISTENT = {
    "name": "persistent_double",
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": ["N"]}],
    "params": [{"name": "x"}, {"name": "y"}, {"name": "N"}],
    "meta": [{"name": "BLOCK", "value": 16}],
    "grid": [{"op": "minimum", "lhs": BLOCKS, "rhs": NUM_SMS}],
    "body": [{"op": "for", "var": "b", "start": {"op": "program_id"}, "stop": BLOCKS, "step": {"op": "num_programs"},
              "body": [
                  {"op": "let", "name": "offs", "value": {"op": "add", "lhs": {"op": "mul", "lhs": "b", "rhs": "BLOCK"},
                                                           "rhs": {"op": "arange", "size": "BLOCK"}}},
                  {"op": "let", "name": "ok", "value": {"op": "lt", "lhs": "offs", "rhs": "N"}},
                  {"op": "store", "ptr": {"op": "add", "lhs": "y", "rhs": "offs"}, "mask": "ok",
                   "value": {"op": "mul", "lhs": 2.0,
                             "rhs": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "offs"}, "mask": "ok"}}}]}],
}


def persistent(**changes) -> dict:
    document = copy.deepcopy(PERSISTENT)
    document.update(changes)
    return document


def codes(document: dict) -> list[tuple[str, str]]:
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(document))
    return [(d.code, d.path) for d in info.value.diagnostics]


def test_a_persistent_kernel_walks_several_blocks_a_program_in_the_interpreter() -> None:
    checked = check(kernel_from_obj(PERSISTENT))
    x = torch.randn(200)
    plan = plan_launch(checked, [x])
    assert plan.grid == (INTERPRETER_NUM_SMS, 1, 1)  # 13 blocks over 3 programs
    assert torch.equal(interpret(checked, {"x": x})["y"], 2 * x)
    assert plan_for_sizes(checked, {"N": 20}).grid == (2, 1, 1)  # fewer blocks than SMs


def test_num_sms_is_host_only_and_never_shapes_an_output() -> None:
    in_body = persistent()
    in_body["body"][0]["step"] = NUM_SMS
    assert codes(in_body) == [("host_only", "/body/0/step")]
    shaped = persistent(outputs=[{"name": "y", "dtype": "f32", "shape": [{"op": "mul", "lhs": "N", "rhs": NUM_SMS}]}])
    assert ("device_dependent", "/outputs/0/shape/0") in codes(shaped)


def test_a_param_and_a_scratch_shape_may_read_num_sms() -> None:
    program = {
        "name": "per_program_partials",
        "inputs": [{"name": "x", "dtype": "f32", "shape": ["N"]}],
        "outputs": [{"name": "total", "dtype": "f32", "shape": [1], "init": 0.0}],
        "meta": [{"name": "BLOCK", "value": 16}],
        "scratch": [{"name": "partial", "dtype": "f32", "shape": [NUM_SMS]}],
        "launches": [
            {"name": "partials", "params": [{"name": "x"}, {"name": "partial"}, {"name": "N"},
                                             {"name": "programs", "value": NUM_SMS}],
             "grid": [NUM_SMS],
             "body": [{"op": "for", "var": "b", "start": {"op": "program_id"}, "stop": BLOCKS, "step": "programs",
                       "carry": [{"name": "acc", "init": 0.0, "next": {"op": "add", "lhs": "acc", "rhs": {
                           "op": "sum", "axis": 0, "x": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "offs"},
                                              "mask": {"op": "lt", "lhs": "offs", "rhs": "N"}}}}}],
                       "body": [{"op": "let", "name": "offs", "value": {
                           "op": "add", "lhs": {"op": "mul", "lhs": "b", "rhs": "BLOCK"},
                           "rhs": {"op": "arange", "size": "BLOCK"}}}]},
                      # unmasked: the grid and the scratch are both num_sms, at each value the proof assigns it
                      {"op": "store", "ptr": {"op": "add", "lhs": "partial", "rhs": {"op": "program_id"}}, "value": "acc"}]},
            {"name": "combine", "params": [{"name": "partial"}, {"name": "total"}, {"name": "programs", "value": NUM_SMS}],
             "grid": [1],
             "body": [{"op": "store", "ptr": "total", "value": {"op": "sum", "axis": 0, "x": {"op": "load", "ptr": {
                 "op": "add", "lhs": "partial", "rhs": {"op": "arange", "size": 1024}},
                 "mask": {"op": "lt", "lhs": {"op": "arange", "size": 1024}, "rhs": "programs"}, "other": 0.0}}}]},
        ],
    }
    checked = check(kernel_from_obj(program))
    x = torch.arange(100, dtype=torch.float32)
    assert interpret(checked, {"x": x})["total"].item() == pytest.approx(x.sum().item())


def test_bounds_are_proven_for_every_sm_count() -> None:
    """num_sms takes the sizes' sample values in the bounds proof: an unmasked store to program_id
    is in bounds for the interpreter's 3 programs, but not on a GPU of more SMs than the output has
    elements (refused, naming the count); capped by the output's size, proven."""
    one_each = {
        "name": "one_each",
        "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": [4]}],
        "params": [{"name": "x"}, {"name": "y"}],
        "grid": [NUM_SMS],
        "body": [{"op": "store", "ptr": {"op": "add", "lhs": "y", "rhs": {"op": "program_id"}}, "value": 1.0}],
    }
    with pytest.raises(SemanticError) as info:
        check(kernel_from_obj(one_each))
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.code == "unproven_bounds" and "(with num_sms=7)" in diagnostic.message, diagnostic.message
    capped = copy.deepcopy(one_each)
    capped["grid"] = [{"op": "minimum", "lhs": 4, "rhs": NUM_SMS}]
    check(kernel_from_obj(capped))


def test_no_compiled_variant_assumes_the_sm_count() -> None:
    """A param of num_sms * 16 is a multiple of 16 on every GPU, but the compile (in a process
    without the GPU's count) must not rest an assumption on the value it saw."""
    document = persistent(params=[{"name": "x"}, {"name": "y"}, {"name": "N"},
                                  {"name": "lanes", "value": {"op": "mul", "lhs": NUM_SMS, "rhs": 16}},
                                  {"name": "n16", "value": {"op": "mul", "lhs": "N", "rhs": 16}}])
    checked = check(kernel_from_obj(document))
    assert divisible_params(plan_for_sizes(checked, {"N": 100})) == ("n16",)


@pytest.mark.gpu
def test_the_gpu_gives_its_multiprocessor_count() -> None:
    from kernelgen.gpu.compile import compile_document
    from kernelgen.gpu.devices import gpu_unavailable_reason
    from kernelgen.gpu.launch import run_on_gpu

    if gpu_unavailable_reason():
        pytest.skip(gpu_unavailable_reason())
    checked = check(kernel_from_obj(PERSISTENT))
    x = torch.randn(1 << 20, device="cuda")
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    assert plan_launch(checked, [x]).grid == (sms, 1, 1)
    y = run_on_gpu(compile_document(checked), checked, [x])["y"]
    assert torch.equal(y, 2 * x)
