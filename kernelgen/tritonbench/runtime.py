"""What a generated TritonBench wrapper module runs: a kernel AST called like a Python function.

``kernelgen tritonbench generate`` writes, per operator, a module that does no more than::

    from kernelgen.tritonbench import runtime as _kernelgen_runtime
    sub = _kernelgen_runtime.wrapper(_kernelgen_ast, "sub")

A call binds its arguments like the operator's signature (:func:`kernelgen.wrapper.bind_call`:
defaults, keywords, numbers for tensors, views, ``out=``, ``inplace=``), checks the kernel for the
call's choices (cached per choice), then runs it:

* with CUDA tensors, on the GPU, in this process, on torch's current stream (asynchronous, like
  a torch operation). The variant the launch needs (its multiple-of-16 integer params
  specialized, see :func:`kernelgen.compile.divisible_params`) is compiled for the tensors'
  device once, in this process, then kept in memory (and in the compile cache on disk).
  Outputs are pre-filled with NaN so an element no store writes is noticed, except inside
  :func:`unfilled_outputs`, which timing uses: the fill is a memory pass the reference does
  not make;
* otherwise with the reference interpreter (CPU tensors, numbers).

A wrapper may carry tuned configurations (``--kg-tune``, :mod:`kernelgen.tritonbench.tuning`):
one per perf-size bucket (:func:`call_bucket`, the sizes the kernel sees rounded up to powers
of two, and the call's variant), used by the calls that fall in that bucket; or one forced on
every call (a candidate being timed or verified). A call in no tuned bucket runs as written.

Every failure is a :class:`~kernelgen.errors.KernelgenError` (a bad call is a ``HostError``
naming the argument), never a bare traceback from inside the harness.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from kernelgen import language as L
from kernelgen.check import CheckedKernel, check
from kernelgen.host import sizes_from_shapes
from kernelgen.checked import Checked
from kernelgen.parse import parse_kernel
from kernelgen.tune import Config, Variant, bucket_label
from kernelgen.wrapper import BoundCall, bind_call

_fill_outputs = contextvars.ContextVar("kernelgen_tritonbench_fill_outputs", default=True)


@contextlib.contextmanager
def unfilled_outputs() -> Iterator[None]:
    """GPU outputs are allocated without the NaN fill inside this block (for timing)."""
    token = _fill_outputs.set(False)
    try:
        yield
    finally:
        _fill_outputs.reset(token)


def _cuda_device(values: Mapping[str, Any]) -> Any:
    """The device of the first CUDA tensor among the kernel's arguments, else None."""
    import torch

    for value in values.values():
        if isinstance(value, torch.Tensor) and value.is_cuda:
            return value.device
    return None


def call_bucket(kernel: L.Kernel, call: BoundCall) -> tuple[dict[str, int], Variant]:
    """The sizes a bound call gives the kernel (after its view) and the variant it selects:
    what a tuned configuration is chosen by (one function, for the tuner and the wrapper)."""
    shapes = {name: tuple(value.shape) for name, value in call.args.items() if hasattr(value, "shape")}
    return sizes_from_shapes(kernel, shapes), Variant.of(call.meta, call.dtypes)


@dataclass
class _Launch:
    """What every call with the same shapes, dtypes and numbers shares (planned once, from
    the first such call, whose tensors it does not keep): the grid, the output shapes, the
    tensor inputs, the kernel variant loaded on the call's device and where each of its
    arguments comes from (:func:`kernelgen.launch.argument_sources`)."""

    grid: tuple[int, int, int]
    output_shapes: dict[str, tuple[int, ...]]
    inputs: tuple[str, ...]
    loaded: Any
    sources: list[tuple[str, Any]]


class KernelFunction:
    """A kernel AST as a callable with the operator's signature; see the module docstring.

    A GPU call that repeats an earlier call's shapes, dtypes and numbers reuses its launch
    (plan and loaded kernel): binding and planning cost tens of microseconds of Python, as
    long as a small kernel runs, and TritonBench times calls end to end, as torch's own.
    """

    MAX_LAUNCHES = 64

    def __init__(self, kernel: L.Kernel, configs: Mapping[str, Config] | None = None,
                 force: Config | None = None) -> None:
        self.kernel = kernel
        self.configs = dict(configs or {})
        self.force = force
        self._checked: dict[tuple[tuple[str, int], ...], CheckedKernel] = {}
        self._compiled: dict[tuple[Any, ...], Any] = {}
        self._launches: OrderedDict[tuple[Any, ...], _Launch] = OrderedDict()

    def checked_for(self, meta: Mapping[str, int], dtypes: Mapping[str, str] | None = None) -> Checked:
        """The kernel checked for a call's choices and dtype binding (one variant each)."""
        key = (tuple(sorted(meta.items())), tuple(sorted((dtypes or {}).items())))
        if key not in self._checked:
            self._checked[key] = check(self.kernel, dict(meta), dict(dtypes) if dtypes else None)
        return self._checked[key]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from kernelgen.interpret import interpret

        call = bind_call(self.kernel, args, kwargs)
        config = self.config_for(call)
        checked = self.checked_for(call.meta if config is None else {**call.meta, **dict(config.meta)}, call.dtypes)
        device = _cuda_device(call.args)
        outputs = interpret(checked, call.args) if device is None else \
            self._run_on_gpu(checked, call.args, device, config)
        return call.finish(outputs)

    def config_for(self, call: BoundCall) -> Config | None:
        """The tuned configuration this call runs with (None: as written)."""
        if self.force is not None or not self.configs:
            return self.force
        return self.configs.get(bucket_label(*call_bucket(self.kernel, call)))

    def _run_on_gpu(self, checked: Checked, values: Mapping[str, Any], device: Any,
                    config: Config | None = None) -> dict[str, Any]:
        import torch

        from kernelgen.host import torch_dtype
        from kernelgen.interpret import initial_fill, poison
        from kernelgen.launch import cuda_errors, resolve_arguments

        # Numbers bound to tensor inputs became CPU tensors: they join the call's device.
        moved = {name: value.to(device) if isinstance(value, torch.Tensor) else value
                 for name, value in values.items()}
        if checked.kernel.is_program:
            return self._run_program_on_gpu(checked, moved, device)
        with cuda_errors(f"running kernel {checked.kernel.name}"):
            launch = self._launch_for(checked, moved, device, config)
            tensors = {name: moved[name].contiguous() for name in launch.inputs}
            outputs = {}
            for out in checked.kernel.outputs:
                tensor = torch.empty(launch.output_shapes[out.name], dtype=torch_dtype(out.dtype), device=device)
                if out.init is not None:  # what atomics accumulate onto: always filled
                    outputs[out.name] = tensor.fill_(initial_fill(out))
                else:
                    # A precondition's flags are filled even when timing: an element the kernel
                    # leaves unwritten must raise, never read as garbage.
                    fill = _fill_outputs.get() or out.raises is not None
                    outputs[out.name] = tensor.fill_(poison(out.dtype)) if fill else tensor
            launch.loaded.launch(launch.grid, resolve_arguments(launch.sources, tensors | outputs))
        return outputs

    def _run_program_on_gpu(self, checked: Checked, values: Mapping[str, Any], device: Any) -> dict[str, Any]:
        """A program of several launches: each launch's variant compiled (the compile cache
        answers repeated calls), launched in order with scratch allocated for this call."""
        import torch

        from kernelgen.compile import compile_document
        from kernelgen.host import plan_sequence
        from kernelgen.interpret import allocate_outputs, allocate_scratch
        from kernelgen.launch import cuda_errors, sequence_runner

        with cuda_errors(f"running kernel {checked.kernel.name}"), torch.cuda.device(device):
            plans = plan_sequence(checked, values)
            major, minor = torch.cuda.get_device_capability(device)
            # in this process, as _compiled_for explains
            compiled = compile_document(checked, target=f"sm_{major}{minor}", plans=plans, in_process=True)
            names = {out.name for out in checked.kernel.outputs}
            outputs = {n: t for n, t in allocate_outputs(plans[0], device=device).items() if n in names}
            sequence_runner(compiled, plans, outputs, lambda: allocate_scratch(checked, plans[0], device))()
        return outputs

    def _launch_for(self, checked: CheckedKernel, values: Mapping[str, Any], device: Any,
                    config: Config | None = None) -> _Launch:
        import torch

        from kernelgen.compile import divisible_params
        from kernelgen.host import plan_launch
        from kernelgen.launch import argument_sources, load_kernel

        # Numbers by type and, for floats, by float.hex: as values, -0.0 == 0.0 and NaN != NaN.
        warps_stages = None if config is None else (config.num_warps, config.num_stages)
        key = (tuple(sorted(checked.meta.items())), _dtypes_of(checked), device.index, warps_stages,
               *((name, tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor)
                 else (name, type(v), v.hex() if isinstance(v, float) else v)
                 for name, v in values.items()))
        launch = self._launches.get(key)
        if launch is None:
            plan = plan_launch(checked, values)
            compiled = self._compiled_for(checked, divisible_params(plan), device, warps_stages)
            launch = _Launch(plan.grid, plan.output_shapes, tuple(plan.inputs), load_kernel(compiled, device.index),
                             argument_sources(compiled, plan))
            self._launches[key] = launch
            if len(self._launches) > self.MAX_LAUNCHES:
                # Dropping a launch may unload its kernel: let running launches finish first.
                torch.cuda.synchronize(device)
                self._launches.popitem(last=False)
        else:
            self._launches.move_to_end(key)
        return launch

    def _compiled_for(self, checked: CheckedKernel, divisible: tuple[str, ...], device: Any,
                      warps_stages: tuple[int, int] | None = None) -> Any:
        import torch

        from kernelgen.compile import compile_kernel

        major, minor = torch.cuda.get_device_capability(device)
        target = f"sm_{major}{minor}"
        key = (tuple(sorted(checked.meta.items())), divisible, target, _dtypes_of(checked), warps_stages)
        num_warps, num_stages = warps_stages or (None, None)
        if key not in self._compiled:
            # In this process, as Triton's JIT compiles: the caller is often a script (TritonBench's
            # evaluator runs prediction + test as one), and a spawned compile worker would import
            # that script again while starting, running its test, or the harness's executor
            # child, a daemon, which may not start processes at all.
            self._compiled[key] = compile_kernel(checked, target=target, num_warps=num_warps, num_stages=num_stages,
                                                 divisible_by_16=divisible, in_process=True)
        return self._compiled[key]


def _dtypes_of(checked: CheckedKernel) -> tuple[str | None, ...]:
    """The variant's dtypes: a generic kernel's variants differ in these alone."""
    return tuple(i.dtype for i in checked.kernel.inputs) + tuple(o.dtype for o in checked.kernel.outputs)


def wrapper(ast_json: str, name: str, configs: Mapping[str, Config] | None = None,
            force: Config | None = None) -> Callable[..., Any]:
    """The operator's wrapper: the kernel AST ``ast_json`` as a function called ``name``
    (``configs``: tuned configurations by bucket label; ``force``: one for every call).

    The AST is parsed now (a :class:`~kernelgen.errors.SchemaError` for bad text); it is
    checked on the first call with each choice, and compiled on the first GPU call of each
    variant.
    """
    function = KernelFunction(parse_kernel(ast_json), configs, force)

    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    call.kernel_function = function  # type: ignore[attr-defined] - asked which configuration a call gets
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{name}: the kernel {function.kernel.name!r} (a kernelgen AST) with the operator's signature"
    return call
