"""``kernelgen tritonbench generate`` and ``wrap`` on the 30-operator sample (CPU).

The predictions are checked the way TritonBench's ``EVAL/eval_T/0_call_acc.py`` reads them: the
instruction is the first key of each line's object and maps, by its Functional Description, to
exactly one record's file; ``predict`` followed by a line of 146 ``#`` and the operator's test
part is the program it runs (here with ``'cuda'`` replaced by ``'cpu'``, in this process).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TRITONBENCH_SAMPLE
import torch

from kernelgen.cli import main
from kernelgen.tritonbench.generate import Manifest
from kernelgen.tritonbench.goldens import golden_answer, track_directory
from kernelgen.tritonbench.loader import SEPARATOR

REPO = Path(__file__).resolve().parents[1]
SAMPLE = TRITONBENCH_SAMPLE


@pytest.fixture(scope="module")
def generated(sample, tmp_path_factory):
    out = tmp_path_factory.mktemp("tritonbench")
    assert main(["tritonbench", "generate", "--root", str(SAMPLE), "--out", str(out), "--llm", "reference",
                 "--no-cache", "--target", "sm_90"]) == 0
    assert main(["tritonbench", "wrap", str(out)]) == 0
    return out


def predictions(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def dataset_file_of(instruction: str) -> str:
    """The evaluator's own matching of an instruction to an operator file."""
    records = json.loads((SAMPLE / "data" / "TritonBench_T_v1.jsonl").read_text(encoding="utf-8"))
    description = instruction.split("Functional Description: ")[-1].split("Wrapper Entry Information:")[0]
    files = [r["file"] for r in records if description.replace("\n", "") in r["description"].replace("\n", "")]
    assert len(files) == 1, files
    return files[0]


def test_every_operator_has_a_golden(sample):
    directory = track_directory()
    goldens = {p.stem for p in (directory / "golden").glob("*.json")}
    assert goldens == {op.name for op in sample.operators}
    assert not (directory / "unsupported.json").exists()


def test_an_untriaged_operator_is_unsupported_with_its_own_code():
    from kernelgen.tritonbench.goldens import UnsupportedOperator

    with pytest.raises(UnsupportedOperator) as info:
        golden_answer("no_such_operator")
    assert info.value.code == "no_golden" and info.value.outcome.value == "unsupported"


def test_predictions_have_exactly_the_evaluators_fields_with_the_exact_instructions(generated, sample):
    lines = predictions(generated)
    assert len(lines) == len(sample.operators) == 30
    dataset = {p["instruction"] for p in json.loads((SAMPLE / "data" / "TritonBench_T_simp_alpac_v1.json").read_text())}
    for line, operator in zip(lines, sample.operators):
        assert list(line) == ["instruction", "predict"]
        assert line["instruction"] in dataset
        assert line["instruction"] == operator.prompts.simp.instruction
        assert dataset_file_of(line["instruction"]) == operator.file
        assert "```python" not in line["predict"]
    raw = (generated / "predictions.jsonl").read_bytes()
    assert raw.isascii() and raw.endswith(b"\n") and raw.count(b"\n") == 30


def test_the_evaluators_program_runs_for_every_supported_operator(generated, sample):
    ran = []
    for line in predictions(generated):
        operator = sample.operator(Path(dataset_file_of(line["instruction"])).stem)
        test_part = operator.path.read_text(encoding="utf-8").split(SEPARATOR)[-1].replace("'cuda'", "'cpu'")
        program = line["predict"] + "\n" + SEPARATOR + "\n" + test_part
        namespace = {"__name__": "__main__"}
        torch.manual_seed(0)
        exec(compile(program, operator.file, "exec"), namespace)
        assert isinstance(namespace["test_results"], dict) and namespace["test_results"]
        ran.append(operator.name)
    assert len(ran) == 30


@pytest.mark.gpu
def test_the_evaluators_programs_run_on_the_gpu_as_it_runs_them(generated, sample, tmp_path):
    """0_call_acc.py's own procedure, unmodified tests on 'cuda': each program a file, run by
    Python in a process of its own; the call is accurate when it exits with status 0."""
    import os
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    def run(line: dict) -> tuple[str, subprocess.CompletedProcess]:
        operator = sample.operator(Path(dataset_file_of(line["instruction"])).stem)
        test_part = operator.path.read_text(encoding="utf-8").split(SEPARATOR)[-1]
        program = tmp_path / operator.file
        program.write_text(line["predict"] + "\n" + SEPARATOR + "\n" + test_part, encoding="utf-8")
        return operator.name, subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                                             env=environment, timeout=600)

    with ThreadPoolExecutor(max_workers=4) as pool:
        finished = dict(pool.map(run, predictions(generated)))
    for name, process in finished.items():
        assert process.returncode == 0, (name, process.stderr[-2000:])


def test_manifest_lists_every_operator_with_its_outcome_and_files(generated, sample):
    manifest = Manifest.read(generated)
    assert [e.name for e in manifest.operators] == [op.name for op in sample.operators]
    assert (manifest.provider, manifest.prompt, manifest.target) == ("reference", "simp", "sm_90")
    for entry in manifest.operators:
        assert (generated / entry.files["module"]).name == f"{entry.wrapper}.py"
        assert entry.outcome.value == "ok", entry
        cubins = sorted(k for k in entry.files if k.startswith("cubin"))  # a program: one per launch
        assert cubins == ["cubin"] or cubins == [f"cubin{i}" for i in range(len(cubins))] and len(cubins) > 1
        assert set(entry.files) - set(cubins) == {"module", "ast", "ttir", "ptx"}
        assert all((generated / entry.files[c]).read_bytes()[:4] == b"\x7fELF" for c in cubins)
        assert ".target sm_90" in (generated / entry.files["ptx"]).read_text()
        assert json.loads((generated / entry.files["ast"]).read_text()) == json.loads(golden_answer(entry.name))


def test_comp_prompts_and_a_subset(sample, tmp_path):
    assert main(["tritonbench", "generate", "--root", str(SAMPLE), "--out", str(tmp_path), "--llm", "reference",
                 "--no-cache", "--prompt", "comp", "--ops", "sub,softmax"]) == 0
    assert main(["tritonbench", "wrap", str(tmp_path)]) == 0
    lines = predictions(tmp_path)
    assert [line["instruction"] for line in lines] == [sample.operator(n).prompts.comp.instruction
                                                       for n in ("sub", "softmax")]


def test_bad_requests_are_reported_not_raised(sample, tmp_path, capsys):
    assert main(["tritonbench", "generate", "--root", str(SAMPLE), "--out", str(tmp_path), "--ops", "sub,nope"]) == 1
    assert "no operator nope" in capsys.readouterr().err
    assert main(["tritonbench", "wrap", str(tmp_path / "empty")]) == 1
    assert "no manifest.json" in capsys.readouterr().err
