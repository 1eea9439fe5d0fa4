"""The benchmark's options (pytest's command line and ``pytest.ini``), read and checked once.

Every option is read here, when pytest starts, and a value that cannot work is one
:class:`OptionError` naming the option, the value and what it takes (the plugin raises it as
pytest's usage error: one ``ERROR:`` line, exit status 4) instead of one traceback per case.
What can be known before a case runs is checked: numbers and their ranges, the provider's name,
a replay directory, the compile target, a GPU where ``--kg-mode gpu`` asks for one. The cases
then read typed values from :class:`RunOptions`.

A value on the command line wins over the ini key; the ini key over the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kernelgen.errors import KernelgenError

MODES = ("auto", "cpu", "gpu")
# kernelgen.gpu.tune.MODES, written here too: the options are read before any case, and importing
# the tuner (the checker, the compiler's modules) for three words would slow every pytest start.
TUNE_MODES = ("off", "quick", "full")


class OptionError(KernelgenError):
    """An option's value that no case could run with."""

    stage = "options"


@dataclass(frozen=True)
class Option:
    """One option: its flag, its ini key (also its ``dest``), help, default, and the parser
    that turns its text into a value or says what it takes (a ``ValueError``)."""

    flag: str
    ini: str
    help: str
    default: Any
    parse: Callable[[str], Any]
    switch: bool = False  # a flag without a value on the command line (``on``/``off`` in the ini)


def integer(minimum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        what = "an integer" if minimum is None else ("a positive integer" if minimum == 1 else
                                                     f"an integer >= {minimum}")
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"takes {what}") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"takes {what}")
        return value

    return parse


def number(*, positive: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        what = "a number > 0" if positive else "a number >= 0"
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"takes {what}") from None
        if not value < float("inf") or (value <= 0 if positive else value < 0):
            raise ValueError(f"takes {what}")
        return value

    return parse


def text(value: str) -> str:
    return value


def choice(*values: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in values:
            raise ValueError(f"takes {', '.join(values)}")
        return value

    return parse


def target(value: str) -> str:
    from kernelgen.gpu.compile import TARGETS

    if value not in TARGETS:
        raise ValueError(f"takes one of the targets kernelgen compiles for: {', '.join(TARGETS)}")
    return value


def base_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("takes an http:// or https:// URL")
    return value


def provider(spec: str) -> str:
    """A provider spec that names a known provider (and, for replay, an existing directory)."""
    name, _, argument = spec.partition(":")
    if name == "reference":
        return spec
    from kernelgen.model.providers import PROVIDERS

    if name not in PROVIDERS:
        raise ValueError(f"takes one of {', '.join(PROVIDERS)} (replay as replay:DIR)")
    if name == "replay" and not argument:
        raise ValueError("replay needs the directory of recorded generations: replay:DIR")
    if name == "replay" and not Path(argument).is_dir():
        raise ValueError(f"replay: no directory {argument}")
    return spec


OPTIONS: tuple[Option, ...] = (
    Option("--llm", "kg_llm", "provider of the kernels: reference, openai, nim, ollama, gemini, remote, hf, "
           "replay:DIR", "reference", provider),
    Option("--model", "kg_model", "model name sent to the provider", None, text),
    Option("--base-url", "kg_base_url", "the provider's base URL", None, base_url),
    Option("--samples", "kg_samples", "answers per task (pass@k uses them all)", 1, integer(1)),
    Option("--repair-rounds", "kg_repair_rounds", "rounds of diagnostics sent back to the model after a failure",
           0, integer(0)),
    Option("--optimize-rounds", "kg_optimize_rounds", "rounds in which a correct kernel's times and compiler "
           "facts go back to the model for a faster one (GPU mode)", 0, integer(0)),
    Option("--temperature", "kg_temperature", "sampling temperature (use > 0 with --samples > 1)", 0.0,
           number(positive=False)),
    Option("--max-tokens", "kg_max_tokens", "the most tokens an answer may have", 4096, integer(1)),
    Option("--kg-cache", "kg_cache", "the generation cache, shared by xdist workers (replay it with --llm "
           "replay:DIR); default: generations/ in $KERNELGEN_CACHE_DIR, else in ~/.cache/kernelgen", None, text),
    Option("--target", "kg_target", "compile target (sm_80, sm_86, sm_89, sm_90); default: the GPU present, "
           "else sm_90", None, target),
    Option("--kg-shapes", "kg_shapes", "hypothesis-drawn size assignments checked per case", 5, integer(1)),
    Option("--kg-seed", "kg_seed", "seed of the shape and input draws", 0, integer(0)),
    Option("--kg-mode", "kg_mode", "auto (GPU when present), cpu (interpreter, no launch) or gpu", "auto",
           choice(*MODES)),
    Option("--kg-timeout", "kg_timeout", "seconds one kernel launch (in CPU mode: its interpretation, per size "
           "assignment) may take before it counts as a timeout", 60.0,
           number(positive=True)),
    Option("--kg-tune", "kg_tune", "autotune each correct kernel's meta values, num_warps and num_stages: off, "
           "quick or full (GPU mode; a no-op without a GPU)", "quick", choice(*TUNE_MODES)),
    Option("--kg-compiled", "kg_compiled", "also time torch.compile of each task's eager code, a second baseline: "
           "on or off (GPU mode)", "on", choice("on", "off")),
    Option("--unsafe-sandbox", "kg_unsafe_sandbox", "UNSAFE: let the raw-LLM baseline run model code without its "
           "operating-system sandbox where bubblewrap cannot run (a developer's own machine only; ini: on or off)",
           "off", choice("on", "off"), switch=True),
)


@dataclass(frozen=True)
class RunOptions:
    """The checked values of :data:`OPTIONS` (``target`` None: the GPU present, else sm_90;
    ``cache`` None: the default generation cache, :func:`kernelgen.env.generation_cache_dir`)."""

    llm: str
    model: str | None
    base_url: str | None
    samples: int
    repair_rounds: int
    optimize_rounds: int
    temperature: float
    max_tokens: int
    cache: Path | None
    target: str | None
    shapes: int
    seed: int
    mode: str
    timeout_s: float
    tune: str
    compiled: bool
    unsafe_sandbox: bool = False


def read_options(command_line: Callable[[str], Any], ini: Callable[[str], Any]) -> RunOptions:
    """Every option's value (``command_line(dest)``, else ``ini(key)``, else the default),
    checked; raises :class:`OptionError` for the first that cannot work."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw, where = command_line(option.ini), option.flag
        if raw is None:
            raw, where = ini(option.ini) or None, f"{option.ini} (ini)"
        if raw is None:
            values[option.ini] = option.default
            continue
        try:
            values[option.ini] = option.parse(str(raw).strip())
        except ValueError as error:
            raise OptionError(f"{where} {raw}: {error}", code="bad_option") from None
    if values["kg_mode"] == "gpu":
        from kernelgen.gpu.devices import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        if reason:
            raise OptionError(f"--kg-mode gpu: {reason} (use --kg-mode auto or cpu)", code="bad_option")
    cache = values["kg_cache"]
    return RunOptions(llm=values["kg_llm"], model=values["kg_model"], base_url=values["kg_base_url"],
                      samples=values["kg_samples"], repair_rounds=values["kg_repair_rounds"],
                      optimize_rounds=values["kg_optimize_rounds"], temperature=values["kg_temperature"], max_tokens=values["kg_max_tokens"],
                      cache=Path(cache).expanduser() if cache else None, target=values["kg_target"],
                      shapes=values["kg_shapes"], seed=values["kg_seed"], mode=values["kg_mode"],
                      timeout_s=values["kg_timeout"], tune=values["kg_tune"],
                      compiled=values["kg_compiled"] == "on", unsafe_sandbox=values["kg_unsafe_sandbox"] == "on")
