"""Small kernels that show each operation across a block (row cumsum, row sort with argsort,
top-k of a row with its indices, a histogram per block, a gather that permutes each row), shared
by the tests of every stage."""

from __future__ import annotations

from typing import Any


def o(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"op": kind, **fields}


def let(name: str, value: Any) -> dict[str, Any]:
    return o("let", name=name, value=value)


def _row_kernel(name: str, dtype: str, outputs: list[dict[str, Any]], body: list[dict[str, Any]],
                block: int = 16) -> dict[str, Any]:
    """One program per row of ``x`` [M, N] (N <= BLOCK): ``cols``, ``in_row`` and ``x_row`` (the
    row's pointer) bound before ``body``."""
    return {
        "name": name, "inputs": [{"name": "x", "dtype": dtype, "shape": ["M", "N"]}], "outputs": outputs,
        "params": [{"name": "x"}, *({"name": out["name"]} for out in outputs), {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": block}], "grid": ["M"],
        "body": [let("row", o("program_id")),
                 let("cols", o("arange", size="BLOCK")),
                 let("in_row", o("lt", lhs="cols", rhs="N")),
                 let("x_row", o("add", lhs="x", rhs=o("mul", lhs="row", rhs="N"))),
                 *body]}


def _store_row(out: str, value: Any, width: Any = "N", mask: Any = "in_row") -> dict[str, Any]:
    return o("store", ptr=o("add", lhs=o("add", lhs=out, rhs=o("mul", lhs="row", rhs=width)), rhs="cols"),
             value=value, mask=mask)


def row_cumsum(dtype: str = "f32", reverse: bool = False) -> dict[str, Any]:
    """out[r, :] = cumsum(x[r, :]) (from the end with ``reverse``), and the running max. Lanes
    past N hold the neutral element (0 for the sum, the lowest value for the max): a reverse
    scan starts there."""
    lowest = "-inf" if dtype.startswith(("f", "b")) else -2**31 if dtype == "i32" else -2**63
    return _row_kernel(f"row_cumsum_{dtype}", dtype,
                       [{"name": "out", "dtype": dtype, "shape": ["M", "N"]},
                        {"name": "peak", "dtype": dtype, "shape": ["M", "N"]}],
                       [let("v", o("load", ptr=o("add", lhs="x_row", rhs="cols"), mask="in_row")),
                        _store_row("out", o("cumsum", x="v", axis=0, reverse=reverse)),
                        _store_row("peak", o("cummax", x=o("where", cond="in_row", x="v", y=lowest), axis=0,
                                             reverse=reverse))])


def row_sort(dtype: str = "f32", descending: bool = False) -> dict[str, Any]:
    """out[r, :] = sort(x[r, :]), order[r, :] its argsort. Lanes past N read the value that
    sorts last (NaN ascending: it sorts above inf), so the first N sorted are the row's."""
    pad = ("nan" if not descending else "-inf") if dtype.startswith(("f", "b")) else \
        (2**31 - 1 if not descending else -2**31)
    return _row_kernel(f"row_sort_{dtype}", dtype,
                       [{"name": "out", "dtype": dtype, "shape": ["M", "N"]},
                        {"name": "order", "dtype": "i32", "shape": ["M", "N"]}],
                       [let("v", o("load", ptr=o("add", lhs="x_row", rhs="cols"), mask="in_row", other=pad)),
                        _store_row("out", o("sort", x="v", descending=descending)),
                        _store_row("order", o("argsort", x="v", descending=descending))])


def row_topk(dtype: str = "f32", k: int = 4) -> dict[str, Any]:
    """top[r, :] = the k largest of x[r, :], largest first; at[r, :] their indices (N >= k)."""
    kernel = _row_kernel(f"row_topk_{dtype}", dtype,
                         [{"name": "top", "dtype": dtype, "shape": ["M", k]},
                          {"name": "at", "dtype": "i32", "shape": ["M", k]}],
                         [let("v", o("load", ptr=o("add", lhs="x_row", rhs="cols"), mask="in_row", other="-inf")),
                          let("kcols", o("arange", size=k)),
                          _store_row("top", o("topk", x="v", k=k), width=k, mask=None),
                          _store_row("at", o("argtopk", x="v", k=k), width=k, mask=None)])
    for s in kernel["body"][-2:]:
        s["ptr"]["rhs"] = "kcols"
        del s["mask"]
    return kernel


def block_histogram(bins: int = 8) -> dict[str, Any]:
    """counts[p, b] = how many of the program's BLOCK values of x (in 0..bins-1) equal b."""
    return {
        "name": "block_histogram", "inputs": [{"name": "x", "dtype": "i32", "shape": ["N"]}],
        "outputs": [{"name": "counts", "dtype": "i32", "shape": [o("cdiv", lhs="N", rhs="BLOCK"), bins]}],
        "params": [{"name": "x"}, {"name": "counts"}, {"name": "N"}],
        "meta": [{"name": "BLOCK", "value": 32}], "grid": [o("cdiv", lhs="N", rhs="BLOCK")],
        "body": [let("offs", o("add", lhs=o("mul", lhs=o("program_id"), rhs="BLOCK"), rhs=o("arange", size="BLOCK"))),
                 let("ok", o("lt", lhs="offs", rhs="N")),
                 let("v", o("load", ptr=o("add", lhs="x", rhs="offs"), mask="ok")),
                 o("store", ptr=o("add", lhs=o("add", lhs="counts", rhs=o("mul", lhs=o("program_id"), rhs=bins)),
                                  rhs=o("arange", size=bins)),
                   value=o("histogram", x="v", bins=bins, mask="ok"))]}


def tile_histogram(bins: int = 8) -> dict[str, Any]:
    """block_histogram over a [ROWS, WIDTH] tile reshaped to one axis, its mask reshaped alike:
    the shape in which Triton 3.6's combine pass let each reshape reorder on its own, so lanes
    met another lane's mask bit on an H200 (kernelgen.lower.blocks.masked_histogram)."""
    rows = o("add", lhs=o("mul", lhs=o("program_id"), rhs="ROWS"), rhs=o("arange", size="ROWS"))
    offsets = o("add", lhs=o("mul", lhs=o("expand_dims", x=rows, axis=1), rhs="WIDTH"),
                rhs=o("expand_dims", x=o("arange", size="WIDTH"), axis=0))
    kernel = block_histogram(bins)
    kernel.update(name="tile_histogram", meta=[{"name": "ROWS", "value": 4}, {"name": "WIDTH", "value": 64},
                                               {"name": "BLOCK", "value": 256}])
    kernel["body"] = [let("offs", offsets), let("ok", o("lt", lhs="offs", rhs="N")),
                      let("v", o("load", ptr=o("add", lhs="x", rhs="offs"), mask="ok")),
                      let("flat", o("reshape", x="v", shape=["BLOCK"])),
                      let("flat_ok", o("reshape", x="ok", shape=["BLOCK"])),
                      kernel["body"][-1]]
    kernel["body"][-1] = {**kernel["body"][-1], "value": o("histogram", x="flat", bins=bins, mask="flat_ok")}
    return kernel


def row_gather() -> dict[str, Any]:
    """out[r, c] = x[r, perm[r, c]]: a permutation of each row read through a gather."""
    kernel = _row_kernel("row_gather", "f32", [{"name": "out", "dtype": "f32", "shape": ["M", "N"]}], [
        let("v", o("load", ptr=o("add", lhs="x_row", rhs="cols"), mask="in_row")),
        let("p", o("load", ptr=o("add", lhs=o("add", lhs="perm", rhs=o("mul", lhs="row", rhs="N")), rhs="cols"),
                   mask="in_row")),
        _store_row("out", o("gather", src=o("expand_dims", x="v", axis=0), index=o("expand_dims", x="p", axis=0),
                            axis=1)),
    ])
    kernel["inputs"].append({"name": "perm", "dtype": "i32", "shape": ["M", "N"]})
    kernel["params"].insert(1, {"name": "perm"})
    # the stored value is [1, BLOCK]: store it through a [1, BLOCK] pointer
    store = kernel["body"][-1]
    store["ptr"] = o("expand_dims", x=store["ptr"], axis=0)
    store["mask"] = o("expand_dims", x="in_row", axis=0)
    return kernel


def small_source_gather() -> dict[str, Any]:
    """out[r, c] = table[idx[r, c], c]: a 2-row table read through a [32, 32] index at 4 warps,
    the shape that aborts Triton 3.6's gather layout pass unless the source is repeated (see
    kernelgen.lower.blocks.GATHER_MIN_SOURCE)."""
    tile = o("add", lhs=o("mul", lhs=o("expand_dims", x=o("arange", size=32), axis=1), rhs=32),
             rhs=o("expand_dims", x=o("arange", size=32), axis=0))
    table = o("add", lhs=o("mul", lhs=o("expand_dims", x=o("arange", size=2), axis=1), rhs=32),
              rhs=o("expand_dims", x=o("arange", size=32), axis=0))
    return {
        "name": "small_source_gather", "num_warps": 4,
        "inputs": [{"name": "table", "dtype": "f32", "shape": [2, 32]}, {"name": "idx", "dtype": "i32", "shape": [32, 32]}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": [32, 32]}],
        "params": [{"name": "table"}, {"name": "idx"}, {"name": "out"}], "grid": [1],
        "body": [let("t", o("load", ptr=o("add", lhs="table", rhs=table))),
                 let("i", o("load", ptr=o("add", lhs="idx", rhs=tile))),
                 o("store", ptr=o("add", lhs="out", rhs=tile), value=o("gather", src="t", index="i", axis=0))]}



def gather_beside_cumsum(block: int = 4) -> dict[str, Any]:
    """out[r, c] = cumsum(x[r, :])[c] + x[r, (c + 1) % BLOCK]: a row's running sum added to the
    row rotated by a gather, on [1, BLOCK] blocks. Triton 3.6's gather layout (made for the
    source repeated to 512 elements) reaches the scan of the small row, which failed to lower
    to LLVM until scans in a kernel with a gather were walled off (see
    kernelgen.lower.blocks.walls_off_scans)."""
    kernel = _row_kernel("gather_beside_cumsum", "f32", [{"name": "out", "dtype": "f32", "shape": ["M", "N"]}], [
        let("v", o("expand_dims", x=o("load", ptr=o("add", lhs="x_row", rhs="cols"), mask="in_row", other=0.0),
                   axis=0)),
        let("next", o("expand_dims", x=o("rem", lhs=o("add", lhs="cols", rhs=1), rhs="BLOCK"), axis=0)),
        _store_row("out", o("add", lhs=o("cumsum", x="v", axis=1), rhs=o("gather", src="v", index="next", axis=1))),
    ], block=block)
    store = kernel["body"][-1]  # the stored value is [1, BLOCK]: store it through a [1, BLOCK] pointer
    store["ptr"] = o("expand_dims", x=store["ptr"], axis=0)
    store["mask"] = o("expand_dims", x="in_row", axis=0)
    return kernel
