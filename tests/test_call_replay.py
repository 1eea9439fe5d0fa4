"""A wrapper called again with the same signature replays its binding (kernelgen.host.call_replay):
the replay must bind exactly as a fresh binding would, and never carry one call's data into
another's result."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgen.check.checker import check
from kernelgen.host.call_replay import call_signature, replay_of
from kernelgen.errors import HostError
from kernelgen.interp.execute import interpret
from kernelgen.lang.parse import parse_kernel
from kernelgen.tritonbench.goldens import golden_answer
from kernelgen.gpu.function import wrapper
from kernelgen.host.wrapper import bind_call

KERNELS = {name: parse_kernel(golden_answer(name)) for name in
           ("sub", "add_mean", "softmax", "sum", "log_softmax_linear", "mul_sub", "std", "leaky_relu", "matmul")}


def _tensor(gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype, layout: str) -> torch.Tensor:
    """A tensor of ``shape`` drawn from ``gen``: contiguous, transposed (same shape, other strides)
    or a one-element tensor standing for a number."""
    if layout == "transposed" and len(shape) >= 2:
        return torch.randn(shape[::-1], generator=gen).to(dtype).transpose(0, -1)
    return torch.randn(shape, generator=gen).to(dtype)


# Per golden: call templates. A template draws the call's tensors from a generator; choices
# (shapes, layouts, numbers, dtype=, dim=) are fixed by the template, so two draws with
# different generators have the same signature and different data.
def _templates():
    f32 = torch.float32
    for layout in ("contiguous", "transposed"):
        for other in ("tensor", "row", "number", "scalar_tensor"):
            for alpha in (1, 2.5, "scalar_tensor"):
                def sub(g, layout=layout, other=other, alpha=alpha):
                    x = _tensor(g, (6, 5), f32, layout)
                    y = {"tensor": lambda: _tensor(g, (6, 5), f32, layout), "row": lambda: _tensor(g, (5,), f32, layout),
                         "number": lambda: -1.5, "scalar_tensor": lambda: torch.randn((), generator=g)}[other]()
                    a = torch.randn((), generator=g) + 3 if alpha == "scalar_tensor" else alpha
                    return "sub", (x, y), {"alpha": a}
                yield sub
    for dim, keepdim, dtype in ((1, False, None), (0, True, None), (-1, False, torch.float32), ((0, 1), False, None)):
        for in_dtype in (f32, torch.float64):
            def add_mean(g, dim=dim, keepdim=keepdim, dtype=dtype, in_dtype=in_dtype):
                return "add_mean", (_tensor(g, (4, 7), in_dtype, "contiguous"), _tensor(g, (4, 7), in_dtype, "contiguous")), \
                    {"dim": dim, "keepdim": keepdim, "dtype": dtype, "alpha": 0.5}
            yield add_mean
            def softmax(g, dim=dim, dtype=dtype, in_dtype=in_dtype):
                return "softmax", (_tensor(g, (3, 4, 5), in_dtype, "contiguous"),), \
                    {"dim": dim if isinstance(dim, int) else 1, "dtype": dtype}
            yield softmax
            for layout in ("contiguous", "transposed"):
                def sum_(g, dim=dim, keepdim=keepdim, dtype=dtype, in_dtype=in_dtype, layout=layout):
                    return "sum", (_tensor(g, (5, 6), in_dtype, layout),), {"dim": dim, "keepdim": keepdim, "dtype": dtype}
                yield sum_
    for bias in (True, False):
        for batch in ((4,), (6,)):
            def log_softmax_linear(g, bias=bias, batch=batch):
                return "log_softmax_linear", (_tensor(g, batch + (8,), f32, "contiguous"), _tensor(g, (5, 8), f32, "contiguous")), \
                    {"bias": _tensor(g, (5,), f32, "contiguous") if bias else None}
            yield log_softmax_linear
    for kinds in (("tensor", "tensor", "tensor"), ("number", "tensor", "scalar_tensor"), ("number", "number", "number")):
        def mul_sub(g, kinds=kinds):
            def one(kind):
                return {"tensor": lambda: _tensor(g, (9,), f32, "contiguous"), "number": lambda: 2.0,
                        "scalar_tensor": lambda: torch.randn((), generator=g)}[kind]()
            return "mul_sub", tuple(one(k) for k in kinds), {"alpha": 3}
        yield mul_sub
    for correction in (0, 1, "scalar_tensor"):
        def std(g, correction=correction):
            c = torch.tensor(int(torch.randint(0, 3, (), generator=g))) if correction == "scalar_tensor" else correction
            return "std", (_tensor(g, (4, 9), f32, "contiguous"),), {"dim": 1, "correction": c}
        yield std
    for slope in (0.01, -0.0, 0.0, float("nan")):
        for layout in ("contiguous", "transposed"):
            def leaky_relu(g, slope=slope, layout=layout):
                return "leaky_relu", (_tensor(g, (2, 3, 4), f32, layout), slope), {}
            yield leaky_relu
    for layout in ("contiguous", "transposed"):
        def matmul(g, layout=layout):
            return "matmul", (_tensor(g, (2, 3, 4), f32, layout), _tensor(g, (2, 4, 5), f32, "contiguous")), {}
        yield matmul


TEMPLATES = list(_templates())


def _same_binding(replayed, fresh) -> None:
    assert list(replayed.args) == list(fresh.args)
    assert replayed.meta == fresh.meta and replayed.dtypes == fresh.dtypes
    for name, value in fresh.args.items():
        other = replayed.args[name]
        if isinstance(value, torch.Tensor):
            assert isinstance(other, torch.Tensor) and other.dtype == value.dtype and other.shape == value.shape
            assert torch.equal(other, value), name
        else:
            assert type(other) is type(value) and (other == value or other != other and value != value), name


@settings(max_examples=120, deadline=None)
@given(template=st.sampled_from(TEMPLATES), seeds=st.tuples(st.integers(0, 2**31), st.integers(0, 2**31)))
def test_a_replayed_binding_is_the_fresh_binding_of_the_later_call(template, seeds):
    name, args, kwargs = template(torch.Generator().manual_seed(seeds[0]))
    kernel = KERNELS[name]
    _, later_args, later_kwargs = template(torch.Generator().manual_seed(seeds[1]))
    assert call_signature(args, kwargs) == call_signature(later_args, later_kwargs)
    try:
        first = bind_call(kernel, args, kwargs)
    except HostError:
        with pytest.raises(HostError):
            bind_call(kernel, later_args, later_kwargs)
        return
    replay = replay_of(kernel, args, kwargs, first)
    fresh = bind_call(kernel, later_args, later_kwargs)
    if replay is None:
        return  # bound afresh every time: nothing to compare
    replayed = replay.bind(later_args, later_kwargs)
    _same_binding(replayed, fresh)
    # Nothing of the first call's tensors reaches the later call's binding.
    first = {a.data_ptr() for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.numel()}
    assert not any(v.data_ptr() in first for v in replayed.args.values() if isinstance(v, torch.Tensor) and v.numel())
    outputs = interpret(check(kernel, fresh.meta, fresh.dtypes or None), fresh.args)
    shaped, expected = replayed.finish(outputs), fresh.finish(outputs)
    for a, b in zip(*((x,) if not isinstance(x, tuple) else x for x in (shaped, expected))):
        assert type(a) is type(b)
        if isinstance(a, torch.Tensor):
            assert a.shape == b.shape and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)
        else:
            assert a == b or a != a and b != b


def test_what_binding_copies_or_reads_is_never_replayed():
    sub = KERNELS["sub"]
    x = torch.randn(6, 5)
    cases = [
        ((x, torch.randn(5, 6).t()), {}),  # a non-contiguous tensor is made contiguous: a copy
        ((x, torch.randn(5)), {}),  # broadcast: a copy
        ((x, x), {"alpha": torch.tensor(2.0)}),  # a number read from a tensor
        ((x, x), {"out": torch.empty(6, 5)}),  # the result goes into this call's tensor
        ((x.half(), x), {}),  # not the declared dtype: refused
    ]
    for args, kwargs in cases:
        try:
            call = bind_call(sub, args, kwargs)
        except HostError:
            continue
        assert replay_of(sub, args, kwargs, call) is None, kwargs
    softmax = KERNELS["softmax"]
    half = torch.randn(3, 4).half()
    call = bind_call(softmax, (half,), {"dim": 1, "dtype": torch.float32})  # converted: a copy
    assert replay_of(softmax, (half,), {"dim": 1, "dtype": torch.float32}, call) is None


def test_signatures_tell_apart_what_binding_reads():
    x = torch.randn(4, 4)
    assert call_signature((x,), {}) == call_signature((torch.randn(4, 4),), {})
    assert call_signature((x,), {}) != call_signature((x.t(),), {})  # strides
    assert call_signature((x,), {}) != call_signature((x.half(),), {})
    assert call_signature((x, 0.0), {}) != call_signature((x, -0.0), {})
    assert call_signature((x, 1), {}) != call_signature((x, 1.0), {}) != call_signature((x, True), {})
    assert call_signature((x, float("nan")), {}) == call_signature((x, float("nan")), {})
    assert call_signature((x,), {"dim": [0, 1]}) != call_signature((x,), {"dim": (0, 1)})
    assert call_signature((x,), {"dim": 1}) != call_signature((x,), {"dim": 0})
    assert call_signature((x, object()), {}) is None  # not keyed: bound afresh
    assert call_signature((x.to_sparse(),), {}) is None  # no strides to key


def test_a_wrapper_called_again_computes_on_the_new_call():
    """Through the wrapper (the interpreter here; the GPU path replays the same binding): each
    call's result is the reference of that call, whatever was replayed."""
    sub = wrapper(golden_answer("sub"), "sub")
    for alpha in (2.0, 3.0):  # a one-element tensor for a number: read on every call
        x, y = torch.randn(6, 5), torch.randn(6, 5)
        assert torch.allclose(sub(x, y, alpha=torch.tensor(alpha)), x - alpha * y)
    for _ in range(2):
        x, y, out = torch.randn(6, 5), torch.randn(6, 5), torch.empty(6, 5)
        assert sub(x, y, out=out) is out and torch.allclose(out, x - y)
        assert torch.allclose(sub(x, y), x - y)
    relu = wrapper(golden_answer("relu"), "relu")
    for _ in range(2):
        x = torch.randn(7)
        expected = torch.relu(x)
        assert relu(x, inplace=True) is x and torch.equal(x, expected)
    linear = wrapper(golden_answer("log_softmax_linear"), "log_softmax_linear")
    for _ in range(2):  # an omitted bias: zeros the signature decides, replayed
        x, w = torch.randn(3, 8), torch.randn(5, 8)
        assert torch.allclose(linear(x, w), torch.log_softmax(x @ w.t(), dim=-1), atol=1e-5)
    assert len(linear.kernel_function._repeats) == 1


def test_a_replayed_call_keeps_no_tensor_of_the_first_call():
    sub = wrapper(golden_answer("sub"), "sub")
    x, y = torch.randn(6, 5), torch.randn(6, 5)
    ref = weakref.ref(x)
    sub(x, y)
    assert sub.kernel_function._repeats  # remembered
    del x
    gc.collect()
    assert ref() is None


def test_a_configuration_set_later_reaches_repeated_calls():
    """A tuner times candidates through one function, setting ``force`` between them: a call
    repeating an earlier signature must run with the configuration set now."""
    from kernelgen.gpu.function import KernelFunction
    from kernelgen.gpu.tune import Config

    function = KernelFunction(parse_kernel(golden_answer("relu")))
    x = torch.randn(100)
    function(x)
    for block in (256, 512):
        function.force = Config((("BLOCK", block),), 2, 1)
        y = torch.randn(100)
        assert torch.equal(function(y), torch.relu(y))
        assert [r.config for r in function._repeats.values()] == [function.force]
        assert [dict(r.checked.meta)["BLOCK"] for r in function._repeats.values()] == [block]
    function.configs = {}
    function.force = None
    function(x)
    assert [dict(r.checked.meta)["BLOCK"] for r in function._repeats.values()] == [1024]


def test_a_sparse_tensor_is_one_clear_error():
    relu = wrapper(golden_answer("relu"), "relu")
    with pytest.raises(HostError, match="sparse_coo tensor; the kernel takes dense") as raised:
        relu(torch.randn(4).to_sparse())
    assert raised.value.diagnostics[0].path == "/inputs/0"
