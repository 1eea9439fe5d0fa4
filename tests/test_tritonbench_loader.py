"""The TritonBench-T loader and ``kernelgen tritonbench list``.

The 30-operator sample in the official layout is read from ``../shared/tritonbench-t-sample``
(relative to the repository root); malformed checkouts are built in ``tmp_path``.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from conftest import TRITONBENCH_SAMPLE
import torch
from hypothesis import given
from hypothesis import strategies as st

from kernelgen.cli import main
from kernelgen.tritonbench import (
    TritonBenchError,
    function_sources,
    load_reference_namespace,
    load_tritonbench,
    parse_wrapper_entry,
    split_source,
)
from kernelgen.tritonbench.loader import SEPARATOR

SAMPLE = TRITONBENCH_SAMPLE


def raw_json(relative: str):
    return json.loads((SAMPLE / relative).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# The sample


def test_all_sample_operators_load_in_record_order(sample):
    files = [record["file"] for record in raw_json("data/TritonBench_T_v1.jsonl")]
    assert len(files) == 30
    assert [op.file for op in sample.operators] == files
    assert {op.name for op in sample.operators} == {p.stem for p in (SAMPLE / "data/TritonBench_T_v1").glob("*.py")}
    assert sample.operator("div").torch_name == "torch.div"


def test_prompts_are_the_exact_instructions_of_their_operator(sample):
    # The sample's prompt files list the operators in record order; the loader matches them by
    # description instead, so position is an independent check of the matching.
    for kind in ("simp", "comp"):
        prompts = raw_json(f"data/TritonBench_T_{kind}_alpac_v1.json")
        for op, prompt in zip(sample.operators, prompts, strict=True):
            got = getattr(op.prompts, kind)
            assert got.instruction == prompt["instruction"]
            assert (got.input, got.output) == (prompt["input"], prompt["output"])
            assert got.section("Wrapper Entry Information: ") == op.func_inputs
            assert got.functional_description == op.description.replace("\n", "")
    for op in sample.operators:
        assert (op.prompts.comp.section("Math: ") is not None) == bool(op.math)
        assert op.prompts.simp.section("Math: ") is None


def test_reference_and_test_reassemble_the_file(sample):
    for op in sample.operators:
        text = op.path.read_text(encoding="utf-8")
        assert op.reference.source + SEPARATOR + "\n" + op.test.source == text
        assert text.splitlines()[op.test.first_line - 2] == SEPARATOR
        assert op.test.function == f"test_{op.name}"
        assert not op.test.redefines


def test_wrapper_is_the_function_the_test_calls(sample):
    for op in sample.operators:
        assert op.wrapper == op.signature.name == op.name
        sources = function_sources(op)
        assert sources.reference.startswith(f"def {op.wrapper}(")
        assert sources.test.startswith(f"def {op.test.function}():")
        assert sources.test.rstrip().endswith("return results")


def test_signatures_keep_defaults_keyword_only_params_and_names(sample):
    div = sample.operator("div")
    assert [(p.name, p.default) for p in div.signature.params] == [
        ("input", None), ("other", None), ("rounding_mode", "None"), ("out", "None")]
    assert str(div.prompt_signature) == "div(input, other, *, rounding_mode=None, out=None) -> Tensor"
    sub = sample.operator("sub")
    assert [p.kind for p in sub.signature.params][2:] == ["keyword_only", "keyword_only"]
    assert sub.signature.render() == ("sub(input: torch.Tensor, other: torch.Tensor, *, alpha: float = 1, "
                                      "out: torch.Tensor = None) -> torch.Tensor")
    assert sub.signature.render(annotations=False) == "sub(input, other, *, alpha=1, out=None)"
    assert [p.name for p in sample.operator("tanh").signature.params] == ["input_tensor", "out_tensor"]
    assert sample.operator("max").prompt_signature.returns == "(Tensor, LongTensor)"
    assert sample.operator("mean").prompt_signature is None  # its entry information is prose only


def test_sample_tests_are_unseeded(sample):
    assert not any(op.test.seeded for op in sample.operators)


def test_perf_inputs_read_statically_match_the_golden_results(sample):
    for op in sample.operators:
        assert op.perf.unresolved is None, op.name
        read = [[a.shape if a.kind == "tensor" else a.value for a in case.args] for case in op.perf.cases]
        assert read == [result.input_size for result in op.perf.results], op.name
    assert {a.dtype for case in sample.operator("matmul").perf.cases for a in case.args} == {"float16"}
    assert {a.dtype for case in sample.operator("std").perf.cases for a in case.args} == {"float32"}
    assert sample.operator("fused_mv_sigmoid_sub").perf.cases[0].args[2].kind == "scalar"


def test_a_perf_scripts_rand_range_is_kept_through_added_constants(sample):
    """log_tanh draws torch.rand(n) + 1e-6 (its operator demands positive input); matmul's rand
    has [0, 1); softmax draws randn (no range)."""
    [log_tanh] = sample.operator("log_tanh").perf.cases[0].args
    assert log_tanh.low == pytest.approx(1e-6)
    assert {a.low for case in sample.operator("matmul").perf.cases for a in case.args} == {0.0}
    assert {a.low for case in sample.operator("softmax").perf.cases for a in case.args if a.kind == "tensor"} == {None}


def test_perf_calls_read_statically_pass_each_case_and_the_scripts_keywords(sample):
    for op in sample.operators:
        call, arity = op.perf.call, len(op.perf.cases[0].args)
        assert [a.index for a in call.args if a.kind == "input"] == list(range(arity)), op.name
    logsumexp = sample.operator("logsumexp").perf.call
    assert {k: v.value for k, v in logsumexp.keywords.items()} == {"dim": 0}
    std = sample.operator("std").perf.call  # keywords from the constructor's defaults
    assert {k: v.value for k, v in std.keywords.items()} == {"dim": None, "correction": 1, "keepdim": False}
    assert sample.operator("scaled_add_dot").perf.call.args[2].value == 1.0  # self.alpha, not a case input
    assert all(r.ms > 0 and r.gbps is not None for op in sample.operators for r in op.perf.results)


def test_reference_namespace_runs_every_sample_test_on_the_cpu(sample):
    for op in sample.operators:
        module = load_reference_namespace(op, "cpu")
        assert not hasattr(module, "test_results")  # the driver line is not run
        results = getattr(module, op.test.function)()
        assert results and set(results) <= {f"test_case_{i}" for i in range(1, 5)}
        tensors = [v for value in results.values() for v in (value if isinstance(value, tuple) else (value,))
                   if isinstance(v, torch.Tensor)]
        assert all(t.device.type == "cpu" for t in tensors), op.name


def test_reference_namespace_computes_what_torch_computes(sample):
    x, y = torch.randn(5, 7), torch.randn(7)
    assert torch.equal(load_reference_namespace(sample.operator("div"), "cpu").div(x, y), x / y)
    softmax = load_reference_namespace(sample.operator("softmax"), "cpu").softmax
    assert torch.equal(softmax(x, dim=0), torch.softmax(x, dim=0))


def test_reference_namespace_keeps_cuda_unless_asked(sample):
    op = sample.operator("abs")
    on_gpu = getattr(load_reference_namespace(op), op.test.function).__code__.co_consts
    on_cpu = getattr(load_reference_namespace(op, "cpu"), op.test.function).__code__.co_consts
    assert "cuda" in on_gpu and "cpu" not in on_gpu
    assert "cpu" in on_cpu and "cuda" not in on_cpu
    test_line = op.path.read_text().splitlines().index(f"def {op.test.function}():") + 1
    assert getattr(load_reference_namespace(op), op.test.function).__code__.co_firstlineno == test_line


def test_cli_lists_the_sample_as_a_table(sample, capsys):
    assert main(["tritonbench", "list", "--root", str(SAMPLE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["name", "difficulty"]
    assert len(lines) == 1 + 30 + 1 and lines[-1].startswith("30 operators")
    div = next(line for line in lines if line.startswith("div "))
    assert "div(input, other, rounding_mode=None, out=None)" in div and div.split()[-1] == "16"


def test_cli_lists_the_sample_as_json(sample, capsys):
    assert main(["tritonbench", "list", "--root", str(SAMPLE), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in rows] == [op.name for op in sample.operators]
    for row, op in zip(rows, sample.operators):
        assert (row["file"], row["difficulty"], row["wrapper"]) == (op.file, op.difficulty, op.wrapper)
        assert row["signature"] == op.signature.render()
        assert row["perf_cases"] == len(op.perf.results)


# ---------------------------------------------------------------------------------------------
# Checkouts built here: the layout's quirks and its failures

HEADER = ("You are an expert in Trion programming, capable of writing corresponding Triton kernels and "
          "wrapper functions based on functional descriptions and function parameters.")
ELEMENTWISE_PERF = """\
import torch
from TorchBench_v1.op import op
from performance_utils import Performance_Metrics

class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('op', dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(2, 4):
            self.input_tensors.append(torch.rand(2 ** i, dtype=self.dtype))

    def call_op(self, input_tensor):
        return op(input_tensor)
"""


def operator_source(stem: str) -> str:
    return (f"import torch\n\ndef {stem}(x, alpha=1.0):\n    return x * alpha\n\n{SEPARATOR}\n\n"
            f"def test_{stem}():\n    return {{'test_case_1': {stem}(torch.ones(3, device='cuda'))}}\n\n"
            f"test_results = test_{stem}()\nprint(test_results)\n")


def write_checkout(root: Path, stems: list[str], perf_script: str = ELEMENTWISE_PERF) -> Path:
    """A TritonBench layout with one record, two prompts, a source, a perf script and perf
    results per operator."""
    data, metrics, results = root / "data", root / "performance_metrics/perf_T/golden_metrics", \
        root / "performance_metrics/perf_T/golden_results"
    for directory in (data / "TritonBench_T_v1", metrics, results):
        directory.mkdir(parents=True, exist_ok=True)
    records = [{"name": f"torch.{stem}", "func_inputs": f"{stem}(x, alpha=1.0) -> Tensor",
                "description": f"Scales x, operator {stem}.", "math": "", "example": "", "torch_code": "",
                "torch_cnt": 1, "other": "", "difficulty": 1, "params_cnt": 2, "file": f"{stem}.py"}
               for stem in stems]
    (data / "TritonBench_T_v1.jsonl").write_text(json.dumps(records, indent=1))
    for kind in ("simp", "comp"):
        prompts = [{"instruction": f"{HEADER}\nFunctional Description: {r['description']}\nWrapper Entry "
                                   f"Information: {r['func_inputs']}\nAfter generation, verify.",
                    "input": "", "output": ""} for r in records]
        (data / f"TritonBench_T_{kind}_alpac_v1.json").write_text(json.dumps(prompts))
    for stem in stems:
        (data / "TritonBench_T_v1" / f"{stem}.py").write_text(operator_source(stem))
        (metrics / f"{stem}_perf.py").write_text(perf_script)
        (results / f"{stem}.json").write_text(json.dumps(
            [{"input_size": [[n]], "ms": 0.01, "GB/s": 1.0, "TFLOPS": 0.1} for n in (4, 8)]))
    return root


def load_error(root: Path) -> TritonBenchError:
    with pytest.raises(TritonBenchError) as info:
        load_tritonbench(root)
    return info.value


def test_a_checkout_built_here_loads(tmp_path):
    bench = load_tritonbench(write_checkout(tmp_path, ["scale", "index_fill_"]))
    assert [op.name for op in bench.operators] == ["scale", "index_fill_"]
    op = bench.operator("index_fill_")
    assert (op.wrapper, op.test.function, op.signature.render()) == (
        "index_fill_", "test_index_fill_", "index_fill_(x, alpha=1.0)")
    assert [[a.shape for a in case.args] for case in op.perf.cases] == [[[4]], [[8]]]
    assert op.perf.call.args[0].index == 0 and not op.perf.call.keywords


@pytest.mark.parametrize("make_root", [lambda tmp: tmp, lambda tmp: tmp / "absent", lambda tmp: tmp / "file"])
def test_a_root_that_is_not_a_checkout_is_refused(tmp_path, make_root):
    (tmp_path / "file").write_text("")
    error = load_error(make_root(tmp_path))
    assert error.code == "not_a_checkout" and "is not a TritonBench checkout" in str(error)


def test_missing_operator_files_are_each_reported(tmp_path):
    root = write_checkout(tmp_path, ["a", "b", "c"])
    for stem in ("a", "c"):
        (root / f"data/TritonBench_T_v1/{stem}.py").unlink()
    error = load_error(root)
    assert [(d.code, Path(d.path).name) for d in error.diagnostics] == [
        ("missing_operator_file", "a.py"), ("missing_operator_file", "c.py")]
    assert "operator a (torch.a) has no file a.py" in error.diagnostics[0].message


def test_records_that_are_not_json_are_refused_with_the_place(tmp_path):
    root = write_checkout(tmp_path, ["a"])
    records = root / "data/TritonBench_T_v1.jsonl"
    records.write_text('[{"name": "torch.a",\n  "file": }]')
    error = load_error(root)
    assert (error.code, error.path) == ("bad_json", str(records))
    assert "line 2 column" in error.diagnostics[0].message


def test_a_record_without_a_field_is_refused_with_a_pointer(tmp_path):
    root = write_checkout(tmp_path, ["a", "b"])
    records = root / "data/TritonBench_T_v1.jsonl"
    document = json.loads(records.read_text())
    del document[1]["difficulty"]
    records.write_text(json.dumps(document))
    error = load_error(root)
    assert (error.code, error.path) == ("bad_record", f"{records}#/1/difficulty")


def test_json_lines_records_load_like_the_array(tmp_path):
    root = write_checkout(tmp_path, ["a", "b"])
    records = root / "data/TritonBench_T_v1.jsonl"
    records.write_text("\n".join(json.dumps(r) for r in json.loads(records.read_text())) + "\n")
    assert [op.name for op in load_tritonbench(root).operators] == ["a", "b"]


def test_a_file_without_the_separator_line_is_refused(tmp_path):
    root = write_checkout(tmp_path, ["a"])
    source = root / "data/TritonBench_T_v1/a.py"
    source.write_text(source.read_text().replace(SEPARATOR, "#" * 145))
    error = load_error(root)
    assert (error.code, error.path) == ("missing_separator", str(source))


def test_a_test_part_that_is_not_python_is_refused_with_its_file_line(tmp_path):
    root = write_checkout(tmp_path, ["a"])
    source = root / "data/TritonBench_T_v1/a.py"
    source.write_text(source.read_text().replace("def test_a():", "def test_a(:"))
    error = load_error(root)
    assert error.code == "bad_python" and "line 8" in error.diagnostics[0].message


def test_an_operator_without_prompts_is_refused(tmp_path):
    root = write_checkout(tmp_path, ["a", "b"])
    prompts = root / "data/TritonBench_T_comp_alpac_v1.json"
    prompts.write_text(json.dumps(json.loads(prompts.read_text())[:1]))
    error = load_error(root)
    assert (error.code, error.path) == ("missing_prompt", str(prompts))
    assert "no comp prompt describes b.py" in str(error)


def test_prompts_are_matched_by_description_not_position(tmp_path):
    root = write_checkout(tmp_path, ["a", "b"])
    prompts = root / "data/TritonBench_T_simp_alpac_v1.json"
    prompts.write_text(json.dumps(json.loads(prompts.read_text())[::-1]))
    bench = load_tritonbench(root)
    assert all(op.name in op.prompts.simp.instruction for op in bench.operators)


def test_missing_perf_results_leave_the_operator_and_the_upstream_names_are_read(tmp_path):
    root = write_checkout(tmp_path, ["SGD", "solve", "lu", "w"])
    results = root / "performance_metrics/perf_T/golden_results"
    (results / "SGD.json").rename(results / "SGD.py.json")
    (results / "solve.json").rename(results / "solve..json")
    (results / "lu.json").unlink()
    (root / "performance_metrics/perf_T/golden_metrics/w_perf.py").write_text("def get_input_tensors(:\n")
    bench = load_tritonbench(root)
    assert [op.name for op in bench.operators] == ["SGD", "solve", "lu", "w"]
    assert bench.operator("SGD").perf.results_file.name == "SGD.py.json"
    assert bench.operator("solve").perf.results_file.name == "solve..json"
    assert len(bench.operator("solve").perf.results) == 2 and not bench.operator("solve").perf.problems
    lu = bench.operator("lu").perf
    assert (lu.results_file, lu.results, len(lu.cases)) == (None, [], 2)
    assert [(p.code, Path(p.path).name) for p in lu.problems] == [("missing_file", "lu.json")]
    assert "operator lu has no golden results lu.json" in lu.problems[0].message
    w = bench.operator("w").perf
    assert (w.cases, w.call, [p.code for p in w.problems]) == (None, None, ["bad_python"])


def test_a_results_file_that_is_not_json_is_a_perf_problem(tmp_path):
    root = write_checkout(tmp_path, ["a"])
    (root / "performance_metrics/perf_T/golden_results/a.json").write_text("[{")
    perf = load_tritonbench(root).operator("a").perf
    assert [p.code for p in perf.problems] == ["bad_json"] and perf.results_file is None


def test_the_wrapper_is_found_when_the_file_is_named_otherwise(tmp_path):
    root = write_checkout(tmp_path, ["Adam"])
    source = root / "data/TritonBench_T_v1/Adam.py"
    source.write_text("import torch\n\ndef _norm(g):\n    return g.abs()\n\n"
                      "def simple_adam_step(params, grads, lr=0.001):\n"
                      "    return params - lr * grads / _norm(grads)\n\n" + SEPARATOR + "\nimport torch\n"
                      "torch.manual_seed(42)\n\ndef test_simple_adam_step():\n    p = torch.ones(2, device='cuda')\n"
                      "    return {'basic': simple_adam_step(p, p)}\n\ntest_results = test_simple_adam_step()\n")
    op = load_tritonbench(root).operator("Adam")
    assert (op.wrapper, op.test.function, op.test.seeded) == ("simple_adam_step", "test_simple_adam_step", True)
    assert str(op.signature) == "simple_adam_step(params, grads, lr=0.001)"
    results = getattr(load_reference_namespace(op, "cpu"), op.test.function)()
    assert torch.allclose(results["basic"], torch.full((2,), 0.999))


def test_cuda_is_replaced_in_code_and_kept_in_prose(tmp_path):
    root = write_checkout(tmp_path, ["a"])
    source = root / "data/TritonBench_T_v1/a.py"
    source.write_text('import torch\n\ndef a(x):\n    """Runs on \'cuda\'."""\n    return x.cuda() * 2\n\n'
                      f"{SEPARATOR}\n\ndef test_a():\n    x = torch.ones(2, device='cuda:0')\n"
                      "    return {'on': a(x).device.type, 'doc': a.__doc__}\n\ntest_results = test_a()\n")
    module = load_reference_namespace(load_tritonbench(root).operator("a"), "cpu")
    assert module.test_a() == {"on": "cpu", "doc": "Runs on 'cuda'."}


def test_a_test_that_redefines_the_wrapper_is_flagged(tmp_path):
    root = write_checkout(tmp_path, ["a"])
    source = root / "data/TritonBench_T_v1/a.py"
    redefinition = SEPARATOR + "\ndef a(x, alpha=1.0):\n    return x\n"
    source.write_text(source.read_text().replace(SEPARATOR + "\n", redefinition))
    assert load_tritonbench(root).operator("a").test.redefines == ["a"]


def test_cli_refuses_a_bad_root_with_exit_status_1(tmp_path, capsys):
    assert main(["tritonbench", "list", "--root", str(tmp_path)]) == 1
    assert "not_a_checkout" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Perf scripts, read statically

CONV_PERF = """\
import torch
import torch.nn as nn
from TorchBench_v1.conv import conv
from performance_utils import Performance_Metrics

class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('conv', dtype=dtype, is_backward=is_backward, **kwargs)
        self.dtype = dtype if dtype is not None else torch.float16
        self.inplace = kwargs.get('inplace', False)

    def get_input_tensors(self):
        self.input_tensors = []
        configs = []
        for i in range(5, 7):
            configs.append(((2 ** (i - 4), 3, 16, 16), 2 ** i, (3, 3)))
        for input_shape, out_channels, kernel_size in configs:
            kH, kW = kernel_size
            x = torch.randn(*input_shape, dtype=self.dtype)
            weight = torch.randn(out_channels, input_shape[1], kH, kW, dtype=self.dtype)
            target = torch.randint(0, 10, (input_shape[0],))
            self.input_tensors.append((x, weight, target, nn.Linear(4, 2), 0.5, torch.float32))

    def call_op(self, input_tuple):
        x, weight, target, model, scale, dtype = input_tuple
        if self.inplace:
            return None
        values, indices = conv(x, weight, None, stride=2 ** 1, scale=scale)
        return values
"""


def test_perf_scripts_with_configs_star_args_and_objects_are_followed(tmp_path):
    perf = load_tritonbench(write_checkout(tmp_path, ["conv"], CONV_PERF)).operator("conv").perf
    first = perf.cases[0].args
    assert [(a.shape, a.dtype) for a in first[:3]] == [([2, 3, 16, 16], "float16"), ([32, 3, 3, 3], "float16"),
                                                      ([2], "int64")]
    assert first[3].kind == "object" and first[3].source == "nn.Linear(4, 2)"
    assert [first[4].value, first[5].value] == [0.5, "torch.float32"]
    assert perf.cases[1].args[0].shape == [4, 3, 16, 16]
    assert [a.model_dump() for a in perf.call.args] == [{"kind": "input", "index": 0}, {"kind": "input", "index": 1},
                                                        {"kind": "scalar", "value": None}]
    assert {k: v.model_dump() for k, v in perf.call.keywords.items()} == {
        "stride": {"kind": "scalar", "value": 2}, "scale": {"kind": "input", "index": 4}}


def test_a_perf_script_the_reading_cannot_follow_leaves_its_cases_unresolved(tmp_path):
    script = ELEMENTWISE_PERF.replace("for i in range(2, 4):", "i = 2\n        while i < 4:\n            i += 1")
    perf = load_tritonbench(write_checkout(tmp_path, ["w"], script)).operator("w").perf
    assert perf.cases is None and perf.call is None
    assert perf.unresolved.startswith("get_input_tensors(): ") and "While" in perf.unresolved
    assert len(perf.results) == 2


def test_a_call_op_the_reading_cannot_follow_keeps_the_cases(tmp_path):
    script = ELEMENTWISE_PERF.replace("return op(input_tensor)", "return self.helper(input_tensor)")
    perf = load_tritonbench(write_checkout(tmp_path, ["h"], script)).operator("h").perf
    assert len(perf.cases) == 2 and perf.call is None
    assert perf.unresolved.startswith("call_op(): ") and "self.helper" in perf.unresolved


# ---------------------------------------------------------------------------------------------
# Pieces

@pytest.mark.parametrize("entry, rendered", [
    ("def linalg.svd(A, full_matrices=True, *, driver=None, out=None) -> (Tensor, Tensor, Tensor)\n\nArgs:\n    A",
     "linalg.svd(A, full_matrices=True, *, driver=None, out=None) -> (Tensor, Tensor, Tensor)"),
    ("fused_cross_entropy_softmax_layernorm(logits, targets, normalized_shape, *, out=None) -> Tuple[Tensor, Tensor] "
     "- logits (Tensor): Input logits",
     "fused_cross_entropy_softmax_layernorm(logits, targets, normalized_shape, *, out=None) -> Tuple[Tensor, Tensor]"),
    ("index_fill_(dim, index, value) -> Tensor\n\nArgs:\n    dim (int): dimension",
     "index_fill_(dim, index, value) -> Tensor"),
    ("def fused_lu_solve(A: Tensor, b: Tensor) -> Tensor: A: The input matrix `A` of shape `(n, n)`.",
     "fused_lu_solve(A: Tensor, b: Tensor) -> Tensor"),
    ("input (Tensor): the input tensor. dim (int or tuple of ints): the dimension", None),
    ("relu(input, inplace=False", None),
])
def test_wrapper_entry_information_yields_its_signature(entry, rendered):
    signature = parse_wrapper_entry(entry)
    assert (None if signature is None else signature.render()) == rendered


_LINE = st.one_of(
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=30),
    st.sampled_from(["#" * 145, "#" * 147, "#" * 292, "    " + "#" * 10]))


@given(st.lists(_LINE, max_size=8), st.lists(_LINE, max_size=8))
def test_split_source_splits_at_the_separator_line_only(reference_lines, test_lines):
    reference = "".join(line + "\n" for line in reference_lines)
    test = "".join(line + "\n" for line in test_lines)
    assert split_source(reference + SEPARATOR + "\n" + test) == (reference, test, len(reference_lines) + 2)


@given(st.text(string.printable.replace("#", ""), max_size=200))
def test_text_without_a_separator_line_is_refused(text):
    with pytest.raises(TritonBenchError) as info:
        split_source(text, "x.py")
    assert (info.value.code, info.value.path) == ("missing_separator", "x.py")


# ---------------------------------------------------------------------------------------------
# The upstream checkout's two file-name quirks, on sample operators


def upstream_like_checkout(root: Path, stems: list[str]) -> Path:
    """A checkout of some sample operators, files copied unchanged, with the quirks of the
    full upstream dataset: ``solve_and_add_scaled_vector..json`` (two dots; here ``sub..json``)
    and no golden results for ``grid_sample_with_affine`` (here ``exp``)."""
    records = [r for r in raw_json("data/TritonBench_T_v1.jsonl") if r["file"].removesuffix(".py") in stems]
    (root / "data/TritonBench_T_v1").mkdir(parents=True)
    (root / "data/TritonBench_T_v1.jsonl").write_text(json.dumps(records))
    descriptions = [r["description"].replace("\n", "") for r in records]
    for kind in ("simp", "comp"):
        prompts = [p for p in raw_json(f"data/TritonBench_T_{kind}_alpac_v1.json")
                   if any(p["instruction"].split("Functional Description: ")[-1].split("Wrapper Entry Information:")[0]
                          .replace("\n", "") in d for d in descriptions)]
        (root / f"data/TritonBench_T_{kind}_alpac_v1.json").write_text(json.dumps(prompts))
    for relative in ("performance_metrics/perf_T/golden_metrics", "performance_metrics/perf_T/golden_results"):
        (root / relative).mkdir(parents=True)
    for stem in stems:
        for relative in (f"data/TritonBench_T_v1/{stem}.py", f"performance_metrics/perf_T/golden_metrics/{stem}_perf.py",
                         f"performance_metrics/perf_T/golden_results/{stem}.json"):
            (root / relative).write_bytes((SAMPLE / relative).read_bytes())
    results = root / "performance_metrics/perf_T/golden_results"
    (results / "sub.json").rename(results / "sub..json")
    (results / "exp.json").unlink()
    return root


def test_an_upstream_like_checkout_lists_every_operator(sample, tmp_path, capsys):
    root = upstream_like_checkout(tmp_path, ["abs", "exp", "sub"])
    assert main(["tritonbench", "list", "--root", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split()[0] for line in lines[1:-1]) == ["abs", "exp", "sub"]
    assert lines[-1].startswith("3 operators") and "no speedup for exp" in lines[-1]
    assert main(["tritonbench", "list", "--root", str(root), "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["sub"]["perf_results"] == rows["sub"]["perf_cases"] > 0 and not rows["sub"]["perf_problems"]
    assert rows["exp"]["perf_results"] == 0 and "no golden results exp.json" in rows["exp"]["perf_problems"][0]


def test_an_operator_without_perf_results_is_evaluated_and_says_why_it_has_no_speedup(sample, tmp_path):
    from kernelgen.harness.pipeline import Settings
    from kernelgen.model.providers import make_provider
    from kernelgen.tritonbench.evaluate import evaluate_operator
    from kernelgen.tritonbench.speedup import measure_speedup
    from kernelgen.tritonbench.goldens import golden_answer

    bench = load_tritonbench(upstream_like_checkout(tmp_path, ["abs", "exp", "sub"]))
    settings = Settings(target="sm_90", gpu=False)
    for name in ("exp", "sub"):
        result = evaluate_operator(bench.operator(name), make_provider("reference"), settings)
        assert result.ok and result.extra["call_accuracy"] and result.extra["execution_accuracy"], name
    speedup = measure_speedup(bench.operator("exp"), golden_answer("exp"), settings)
    assert speedup.speedup is None and not speedup.points
    assert [(d.path, d.code) for d in speedup.problems] == [("/perf", "missing_file")]
    assert speedup.problems[0].message.startswith("not measured: ") and "exp.json" in speedup.problems[0].message


def test_only_added_constants_keep_a_rand_range():
    import ast

    from kernelgen.tritonbench.perf_script import read_perf_script

    source = '''
import torch
from TorchBench_v1.op import op

class performance_metrics(Performance_Metrics):
    def get_input_tensors(self):
        self.input_tensors = [(torch.rand(4) + 0.5, 2.0 + torch.rand(4), torch.rand(4) * 3, torch.randn(4) + 1.0)]

    def call_op(self, case):
        a, b, c, d = case
        return op(a, b, c, d)
'''
    cases, call, problem = read_perf_script(ast.parse(source))
    assert problem is None and [a.low for a in cases[0].args] == [0.5, 2.0, None, None]
