"""The runtime generated wrapper modules call: a module written by ``generate`` imported and
called like the operator (CPU tensors: the interpreter; CUDA tensors: the GPU, marked gpu)."""

from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.nn.functional as F

from kernelgen.errors import HostError, SchemaError
from kernelgen.tritonbench.generate import module_source
from kernelgen.tritonbench.goldens import golden_answer
from kernelgen.gpu.function import unfilled_outputs, wrapper



@pytest.fixture
def imported(sample, tmp_path):
    """The wrapper of a module as ``generate`` writes it, imported from its file."""
    def load(name: str):
        operator = sample.operator(name)
        path = tmp_path / f"{operator.wrapper}.py"
        path.write_text(module_source(operator, golden_answer(name), "reference", "golden"))
        spec = importlib.util.spec_from_file_location(f"generated_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, operator.wrapper)
    return load


def test_a_generated_module_exports_the_wrapper_under_its_name(imported):
    sub = imported("sub")
    assert sub.__name__ == "sub"
    x, y = torch.randn(5, 3), torch.randn(3)
    torch.testing.assert_close(sub(x, y), x - y)
    torch.testing.assert_close(sub(x, 2.0, alpha=3), x - 6.0)
    out = torch.empty(5, 3)
    assert sub(x, y, out=out) is out
    torch.testing.assert_close(out, x - y)


@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-1, False), ((0, 2), True)])
def test_rows_view_operators_match_torch(imported, dim, keepdim):
    x = torch.randn(3, 4, 5)
    torch.testing.assert_close(imported("logsumexp")(x, dim, keepdim=keepdim), torch.logsumexp(x, dim, keepdim))
    torch.testing.assert_close(imported("std")(x, dim=dim, keepdim=keepdim), torch.std(x, dim=dim, keepdim=keepdim))


def test_choices_tuples_and_inplace(imported):
    x = torch.randn(64)
    gelu = imported("gelu")
    torch.testing.assert_close(gelu(x, approximate="tanh"), F.gelu(x, approximate="tanh"))
    torch.testing.assert_close(gelu(x), F.gelu(x))
    ints = torch.randint(-50, 50, (4, 7))
    values, indices = imported("max")(ints, dim=1, keepdim=True)
    expected = torch.max(ints, 1, keepdim=True)
    assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)
    tied = torch.tensor([[3, 1, 3], [2, 2, 0]])
    assert imported("max")(tied, 1)[1].tolist() == [0, 0]
    y = torch.randn(10)
    expected = F.leaky_relu(y, 0.2)
    assert imported("leaky_relu")(y, 0.2, inplace=True) is y
    torch.testing.assert_close(y, expected)


def test_bad_calls_are_host_errors_that_name_the_argument(imported):
    gelu = imported("gelu")
    with pytest.raises(HostError) as info:
        gelu(torch.randn(4), approximate="erf")
    assert (info.value.code, info.value.path) == ("unsupported_argument", "/inputs/1")
    with pytest.raises(HostError) as info:
        imported("div")(torch.randn(3), torch.randn(3), rounding_mode="floor")
    assert info.value.code == "unsupported_argument"
    with pytest.raises(HostError) as info:
        imported("addmm")(*(torch.randn(2, 2).double() for _ in range(3)))
    assert info.value.code == "bad_arguments" and "torch.float64" in str(info.value)


def test_a_bad_ast_fails_when_the_module_is_imported():
    with pytest.raises(SchemaError):
        wrapper('{"name": "k"}', "k")


def test_unfilled_outputs_is_scoped():
    from kernelgen.gpu.function import _fill_outputs

    with unfilled_outputs():
        assert _fill_outputs.get() is False
    assert _fill_outputs.get() is True


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["sub", "logsumexp", "gelu", "normalized_cosine_similarity", "addmm", "max",
                                  "matmul", "fused_mv_sigmoid_sub", "add_mean", "log_tanh", "mul_sub"])
def test_on_cuda_tensors_the_wrapper_runs_on_the_gpu(sample, imported, name):
    from kernelgen.tritonbench.evaluate import check_accuracy

    accuracy = check_accuracy(sample.operator(name), imported(name), "cuda", seed=0)
    assert accuracy.execution_ok, (accuracy.call_failure, accuracy.mismatches)


@pytest.mark.gpu
def test_repeated_gpu_calls_reuse_the_launch_with_their_own_tensors(imported):
    """A call that repeats an earlier call's shapes reuses its launch, never its tensors."""
    sub = imported("sub")
    a, b = (torch.randn(1000, device="cuda") for _ in range(2))
    assert torch.equal(sub(a, b), a - b)
    assert torch.equal(sub(b, a), b - a)
    torch.testing.assert_close(sub(a, b, alpha=2), a - 2 * b)
    c = torch.randn(17, 64, device="cuda")
    assert torch.equal(sub(c, c[0]), c - c[0])
    assert torch.equal(sub(a, b), a - b)


@pytest.mark.gpu
def test_a_repeated_signature_replays_its_prepared_launch_on_each_calls_data():
    """Calls that repeat a signature run through the prepared launch (kernelgen.host.call_replay):
    each result is its own call's, and what binding reads of a tensor's value, an ``out=``,
    or a misaligned tensor is handled as the first call of the signature handles it."""
    sub = wrapper(golden_answer("sub"), "sub")
    for _ in range(3):
        a, b = (torch.randn(1000, device="cuda") for _ in range(2))
        assert torch.equal(sub(a, b), a - b)
    assert [r.launch is not None for r in sub.kernel_function._repeats.values()] == [True]
    for alpha in (2.0, 3.0):  # a one-element tensor for a number: read on every call
        torch.testing.assert_close(sub(a, b, alpha=torch.tensor(alpha, device="cuda")), a - alpha * b)
    for _ in range(2):
        out = torch.empty(1000, device="cuda")
        assert sub(a, b, out=out) is out and torch.equal(out, a - b)
    big = torch.randn(1001, device="cuda")
    # The replayed signature of sub(a, b) at an address the kernel was not compiled for: the
    # input is copied to aligned memory, as on the first call of a signature.
    assert torch.equal(sub(big[1:], b), big[1:] - b)
    assert torch.equal(wrapper(golden_answer("sub"), "sub")(big[1:], b), big[1:] - b)
    linear = wrapper(golden_answer("log_softmax_linear"), "log_softmax_linear")
    for _ in range(2):  # the omitted bias: zeros on the GPU, made once
        x, w = torch.randn(3, 8, device="cuda"), torch.randn(5, 8, device="cuda")
        torch.testing.assert_close(linear(x, w), torch.log_softmax(x @ w.t(), dim=-1))
    maximum = wrapper(golden_answer("max"), "max")
    for _ in range(2):  # two outputs, shaped back
        x = torch.randn(6, 33, device="cuda")
        values, indices = maximum(x, dim=1)
        expected = torch.max(x, dim=1)
        assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)
