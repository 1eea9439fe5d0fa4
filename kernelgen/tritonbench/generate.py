"""TritonBench-T answers -> kernels -> wrapper modules, per operator.

For each operator: the prompt (the dataset's exact instruction; for a model, wrapped with the
kernel language's reference by :func:`kernelgen.model.prompt.task_messages`), the answer (the
``reference`` provider's golden AST, or a model's through :mod:`kernelgen.model.generation` and its
cache), then parse -> check (with each choice at its default) -> lower -> compile, and a Python
module that exports the operator's wrapper running through :mod:`kernelgen.gpu.function`.

:func:`generate_operator` writes one operator's directory (``kernel.json``, ``kernel.ttir``,
``kernel.ptx``, ``kernel.cubin`` (a program of several launches: their TTIR and PTX in one file
each, ``kernel.<i>.cubin`` per launch), ``<wrapper>.py``); :func:`generate_all` writes every
operator's and the ``manifest.json`` that ``kernelgen tritonbench wrap`` reads. An operator that
fails at some stage still gets a module: one that raises at import with the outcome and the
diagnostics, so an evaluator that runs every prediction counts it as failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from kernelgen.lang import nodes as L
from kernelgen.errors import KernelgenError, Outcome
from kernelgen.task.results import GenerationInfo
from kernelgen.tritonbench.goldens import UnsupportedOperator, golden_answer
from kernelgen.tritonbench.loader import Operator, TritonBench

if TYPE_CHECKING:
    from kernelgen.gpu.compile import CompiledKernel
    from kernelgen.model.generation import GenerationCache, GenerationRecord
    from kernelgen.model.providers.base import GenerationRequest, Provider, Sampling

PromptKind = Literal["simp", "comp"]
MANIFEST_FILE = "manifest.json"

KERNELGEN_NOTE = (
    "Write it as one kernel AST of the language above, not as Triton Python: kernelgen generates "
    "the Python wrapper from the AST's host part. Declare the inputs in the order and with the "
    "names of the wrapper's parameters, {signature}, with their defaults, and use the host "
    "part's views, roles (dim, keepdim, out, inplace, choice, fixed, dtype, ints, floats), optional arguments "
    "(present), numbers, batch dims, optional dims, host values, call shapes, in-place outputs (into) "
    "and raises outputs for the arguments and checks that need them.")


def instruction(operator: Operator, kind: PromptKind) -> str:
    """The dataset's prompt, exactly as its alpaca file holds it."""
    return getattr(operator.prompts, kind).instruction


def model_prompt(operator: Operator, kind: PromptKind) -> str:
    """What a model is asked: the dataset's instruction, then how kernelgen takes the answer
    (the wrapper's parameters are the reference's, which the operator's test calls by name)."""
    signature = operator.signature.render(annotations=False)
    return instruction(operator, kind) + "\n\n" + KERNELGEN_NOTE.format(signature=signature)


def request_for(operator: Operator, kind: PromptKind, golden: str | None,
                sampling: Sampling | None = None) -> GenerationRequest:
    from kernelgen.model.prompt import task_messages
    from kernelgen.model.providers.base import GenerationRequest, Sampling

    messages = task_messages(model_prompt(operator, kind), task_id=operator.name,
                             golden=None if golden is None else json.loads(golden))
    return GenerationRequest(messages=messages, sampling=sampling or Sampling(), reference=golden)


def answer_for(operator: Operator, kind: PromptKind, provider: Provider, cache: GenerationCache | None = None,
               sampling: Sampling | None = None) -> GenerationRecord:
    """One answer for the operator. The ``reference`` provider answers with the golden AST and
    raises :class:`UnsupportedOperator` where the operator has none."""
    from kernelgen.model.generation import generate

    try:
        golden = golden_answer(operator.name)
    except UnsupportedOperator:
        if provider.name == "reference":
            raise
        golden = None
    return generate(provider, request_for(operator, kind, golden, sampling), cache)


def generation_info(record: GenerationRecord) -> GenerationInfo:
    completion = record.completion
    return GenerationInfo(latency_s=completion.latency_s, tokens_in=completion.tokens_in,
                          tokens_out=completion.tokens_out, retries=completion.retries, cached=record.cached)


# ---------------------------------------------------------------------------------------------
# Answer -> kernel


@dataclass
class Build:
    """What parse -> check -> compile made of an answer, as far as it got; ``error`` is the
    failure that stopped it."""

    answer: str
    kernel: L.Kernel | None = None
    # One per launch, in order (a program of several launches has several).
    compiled: list[CompiledKernel] | None = None
    error: KernelgenError | None = None

    def artifacts(self) -> dict[str, str]:
        from kernelgen.gpu.compile import document_text
        from kernelgen.lang.parse import kernel_to_json

        found = {"answer": self.answer}
        if self.kernel is not None:
            found["ast"] = kernel_to_json(self.kernel, indent=2)
        if self.compiled is not None:
            document = self.compiled if self.kernel.is_program else self.compiled[0]  # compiled: parsed
            for key in ("ttir", "ptx"):
                found[key] = document_text(document, key)
        return found


def build_kernel(answer: str, target: str, compile: bool = True) -> Build:
    """Parse, check (each choice at its default) and compile for ``target``; never raises for
    a bad answer (see :attr:`Build.error`)."""
    from kernelgen.check.checker import check
    from kernelgen.check.checked import launches_of
    from kernelgen.gpu.compile import compile_kernel
    from kernelgen.lang.parse import parse_kernel

    build = Build(answer)
    try:
        build.kernel = parse_kernel(answer)
        checked = check(build.kernel)
        if compile:  # a program of several launches: each launch's kernel
            build.compiled = [compile_kernel(each, target=target) for each in launches_of(checked)]
    except KernelgenError as error:
        build.error = error
    return build


# ---------------------------------------------------------------------------------------------
# Wrapper modules


def module_source(operator: Operator, answer: str, provider: str, model: str) -> str:
    """A self-contained module (given kernelgen) exporting the operator's wrapper.

    The answer (a kernel AST that parsed) is inlined as written, as a raw string: JSON never
    holds three quotes in a row (a quote inside a string is escaped, and after a string's
    closing quote comes ``,:]}`` or space), nor a character a raw string would change.
    Module-level names besides the wrapper start with ``_kernelgen``: the operator's test runs
    in this module's namespace.
    """
    return (
        f'"""TritonBench-T operator {operator.name}: the wrapper {operator.wrapper}() over a kernelgen kernel AST\n'
        f"(answer of {provider}/{model}), generated by `kernelgen tritonbench generate`.\n\n"
        "Called with CUDA tensors it runs the compiled kernel on the GPU; with CPU tensors, the\n"
        'kernel language\'s reference interpreter. It needs kernelgen installed."""\n\n'
        "from kernelgen.gpu import function as _kernelgen_runtime\n\n"
        f'_kernelgen_ast = r"""\n{answer.strip()}\n"""\n\n'
        f"{operator.wrapper} = _kernelgen_runtime.wrapper(_kernelgen_ast, {operator.wrapper!r})\n")


def failure_module_source(operator: Operator, error: KernelgenError) -> str:
    """A module that raises at import: the operator has no kernel, and says why."""
    why = f"{error.outcome.value} at {error.stage}: " + "; ".join(str(d) for d in error.diagnostics)
    message = f"kernelgen has no kernel for TritonBench-T operator {operator.name}: {why}"
    return (f'"""TritonBench-T operator {operator.name}: no wrapper, kernelgen generated no kernel\n'
            f'({error.outcome.value} at the {error.stage} stage)."""\n\n'
            f"raise RuntimeError({message!r})\n")


# ---------------------------------------------------------------------------------------------
# The output directory


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ManifestEntry(_Record):
    """One operator's generation: ``files`` maps what (``module``, ``ast``, ``ttir``, ``ptx``,
    ``cubin`` (a program: ``cubin0``, ``cubin1``...), ``answer``) to its path relative to the
    output directory."""

    name: str
    wrapper: str
    instruction: str
    outcome: Outcome
    stage: str | None = None
    diagnostics: list[dict[str, str]] = []
    files: dict[str, str]
    generation: GenerationInfo = GenerationInfo()


class Manifest(_Record):
    root: str
    provider: str
    model: str
    prompt: PromptKind
    target: str
    operators: list[ManifestEntry]

    def write(self, directory: Path) -> Path:
        path = directory / MANIFEST_FILE
        path.write_text(self.model_dump_json(indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def read(cls, directory: Path) -> Manifest:
        from pydantic import ValidationError

        path = directory / MANIFEST_FILE
        if not path.is_file():
            raise KernelgenError(f"{directory} holds no {MANIFEST_FILE}: run `kernelgen tritonbench generate "
                                 f"--out {directory}` first", path=str(path), code="no_manifest")
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise KernelgenError(f"not a manifest of `kernelgen tritonbench generate`: {exc.errors()[0]['msg']}",
                                 path=str(path), code="bad_manifest") from None


@dataclass
class Generation:
    """How every operator is generated in one run."""

    provider: Provider
    kind: PromptKind = "simp"
    target: str = "sm_90"
    cache: GenerationCache | None = None
    sampling: Sampling | None = None


def generate_operator(operator: Operator, run: Generation, out_dir: Path) -> ManifestEntry:
    """Write ``out_dir/<operator>/``: the artifacts as far as the pipeline got, and the module."""
    directory = out_dir / operator.name
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    def write(what: str, filename: str, content: str | bytes) -> None:
        path = directory / filename
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        files[what] = str(path.relative_to(out_dir))

    info = GenerationInfo()
    try:
        record = answer_for(operator, run.kind, run.provider, run.cache, run.sampling)
    except KernelgenError as error:
        build = Build("", error=error)
    else:
        info = generation_info(record)
        build = build_kernel(record.text, run.target)
    if build.kernel is None and build.answer:
        write("answer", "answer.txt", build.answer)
    texts = build.artifacts()
    if build.kernel is not None:
        write("ast", "kernel.json", texts["ast"] + "\n")
    if build.compiled:
        write("ttir", "kernel.ttir", texts["ttir"])
        write("ptx", "kernel.ptx", texts["ptx"])
        single = not build.kernel.is_program
        for index, compiled in enumerate(build.compiled):  # a program: one cubin per launch
            write("cubin" if single else f"cubin{index}", "kernel.cubin" if single else f"kernel.{index}.cubin",
                  compiled.cubin)
    if build.error is None:
        module = module_source(operator, build.answer, run.provider.name, run.provider.model)
        outcome: dict[str, Any] = {"outcome": Outcome.OK}
    else:
        module = failure_module_source(operator, build.error)
        outcome = {"outcome": build.error.outcome, "stage": build.error.stage,
                   "diagnostics": [d.to_dict() for d in build.error.diagnostics]}
    write("module", f"{operator.wrapper}.py", module)
    return ManifestEntry(name=operator.name, wrapper=operator.wrapper, instruction=instruction(operator, run.kind),
                         files=files, generation=info, **outcome)


def generate_all(bench: TritonBench, operators: list[Operator], run: Generation, out_dir: Path) -> Manifest:
    """Every operator's directory and the manifest, with a progress bar where a person watches."""
    from kernelgen.harness.progress import progress

    out_dir.mkdir(parents=True, exist_ok=True)
    entries = [generate_operator(operator, run, out_dir)
               for operator in progress(operators, description="tritonbench generate", unit="op")]
    manifest = Manifest(root=str(bench.root), provider=run.provider.name, model=run.provider.model,
                        prompt=run.kind, target=run.target, operators=entries)
    manifest.write(out_dir)
    return manifest
