"""A tile access is a TMA bulk copy on sm_90, in the GPU's async proxy, and Triton 3.6 orders it
against no plain access of the same global memory: within a launch an element a tile_store wrote
may be accessed again by nothing, and a tile access may not touch what a store wrote
(``tile_proxy_order``, :mod:`kernelgen.interp.proxies`). The interpreter runs accesses in order
and would show the new values; the lowering really does leave them unordered (its PTX)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.errors import InterpreterError
from kernelgen.gpu.compile import compile_kernel
from kernelgen.interp.execute import interpret
from kernelgen.interp.proxies import tile_outputs
from kernelgen.lang.parse import kernel_from_obj

CATALOGUE = Path(__file__).parent / "redteam"


def kernel(stem: str) -> dict:
    return json.loads((CATALOGUE / f"{stem}.json").read_text())["kernel"]


def scan(stem: str, m: int = 2, n: int = 600) -> torch.Tensor:
    return interpret(check(kernel_from_obj(kernel(stem))), {"x": torch.randn(m, n)})["out"]


def fill(stem: str, n: int = 700) -> dict:
    x, mask = torch.randn(n), torch.rand(n) < 0.5
    return {"x": x, "mask": mask, "value": 2.5, "want": x.masked_fill(mask, 2.5),
            "kernel": check(kernel_from_obj(kernel(stem)))}


def refused(run) -> str:
    with pytest.raises(InterpreterError) as raised:
        run()
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.code == "tile_proxy_order"
    return f"{diagnostic.path}: {diagnostic.message}"


def test_a_plain_read_of_what_a_tile_store_wrote_is_refused_at_the_read() -> None:
    found = refused(lambda: scan("row_cumsum_long_prefix_read_back_from_tma_tile_store"))
    assert found.startswith("/body/4/body/2/value: program 0 reads out[0, 255], which a tile_store wrote")


def test_a_tile_load_of_what_a_plain_store_wrote_is_refused() -> None:
    found = refused(lambda: scan("row_cumsum_long_prefix_tma_tile_load_of_plain_stores"))
    assert "which a plain store or atomic wrote earlier in this launch" in found


def test_a_plain_store_over_a_tile_stores_elements_is_refused() -> None:
    case = fill("masked_fill_tma_tile_copy_then_plain_store_fill")
    found = refused(lambda: interpret(case["kernel"], {k: case[k] for k in ("x", "mask", "value")}))
    assert found.startswith("/body/5: program 0 writes out[")


def test_a_tile_store_alone_or_one_never_read_back_is_right() -> None:
    case = fill("masked_fill_tma_tile_store_of_where_control")
    got = interpret(case["kernel"], {k: case[k] for k in ("x", "mask", "value")})["out"]
    torch.testing.assert_close(got, case["want"])
    x = torch.randn(2, 600)
    got = interpret(check(kernel_from_obj(kernel("row_cumsum_long_carried_prefix_tma_tile_store_control"))), {"x": x})
    torch.testing.assert_close(got["out"], x.cumsum(dim=1), rtol=1e-4, atol=1e-4)


def test_only_outputs_a_tile_access_names_are_tracked() -> None:
    assert tile_outputs(kernel_from_obj(kernel("row_cumsum_long_prefix_read_back_from_tma_tile_store"))) == {"out"}
    assert tile_outputs(kernel_from_obj(kernel("row_cumsum_long_prefix_read_back_after_barrier_control"))) == frozenset()


def test_the_lowering_orders_neither_the_tile_stores_writes_nor_the_plain_stores_before_a_copy() -> None:
    """The hazard is the lowering's: after a TMA store the loop waits only until the copy has read
    its shared memory (``wait_group.read``), and no fence orders global memory between the async
    and the generic proxy (``fence.proxy.async`` appears for shared memory only)."""
    back = compile_kernel(check(kernel_from_obj(kernel("row_cumsum_long_prefix_read_back_from_tma_tile_store"))),
                          "sm_90", divisible_by_16=("N",)).emit("ptx")
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in back and "cp.async.bulk.wait_group.read 0" in back
    ahead = compile_kernel(check(kernel_from_obj(kernel("row_cumsum_long_prefix_tma_tile_load_of_plain_stores"))),
                           "sm_90", divisible_by_16=("N",)).emit("ptx")
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ahead
    for ptx in (back, ahead):
        fences = [line.strip() for line in ptx.splitlines() if "fence.proxy.async" in line]  # (not the tensormap's)
        assert all("shared" in fence for fence in fences), fences
        assert not any(line.strip().startswith("cp.async.bulk.wait_group ") for line in ptx.splitlines())
