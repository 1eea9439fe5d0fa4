"""What a generated TritonBench wrapper module runs: a kernel AST called like a Python function.

``kernelgen tritonbench generate`` writes, per operator, a module that does no more than::

    from kernelgen.gpu import function as _kernelgen_runtime
    sub = _kernelgen_runtime.wrapper(_kernelgen_ast, "sub")

A call binds its arguments like the operator's signature (:func:`kernelgen.host.wrapper.bind_call`:
defaults, keywords, numbers for tensors, views, ``out=``, ``inplace=``), checks the kernel for the
call's choices (cached per choice), then runs it. A call that repeats an earlier call's signature
replays that binding and launch (:mod:`kernelgen.host.call_replay`, :class:`~kernelgen.gpu.launch.PreparedLaunch`):

* with CUDA tensors, on the GPU, in this process, on torch's current stream (asynchronous, like
  a torch operation). The variant the launch needs (its multiple-of-16 integer params
  specialized, see :func:`kernelgen.gpu.compile.divisible_params`) is compiled for the tensors'
  device once, in this process, then kept in memory (and in the compile cache on disk).
  Outputs are pre-filled with NaN so an element no store writes is noticed, except inside
  :func:`unfilled_outputs` and :func:`prepared_outputs`, which timing uses: the fill is a memory
  pass the reference does not make (the latter has it made before each call, outside the timed
  window, so that no call finds an earlier call's results, and sets in-place arguments back).
  A precondition's flags are filled always (outside the window under :func:`prepared_outputs`).
  An aliasing output (Output ``alias``) is the caller's tensor itself where it can be
  (:func:`_alias_buffer`): an in-place call writes only what it stores;
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
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Union

from kernelgen.lang import nodes as L
from kernelgen.errors import InterpreterLimit
from kernelgen.check.checker import CheckedKernel, check
from kernelgen.host.plan import sizes_from_shapes
from kernelgen.check.checked import Checked
from kernelgen.lang.parse import parse_kernel
from kernelgen.gpu.tune import Config, Variant, bucket_label
from kernelgen.host.call_replay import Replay, Signature, call_signature, replay_of
from kernelgen.gpu.launch import DIVISIBILITY, PreparedLaunch, cuda_errors
from kernelgen.host.wrapper import BoundCall, bind_call

_fill_outputs = contextvars.ContextVar("kernelgen_tritonbench_fill_outputs", default=True)


@contextlib.contextmanager
def interpreter_limit(seconds: float) -> Iterator[_Limit]:
    """Within it, the interpreter runs of every KernelFunction share ``seconds`` of wall-clock
    time (CPU mode: an operator's whole test is one job with one limit, where each launch alone
    would have its own); the yielded object's ``reached`` holds the
    :class:`~kernelgen.errors.InterpreterLimit` of the first run past the limit or the budget."""
    limit = _Limit(time.monotonic() + seconds)
    token = _INTERPRETER_LIMIT.set(limit)
    try:
        yield limit
    finally:
        _INTERPRETER_LIMIT.reset(token)


@dataclass
class _Limit:
    deadline: float
    reached: Any = None

    def left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)


_INTERPRETER_LIMIT: contextvars.ContextVar[_Limit | None] = contextvars.ContextVar("kernelgen_interpreter_limit",
                                                                                   default=None)


@contextlib.contextmanager
def unfilled_outputs() -> Iterator[None]:
    """GPU outputs are allocated without the NaN fill inside this block (for timing)."""
    token = _fill_outputs.set(False)
    try:
        yield
    finally:
        _fill_outputs.reset(token)


@dataclass
class _Prepared:
    """What :func:`prepared_outputs` keeps: how each tensor a call allocates is made (by spec
    and device), the most of each that one call took, how many the call since the last
    ``prepare`` took, and the tensors made ready for the next call, poisoned."""

    specs: dict[tuple[Any, ...], tuple[_OutputSpec, Any]]
    most: dict[tuple[Any, ...], int]
    taken: dict[tuple[Any, ...], int]
    ready: dict[tuple[Any, ...], list[Any]]


_prepared: contextvars.ContextVar[_Prepared | None] = contextvars.ContextVar("kernelgen_prepared_outputs",
                                                                            default=None)


@contextlib.contextmanager
def prepared_outputs(restore: Callable[[], None] | None = None) -> Iterator[Callable[[], None]]:
    """For timing a wrapper's calls: inside, a call allocates no poison fill of its own (as in
    :func:`unfilled_outputs`); the yielded ``prepare``, which the timer runs before each call
    outside its window (:func:`kernelgen.gpu.timing.timed_windows`), makes the next call's
    outputs and scratch, poisoned (a precondition's flags included, so that their fill is
    outside the window as in :func:`kernelgen.gpu.case.kernel_call`), for its allocations to
    take; as many of each as one call took (a timed function may call several times). Without
    it the caching allocator hands a call the memory its previous call wrote, results a kernel
    could find and reuse, skipping its work in every repetition after the first.

    ``restore``, where given, runs first (:func:`~kernelgen.gpu.timing.restoring` of the
    calls' arguments): an in-place call (an aliasing output, ``out=``) writes its caller's
    tensors, where the next call would find the previous call's results."""
    import torch

    state = _Prepared({}, {}, {}, {})

    def prepare() -> None:
        if restore is not None:
            restore()
        for key, count in state.taken.items():
            state.most[key] = max(state.most.get(key, 0), count)
        state.taken.clear()
        state.ready = {key: [torch.full(spec.shape, spec.poison, dtype=spec.dtype, device=device)
                             for _ in range(state.most[key])]
                       for key, (spec, device) in state.specs.items()}

    token, fill = _prepared.set(state), _fill_outputs.set(False)
    try:
        yield prepare
    finally:
        _fill_outputs.reset(fill)
        _prepared.reset(token)


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


@dataclass(frozen=True)
class _OutputSpec:
    """How one tensor a call allocates is made: its shape and dtype, the value every call fills
    it with as part of its work (atomics' ``init``, a ``zero`` scratch), the poison, and whether
    it is a precondition's flags (poisoned before every call, timed or not: an element the
    kernel leaves unwritten must raise, never read as garbage)."""

    name: str
    shape: tuple[int, ...]
    dtype: Any
    always: Union[float, int, bool, None]
    poison: Union[float, int, bool]
    flag: bool = False
    alias: str | None = None  # the input whose memory an aliasing output is (:func:`_alias_buffer`)


@dataclass
class _Launch:
    """What every call with the same shapes, dtypes and numbers runs (planned once, from the
    first such call, whose tensors it does not keep): the kernel's launches (one, or a
    program's several, in order), each loaded on the call's device and prepared, and the
    outputs and scratch each call allocates."""

    launches: tuple[PreparedLaunch, ...]
    outputs: tuple[_OutputSpec, ...]
    scratch: tuple[_OutputSpec, ...]
    device: Any
    inputs: tuple[str, ...]  # the input tensors the launches read

    def __call__(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The outputs of one call with ``values`` (the bound arguments, on the device).

        The kernels were compiled assuming 16-byte aligned pointers, as Triton's are by default;
        an input that is not (a slice such as ``x[1:]``, which PyTorch takes as it is) is copied
        to fresh, aligned memory first (inputs are read-only)."""
        for name in self.inputs:
            if values[name].data_ptr() % DIVISIBILITY:
                values = {**values, name: values[name].clone()}
        outputs = _allocate(self.outputs, self.device, values)
        tensors = {**values, **outputs, **_allocate(self.scratch, self.device, values)} if self.scratch \
            else values | outputs
        for launch in self.launches:
            launch(tensors)
        return outputs


@dataclass
class _Repeat:
    """What a call that repeats an earlier call's signature runs with: the binding's replay
    (:mod:`kernelgen.host.call_replay`, constants already on the device), the checked kernel and
    configuration, and on the GPU its launch."""

    replay: Replay
    checked: Checked
    config: Config | None
    launch: _Launch | None = None


class KernelFunction:
    """A kernel AST as a callable with the operator's signature; see the module docstring.

    A call that repeats an earlier call's signature (:func:`kernelgen.host.call_replay.call_signature`:
    shapes, strides, dtypes, devices, numbers) replays its binding and, on the GPU, its launch:
    binding, checking and planning cost 80-100 µs of Python per call on the H200 (measured),
    longer than a small kernel runs, and TritonBench times calls end to end, as torch's own.
    """

    MAX_LAUNCHES = 64

    def __init__(self, kernel: L.Kernel, configs: Mapping[str, Config] | None = None,
                 force: Config | None = None) -> None:
        self.kernel = kernel
        self._repeats: dict[Signature, _Repeat] = {}
        self._bound_afresh: set[Signature] = set()  # signatures whose binding does not replay
        self.configs = dict(configs or {})
        self.force = force
        self._checked: dict[tuple[tuple[str, int], ...], CheckedKernel] = {}
        self._compiled: dict[tuple[Any, ...], Any] = {}
        self._launches: OrderedDict[tuple[Any, ...], _Launch] = OrderedDict()

    # A repeated call runs with the configuration its signature's first call chose: setting
    # either (a tuner times candidates through one function) forgets what was remembered.
    @property
    def configs(self) -> dict[str, Config]:
        return self._configs

    @configs.setter
    def configs(self, configs: Mapping[str, Config]) -> None:
        self._configs = dict(configs)
        self._repeats.clear()

    @property
    def force(self) -> Config | None:
        return self._force

    @force.setter
    def force(self, config: Config | None) -> None:
        self._force = config
        self._repeats.clear()

    def checked_for(self, meta: Mapping[str, int], dtypes: Mapping[str, str] | None = None) -> Checked:
        """The kernel checked for a call's choices and dtype binding (one variant each)."""
        key = (tuple(sorted(meta.items())), tuple(sorted((dtypes or {}).items())))
        if key not in self._checked:
            self._checked[key] = check(self.kernel, dict(meta), dict(dtypes) if dtypes else None)
        return self._checked[key]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        signature = call_signature(args, kwargs)
        repeat = self._repeats.get(signature) if signature is not None else None
        if repeat is None:
            return self._first_call(signature, args, kwargs)
        call = repeat.replay.bind(args, kwargs)
        if repeat.launch is None:
            return call.finish(self._run(repeat.checked, call.args, repeat.config))
        with cuda_errors(f"running kernel {repeat.checked.kernel.name}"):
            return call.finish(repeat.launch(call.args))

    def _first_call(self, signature: Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call with a signature not seen before (or not keyed): bound, checked, run, and
        remembered for the calls that repeat it."""
        call = bind_call(self.kernel, args, kwargs)
        config = self.config_for(call)
        checked = self.checked_for(call.meta if config is None else {**call.meta, **dict(config.meta)}, call.dtypes)
        replay = None
        if signature is not None and signature not in self._bound_afresh:
            replay = replay_of(self.kernel, args, kwargs, call)
            if replay is None and len(self._bound_afresh) < self.MAX_LAUNCHES:
                self._bound_afresh.add(signature)
        device = _cuda_device(call.args)
        if device is None:
            outputs = self._run(checked, call.args, config)
            repeat = None if replay is None else _Repeat(replay, checked, config)
        else:
            values = _on_device(call.args, device)
            with cuda_errors(f"running kernel {checked.kernel.name}"):
                launch = self._launch_for(checked, values, device, config)
                outputs = launch(values)
            repeat = None if replay is None else _Repeat(replay.with_constants(values), checked, config, launch)
        if repeat is not None:
            self._remember(signature, repeat)
        return call.finish(outputs)

    def _remember(self, signature: Signature, repeat: _Repeat) -> None:
        if len(self._repeats) >= self.MAX_LAUNCHES:
            # Dropping a launch may unload its kernel: let running launches finish first.
            if repeat.launch is not None:
                import torch

                torch.cuda.synchronize(repeat.launch.device)
            self._repeats.pop(next(iter(self._repeats)), None)
        self._repeats[signature] = repeat

    def config_for(self, call: BoundCall) -> Config | None:
        """The tuned configuration this call runs with (None: as written)."""
        if self.force is not None or not self.configs:
            return self.force
        return self.configs.get(bucket_label(*call_bucket(self.kernel, call)))

    def _run(self, checked: Checked, values: Mapping[str, Any], config: Config | None = None) -> dict[str, Any]:
        """The kernel's outputs for bound arguments: on the GPU of their CUDA tensors, else
        with the interpreter."""
        from kernelgen.interp.execute import execute_call

        device = _cuda_device(values)
        if device is None:
            limit = _INTERPRETER_LIMIT.get()
            try:
                return execute_call(checked, values, timeout_s=None if limit is None else limit.left()).outputs
            except InterpreterLimit as error:
                if limit is not None:
                    limit.reached = error  # a caller (a test) may swallow it; the limit is still reached
                raise
        values = _on_device(values, device)
        with cuda_errors(f"running kernel {checked.kernel.name}"):
            return self._launch_for(checked, values, device, config)(values)

    def _launch_for(self, checked: Checked, values: Mapping[str, Any], device: Any,
                    config: Config | None = None) -> _Launch:
        import torch

        # Numbers by type and, for floats, by float.hex: as values, -0.0 == 0.0 and NaN != NaN.
        warps_stages = None if config is None else (config.num_warps, config.num_stages)
        key = (tuple(sorted(checked.meta.items())), _dtypes_of(checked), device.index, warps_stages,
               *((name, tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor)
                 else (name, type(v), v.hex() if isinstance(v, float) else v)
                 for name, v in values.items()))
        launch = self._launches.get(key)
        if launch is None:
            launch = self._plan_launch(checked, values, device, warps_stages)
            self._launches[key] = launch
            if len(self._launches) > self.MAX_LAUNCHES:
                # Dropping a launch may unload its kernel: let running launches finish first.
                torch.cuda.synchronize(device)
                self._launches.popitem(last=False)
        else:
            self._launches.move_to_end(key)
        return launch

    def _plan_launch(self, checked: Checked, values: Mapping[str, Any], device: Any,
                     warps_stages: tuple[int, int] | None) -> _Launch:
        """Plan, compile (the variant each launch needs, in this process) and load a call's
        launches; a program's launches share its scratch, allocated per call."""
        import torch

        from kernelgen.gpu.compile import compile_document, divisible_params
        from kernelgen.host.plan import plan_sequence
        from kernelgen.gpu.launch import argument_sources, load_kernel

        plans = plan_sequence(checked, values)
        if checked.kernel.is_program:
            major, minor = torch.cuda.get_device_capability(device)
            # in this process, as _compiled_for explains
            compiled = compile_document(checked, target=f"sm_{major}{minor}", plans=plans, in_process=True)
        else:
            compiled = [self._compiled_for(checked, divisible_params(plans[0]), device, warps_stages)]
        launches = tuple(load_kernel(kernel, device.index).prepare(plan.grid, argument_sources(kernel, plan))
                         for kernel, plan in zip(compiled, plans))
        plan = plans[0]  # the launches share the host values: every plan gives the same shapes
        zero = {s.name: s.zero for s in checked.kernel.scratch}
        returned = {out.name for out in checked.kernel.outputs}
        outputs, scratch = [], []
        for out in plan.kernel.outputs:
            spec = _output_spec(out, plan.output_shapes[out.name], zero.get(out.name))
            if out.name in returned:
                outputs.append(spec)
            elif out.name in zero:
                scratch.append(spec)
        made = {spec.name for spec in (*outputs, *scratch)}
        inputs = tuple(dict.fromkeys(name for launch in launches for name in launch.tensor_names if name not in made))
        return _Launch(launches, tuple(outputs), tuple(scratch), device, inputs)

    def _compiled_for(self, checked: CheckedKernel, divisible: tuple[str, ...], device: Any,
                      warps_stages: tuple[int, int] | None = None) -> Any:
        import torch

        from kernelgen.gpu.compile import compile_kernel

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


def _on_device(values: Mapping[str, Any], device: Any) -> dict[str, Any]:
    """The bound arguments on ``device``, contiguous: numbers bound to tensor inputs became CPU
    tensors."""
    import torch

    return {name: value.to(device).contiguous() if isinstance(value, torch.Tensor) else value
            for name, value in values.items()}


def _output_spec(out: L.Output, shape: Any, zero: bool | None = None) -> _OutputSpec:
    """How an output (or, with ``zero`` not None, a scratch) of a plan's kernel is allocated."""
    from kernelgen.host.plan import torch_dtype
    from kernelgen.interp.execute import initial_fill, poison

    always = 0 if zero else initial_fill(out) if out.init is not None else None
    return _OutputSpec(out.name, tuple(shape), torch_dtype(out.dtype), always, poison(out.dtype),
                       out.raises is not None, out.into if out.alias else None)


def _allocate(specs: tuple[_OutputSpec, ...], device: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """A call's outputs (or scratch), filled as the module docstring says; an aliasing output
    is its input's memory (:func:`_alias_buffer`), neither allocated nor filled."""
    import torch

    fill, prepared = _fill_outputs.get(), _prepared.get()
    outputs = {}
    for spec in specs:
        if spec.alias is not None:
            outputs[spec.name] = _alias_buffer(values, spec.alias)
            continue
        tensor = None
        if prepared is not None:
            key = (spec.name, spec.shape, spec.dtype, str(device))
            prepared.specs[key] = (spec, device)
            prepared.taken[key] = prepared.taken.get(key, 0) + 1
            ready = prepared.ready.get(key)
            tensor = ready.pop() if ready else None
        poisoned = tensor is not None
        if tensor is None:
            tensor = torch.empty(spec.shape, dtype=spec.dtype, device=device)
        if spec.always is not None:
            tensor.fill_(spec.always)
        elif fill or (spec.flag and not poisoned):
            tensor.fill_(spec.poison)
        outputs[spec.name] = tensor
    return outputs


def _alias_buffer(values: Mapping[str, Any], name: str) -> Any:
    """The memory an aliasing output is: the bound input ``name`` itself (the caller's tensor
    where binding copied nothing: the call changes it in place, and the wrapper's finish has
    nothing to copy back), or a copy of it where the kernel could not take it as it is: not
    16-byte aligned as the compiled kernel assumes, or overlapping another tensor argument (the
    kernel reads those as the caller passed them). Bound tensors are contiguous: each spans
    numel elements from its data_ptr (the emitted launcher's ``_alias_buffer`` tests the same)."""
    import torch

    tensor = values[name]

    def span(t: Any) -> tuple[int, int]:
        return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()

    start, end = span(tensor)
    others = [span(v) for key, v in values.items() if key != name and isinstance(v, torch.Tensor) and v.numel()]
    if tensor.data_ptr() % DIVISIBILITY or (tensor.numel() and any(low < end and start < high for low, high in others)):
        return tensor.clone()
    return tensor


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
