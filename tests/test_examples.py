"""The example kernels in examples/: each one checks, runs in the interpreter and matches
PyTorch over tiny, odd, power-of-two and larger shapes (and with smaller block sizes, so the
loops over column and K chunks run many times and the tail masks are exercised)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelgen.check.checker import check
from kernelgen.cli import main as cli_main
from kernelgen.host.inputs import random_inputs
from kernelgen.interp.execute import interpret
from kernelgen.lang.nodes import Kernel
from kernelgen.lang.parse import parse_kernel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.json"))


def load_example(name: str) -> Kernel:
    return parse_kernel((EXAMPLES / f"{name}.json").read_text())


def run_example(name: str, sizes: dict[str, int], meta: dict[str, int] | None = None,
                seed: int = 0, scale: float = 1.0) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The example's inputs (floats scaled by ``scale``) and the interpreter's outputs."""
    kernel = load_example(name)
    checked = check(kernel, meta)
    args = random_inputs(kernel, sizes, seed=seed)
    args = {k: v * scale if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in args.items()}
    return args, interpret(checked, args)


def vector_add_reference(args: dict) -> torch.Tensor:
    return args["x"] + args["y"]


def softmax_reference(args: dict) -> torch.Tensor:
    return torch.softmax(args["x"], dim=1)


def layernorm_reference(args: dict) -> torch.Tensor:
    x = args["x"]
    return torch.nn.functional.layer_norm(x, (x.shape[1],), args["weight"], args["bias"], args["eps"])


def matmul_reference(args: dict) -> torch.Tensor:
    # f16 -> f32 is exact: the reference differs from the kernel only in summation order.
    return args["a"].float() @ args["b"].float()


ROW_SHAPES = [(1, 1), (1, 2), (3, 7), (2, 1024), (4, 1025), (17, 1000), (5, 3000), (64, 4099)]
ROW_KERNELS: dict[str, Callable[[dict], torch.Tensor]] = {
    "softmax": softmax_reference, "layernorm": layernorm_reference}


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_every_example_passes_kernelgen_check(path: Path, capsys) -> None:
    assert cli_main(["check", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{path}: ok"


def test_the_four_examples_are_there() -> None:
    assert [p.stem for p in EXAMPLE_FILES] == ["layernorm", "matmul", "softmax", "vector_add"]


@pytest.mark.parametrize("command", ["interpret", "run"])
@pytest.mark.parametrize("sizes, error", [
    (["M=4", "N=-5"], "--size N=-5: a size is an integer >= 0"),
    (["M=4", "N=8", "Q=4"], "--size Q=4: softmax has no size Q (its sizes: M, N)"),
    (["M=4", "N=eight"], "--size takes NAME=INTEGER, got 'N=eight'"),
])
def test_a_bad_size_is_one_usage_line(command: str, sizes: list[str], error: str, capsys) -> None:
    argv = [command, str(EXAMPLES / "softmax.json"), *(a for size in sizes for a in ("--size", size))]
    assert cli_main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == f"kernelgen {command}: error: {error}\n" and captured.out == ""


@pytest.mark.parametrize("n", [1, 2, 1000, 1023, 1024, 1025, 4099, 100_003])
def test_vector_add_matches_torch(n: int) -> None:
    args, out = run_example("vector_add", {"N": n})
    torch.testing.assert_close(out["out"], vector_add_reference(args), rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(ROW_KERNELS))
@pytest.mark.parametrize("m,n", ROW_SHAPES, ids=lambda v: str(v))
def test_row_kernel_matches_torch(name: str, m: int, n: int) -> None:
    args, out = run_example(name, {"M": m, "N": n})
    (result,) = out.values()
    torch.testing.assert_close(result, ROW_KERNELS[name](args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ROW_KERNELS))
@pytest.mark.parametrize("block", [1, 16, 64])
def test_row_kernel_with_small_blocks_loops_over_chunks(name: str, block: int) -> None:
    args, out = run_example(name, {"M": 6, "N": 203}, meta={"BLOCK": block}, seed=block)
    (result,) = out.values()
    torch.testing.assert_close(result, ROW_KERNELS[name](args), rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(ROW_KERNELS)), m=st.integers(1, 40), n=st.integers(1, 2500),
       block=st.sampled_from([32, 256, 1024]), seed=st.integers(0, 2**16))
def test_row_kernel_matches_torch_on_drawn_shapes(name: str, m: int, n: int, block: int, seed: int) -> None:
    args, out = run_example(name, {"M": m, "N": n}, meta={"BLOCK": block}, seed=seed)
    (result,) = out.values()
    torch.testing.assert_close(result, ROW_KERNELS[name](args), rtol=1e-5, atol=1e-5)


def test_softmax_is_stable_for_large_inputs() -> None:
    """The running maximum is subtracted before exp: inputs of size 1e4 do not overflow."""
    args, out = run_example("softmax", {"M": 8, "N": 777}, meta={"BLOCK": 128}, scale=1e4)
    assert torch.isfinite(out["out"]).all()
    torch.testing.assert_close(out["out"], softmax_reference(args), rtol=1e-5, atol=1e-5)


def test_layernorm_uses_the_eps_argument() -> None:
    """eps is a call argument, not a constant: a large eps shrinks the normalized values."""
    checked = check(load_example("layernorm"))
    x = torch.randn(3, 50, generator=torch.Generator().manual_seed(1))
    weight, bias = torch.full((50,), 2.0), torch.full((50,), 0.5)
    outputs = {}
    for eps in (1e-5, 10.0):
        outputs[eps] = interpret(checked, {"x": x, "weight": weight, "bias": bias, "eps": eps})["y"]
        expected = torch.nn.functional.layer_norm(x, (50,), weight, bias, eps)
        torch.testing.assert_close(outputs[eps], expected, rtol=1e-5, atol=1e-5)
    assert (outputs[10.0] - 0.5).abs().max() < (outputs[1e-5] - 0.5).abs().max() / 2


MATMUL_SHAPES = [(1, 1, 1), (16, 16, 16), (3, 5, 7), (64, 64, 32), (65, 33, 17), (100, 70, 200),
                 (128, 256, 64), (257, 129, 300)]


def assert_matmul_close(args: dict, c: torch.Tensor) -> None:
    k = args["a"].shape[1]
    # f32 accumulation in another order: errors grow like sqrt(K) ulps of the partial sums.
    tolerance = 1e-5 * max(k, 1) ** 0.5 * 4
    torch.testing.assert_close(c, matmul_reference(args), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("m,n,k", MATMUL_SHAPES, ids=lambda v: str(v))
def test_matmul_matches_torch(m: int, n: int, k: int) -> None:
    args, out = run_example("matmul", {"M": m, "N": n, "K": k})
    assert args["a"].dtype == torch.float16 and out["c"].dtype == torch.float32
    assert_matmul_close(args, out["c"])


@pytest.mark.parametrize("blocks", [(16, 16, 16), (32, 16, 64), (128, 64, 16)], ids=str)
def test_matmul_with_other_block_sizes(blocks: tuple[int, int, int]) -> None:
    meta = dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), blocks))
    args, out = run_example("matmul", {"M": 77, "N": 50, "K": 99}, meta=meta, seed=3)
    assert_matmul_close(args, out["c"])


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 150), n=st.integers(1, 150), k=st.integers(1, 150), seed=st.integers(0, 2**16))
def test_matmul_matches_torch_on_drawn_shapes(m: int, n: int, k: int, seed: int) -> None:
    args, out = run_example("matmul", {"M": m, "N": n, "K": k}, meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16},
                            seed=seed)
    assert_matmul_close(args, out["c"])
