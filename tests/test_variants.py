"""Tasks with calls (``variants``): the task format and its errors, each call bound as the
wrapper binds it, and kernels that serve some calls and not others failing with the call named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from kernelgen.errors import Outcome
from kernelgen.lang.parse import kernel_to_json
from kernelgen.harness.pipeline import Settings, evaluate_answer
from kernelgen.task.spec import Task, TaskError, get_task, load_task_file, load_tasks
from kernelgen.task.verify import make_inputs

NEW_TASKS = {"hardswish_generic": "easy", "remainder_int": "easy", "maximum_generic": "easy",
             "sum_dtype": "med", "softmax_dtype": "med", "layer_norm_optional": "med",
             "rms_norm_batched": "hard", "linear_optional_bias": "hard"}


# -- a small task with calls, cheap to run in the interpreter --------------------------------

SHIFT = {
    "name": "shift",
    "dtypes": [{"name": "T", "of": ["f32", "f64"]}],
    "inputs": [{"name": "x", "dtype": "T", "shape": ["N"]},
               {"name": "bias", "dtype": "T", "shape": ["N"], "default": None, "present": "HAS_BIAS"}],
    "outputs": [{"name": "y", "dtype": "T", "shape": ["N"]}],
    "params": [{"name": "x"}, {"name": "bias"}, {"name": "y"}, {"name": "N"}],
    "meta": [{"name": "BLOCK", "value": 64}],
    "grid": [{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
    "body": [
        {"op": "let", "name": "offs", "value": {"op": "add", "lhs": {"op": "mul", "lhs": {"op": "program_id"},
                                                                      "rhs": "BLOCK"}, "rhs": {"op": "arange", "size": "BLOCK"}}},
        {"op": "let", "name": "mask", "value": {"op": "lt", "lhs": "offs", "rhs": "N"}},
        {"op": "let", "name": "read_bias", "value": {"op": "and", "lhs": "mask",
                                                      "rhs": {"op": "eq", "lhs": "HAS_BIAS", "rhs": 1}}},
        {"op": "let", "name": "v", "value": {"op": "load", "ptr": {"op": "add", "lhs": "x", "rhs": "offs"}, "mask": "mask"}},
        {"op": "let", "name": "b", "value": {"op": "load", "ptr": {"op": "add", "lhs": "bias", "rhs": "offs"},
                                              "mask": "read_bias", "other": 1.0}},
        {"op": "store", "ptr": {"op": "add", "lhs": "y", "rhs": "offs"}, "value": {"op": "add", "lhs": "v", "rhs": "b"},
         "mask": "mask"},
    ],
}


def shift_task(**changes: Any) -> dict[str, Any]:
    """y = x + bias, where an omitted bias counts as 1 (so that zeros for it are wrong)."""
    data = {
        "id": "shift", "tier": "easy",
        "prompt": "y = x + bias elementwise; an omitted bias (None) counts as 1 everywhere.",
        "dtypes": [{"name": "T", "of": ["f32", "f64"]}],
        "signature": {"inputs": [{"name": "x", "dtype": "T", "shape": ["N"]},
                                 {"name": "bias", "dtype": "T", "shape": ["N"], "default": None, "present": "HAS_BIAS"}],
                      "outputs": [{"name": "y", "dtype": "T", "shape": ["N"]}]},
        "variants": [{"name": "f32", "dtypes": {"T": "f32"}},
                     {"name": "f64_no_bias", "dtypes": {"T": "f64"}, "args": {"bias": None}}],
        "reference": "def reference(x, bias):\n    return x + (1.0 if bias is None else bias)\n",
        "sizes": {"N": {"min": 1, "max": 300}},
        "bench_sizes": {"N": 300},
        "golden": SHIFT,
    }
    data.update(changes)
    return data


def write_task(tmp_path: Path, data: dict[str, Any], tier: str = "easy", name: str = "shift") -> Path:
    folder = tmp_path / tier
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if k not in ("id", "tier")}))
    return path


SETTINGS = Settings(shapes=2, seed=0)


# -- the format --------------------------------------------------------------------------------


def test_the_new_tasks_use_the_host_features_in_every_tier() -> None:
    tasks = {t.id: t for t in load_tasks()}
    assert {tid: tasks[tid].tier for tid in NEW_TASKS} == NEW_TASKS
    features = {tid: set() for tid in NEW_TASKS}
    for tid in NEW_TASKS:
        task = tasks[tid]
        assert len(task.variants) >= 2, tid
        if task.golden.dtypes:
            features[tid].add("generic")
        if any(i.role == "dtype" for i in task.signature.inputs):
            features[tid].add("dtype=")
        if any(v.args.get(i.name, "given") is None for v in task.variants for i in task.signature.inputs
               if i.present):
            features[tid].add("optional")
        if any(len(i.shape or []) == 3 for i in task.signature.inputs):
            features[tid].add("batch")
        if any(d in ("f64",) for v in task.variants for d in v.dtypes.values()):
            features[tid].add("f64")
    assert all("generic" in f for f in features.values()), features
    assert sum("dtype=" in f for f in features.values()) >= 2
    assert sum("optional" in f for f in features.values()) >= 3
    assert sum("batch" in f for f in features.values()) >= 3
    assert sum("f64" in f for f in features.values()) >= 3
    integers = [tid for tid in NEW_TASKS if any(d in ("i32", "i64") for v in tasks[tid].variants
                                                for d in v.dtypes.values())]
    assert sorted(integers) == ["maximum_generic", "remainder_int"]


def test_each_call_is_a_concrete_task() -> None:
    task = get_task("sum_dtype")
    calls = task.variant_tasks()
    assert [c.variant.name for c in calls] == [v.name for v in task.variants]
    first, last = calls[0], calls[-1]
    assert [s.dtype for s in first.signature.inputs] == ["f16", None, None]
    assert first.signature.outputs[0].dtype == "f32"
    assert last.tolerance.rtol == 1e-9 and first.tolerance.rtol == 1e-4  # a call's own tolerance
    inputs = make_inputs(first, {"B": 2, "S": 3, "H": 5})
    assert inputs["x"].dtype == torch.float16 and inputs["dim"] == -1 and inputs["dtype"] is torch.float32
    omitted = make_inputs(get_task("linear_optional_bias").variant_tasks()[1], {"M": 2, "N": 3, "K": 4})
    assert omitted["bias"] is None and omitted["x"].dtype == torch.float16
    prompt = task.render_prompt()
    assert "Dtype variables: X in {f16, bf16, f32}; Y in {f32, f64}" in prompt
    assert "dtype: role dtype, binds Y, default None" in prompt
    assert "f16_to_f32: X=f16, Y=f32, dim=-1, dtype=torch.float32" in prompt
    assert get_task("relu").variant_tasks() == [get_task("relu")]


BAD_FILES = [
    ({"variants": []}, "variants: the task has dtype variables ['T']; list the calls it checks in variants"),
    ({"dtypes": []}, "signature/inputs/0/dtype: T is not a dtype nor a dtype variable declared in dtypes"),
    ({"variants": [{"name": "a", "dtypes": {}}]}, "variants/0/dtypes: binds [], the task's dtype variables are ['T']"),
    ({"variants": [{"name": "a", "dtypes": {"T": "f16"}}]}, "variants/0/dtypes/T: f16 is not among T's dtypes"),
    ({"variants": [{"name": "a", "dtypes": {"T": "f32"}}, {"name": "a", "dtypes": {"T": "f64"}}]},
     "variants/1/name: 'a' names another variant too"),
    ({"variants": [{"name": "a", "dtypes": {"T": "f32"}, "args": {"x": None}}]},
     "variants/0/args/x: not a host-only input nor an optional tensor"),
    ({"variants": [{"name": "a", "dtypes": {"T": "f32"}, "args": {"bias": 2}}]},
     "variants/0/args/bias: an optional tensor's argument is null (omitted) or left out (drawn)"),
    ({"variants": [{"name": "a", "dtypes": {"T": "i8"}}]}, "variants/0/dtypes/T"),
    # Made on the CPU whatever the inputs' device: fails only on a GPU, so the loader refuses it.
    ({"reference": "def reference(x, bias):\n    one = torch.ones(x.shape[0], dtype=x.dtype)\n"
                   "    return x + (one if bias is None else bias)\n"},
     "reference: line 2: torch.ones(...) needs device= (e.g. the device of an input)"),
    ({"eager": "def eager(x, bias):\n    return x + (torch.tensor(1.0) if bias is None else bias)\n"},
     "eager: line 2: torch.tensor(...) needs device="),
]


@pytest.mark.parametrize("changes, message", BAD_FILES, ids=[m.split(":")[0] for _, m in BAD_FILES])
def test_a_bad_task_file_says_what_and_where(tmp_path: Path, changes: dict, message: str) -> None:
    path = write_task(tmp_path, shift_task(**changes))
    with pytest.raises(TaskError) as caught:
        load_task_file(path)
    assert caught.value.code == "task_schema" and caught.value.path == str(path)
    assert message in caught.value.message


def test_host_only_arguments_need_their_values_in_each_call(tmp_path: Path) -> None:
    task = yaml.safe_load((Path(__file__).resolve().parent.parent / "bench" / "med" / "sum_dtype.yaml").read_text())
    (tmp_path / "med").mkdir()
    path = tmp_path / "med" / "sum_dtype.yaml"
    task["variants"][1]["args"] = {"dim": 1, "dtype": "f32"}
    path.write_text(yaml.safe_dump(task))
    with pytest.raises(TaskError, match=r"variants/1/args/dim: 1 is not one of its choices \[-1, 2\]"):
        load_task_file(path)
    del task["signature"]["inputs"][1]["default"]  # dim required: each call gives it
    task["variants"][1]["args"] = {"dtype": "f32"}
    path.write_text(yaml.safe_dump(task))
    with pytest.raises(TaskError, match=r"variants/1/args: gives no value for the host-only input 'dim'"):
        load_task_file(path)
    task["variants"][1]["args"] = {"dim": -1, "dtype": "float32"}
    path.write_text(yaml.safe_dump(task))
    with pytest.raises(TaskError, match=r"variants/1/args/dtype: a dtype= argument is null or one of"):
        load_task_file(path)
    task["variant"] = task["variants"][0]
    path.write_text(yaml.safe_dump(task))
    with pytest.raises(TaskError, match="variant: set by the harness"):
        load_task_file(path)


# -- judging kernels on every call -------------------------------------------------------------


def test_a_kernel_that_serves_every_call_passes(tmp_path: Path) -> None:
    task = load_task_file(write_task(tmp_path, shift_task()))
    result = evaluate_answer(task, kernel_to_json(task.golden), SETTINGS)
    assert result.ok, result.diagnostics


def test_a_kernel_of_one_dtype_fails_on_the_other_call_by_name(tmp_path: Path) -> None:
    task = load_task_file(write_task(tmp_path, shift_task()))
    f32_only = json.loads(json.dumps(SHIFT).replace('"T"', '"f32"'))
    del f32_only["dtypes"]
    result = evaluate_answer(task, json.dumps(f32_only), SETTINGS)
    assert (result.outcome, result.stage) == (Outcome.SEMANTIC_ERROR, "check")
    first = result.first_diagnostic()
    assert first.code == "signature_mismatch"
    assert first.message.startswith("call f64_no_bias (T=f64, bias=None): ") and "bias" in first.message


def test_a_kernel_that_reads_an_omitted_tensor_fails_on_that_call(tmp_path: Path) -> None:
    """Zeros stand for an omitted tensor; a kernel that ignores its presence flag reads them."""
    task = load_task_file(write_task(tmp_path, shift_task()))
    careless = json.loads(json.dumps(SHIFT))
    careless["body"][4]["value"]["mask"] = "mask"
    result = evaluate_answer(task, json.dumps(careless), SETTINGS)
    assert (result.outcome, result.stage) == (Outcome.WRONG_RESULT, "verify")
    assert result.first_diagnostic().message.startswith("call f64_no_bias (T=f64, bias=None): ")


def test_a_kernel_whose_output_dtype_ignores_dtype_is_refused() -> None:
    """sum(x, dtype=torch.float32) of f16 x is f32: a kernel that returns the sum in x's dtype
    has no variant for that call."""
    task = get_task("sum_dtype")
    golden = json.loads(kernel_to_json(task.golden))
    golden["outputs"][0]["dtype"] = "X"
    store = golden["body"][4]
    store["value"] = {"op": "cast", "x": store["value"], "dtype": "X"}
    result = evaluate_answer(task, json.dumps(golden), Settings(shapes=1, compile=False))
    assert result.outcome == Outcome.SEMANTIC_ERROR, result.diagnostics
    first = result.first_diagnostic()
    assert first.code == "signature_mismatch" and first.path == "/outputs/0/dtype"
    assert first.message == "call f16_to_f32 (X=f16, Y=f32, dim=-1, dtype=torch.float32): out is f32, " \
                            "the kernel's variant gives f16"


def test_the_baseline_answer_of_a_task_with_calls_passes_every_call(tmp_path: Path) -> None:
    from kernelgen.baseline.ablation import evaluate_baseline, interpreter_limitation, reference_answer

    task = load_task_file(write_task(tmp_path, shift_task()))
    answer = reference_answer(task)
    assert "def shift(x, bias):" in answer and "shift_f32(x, bias)" in answer and "shift_f64(x, bias)" in answer
    result = evaluate_baseline(task, answer, Settings(shapes=1))
    assert result.ok, result.diagnostics
    assert interpreter_limitation(get_task("linear_optional_bias")) is None  # its f16 calls run there
    assert interpreter_limitation(get_task("rope_bf16")) is not None


@pytest.mark.gpu
@pytest.mark.parametrize("task_id", ["softmax_dtype", "linear_optional_bias"])
def test_every_call_is_verified_and_timed_on_the_gpu(task_id: str) -> None:
    from kernelgen.gpu.compile import default_target
    from kernelgen.gpu.executor import Executor

    task = get_task(task_id)
    with Executor() as executor:
        settings = Settings(target=default_target(), shapes=2, gpu=True, executor=executor)
        result = evaluate_answer(task, kernel_to_json(task.golden), settings)
    assert result.ok, result.diagnostics
    assert result.timing.variant == task.variants[0].name
    assert list(result.extra["call_timings"]) == [v.name for v in task.variants]


def test_the_report_names_each_call_and_its_speedup() -> None:
    from kernelgen.report.allure import describe
    from kernelgen.task.results import CaseResult, Timing

    def timing(variant: str, kernel_ms: float) -> Timing:
        return Timing(variant=variant, sizes={"N": 8}, kernel_ms=kernel_ms, eager_ms=2.0, speedup=2.0 / kernel_ms,
                      gbps=1.0, tflops=0.1, roofline_fraction=0.5)

    first, second = timing("f16", 1.0), timing("f64_no_bias", 4.0)
    result = CaseResult(task="shift", tier="easy", provider="reference", model="golden", outcome=Outcome.OK,
                        mode="gpu", target="sm_90", timing=first,
                        extra={"call_timings": {"f16": first.model_dump(), "f64_no_bias": second.model_dump()}})
    text = describe(result)
    assert "**speedup over PyTorch eager** (call f16): 2.00x" in text
    assert "**each call**: f16 2.00x (1.0000 ms); f64_no_bias 0.50x (4.0000 ms)" in text


def test_a_kernel_with_a_view_serves_calls_of_higher_rank() -> None:
    """The elementwise view takes hardswish's [M, N] calls flattened and gives y back as [M, N]
    (its written elements too, so that none counts as unwritten)."""
    task = get_task("hardswish_generic")
    viewed = json.loads(kernel_to_json(task.golden))
    viewed.update(view="elementwise", inputs=[{"name": "x", "dtype": "T", "shape": ["N"]}],
                  outputs=[{"name": "y", "dtype": "T", "shape": ["N"]}], grid=[{"op": "cdiv", "lhs": "N", "rhs": "BLOCK"}],
                  params=[{"name": "x"}, {"name": "y"}, {"name": "numel", "value": "N"}])
    result = evaluate_answer(task, json.dumps(viewed), Settings(shapes=1, compile=False))
    assert result.ok, result.diagnostics
