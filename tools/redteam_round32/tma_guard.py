"""Does a 1-D TMA tile store write past its descriptor's shape? Run on a GPU machine:
    python3 tools/redteam_round32/tma_guard.py
A Triton kernel stores [BLOCK] tiles through tl.make_tensor_descriptor(out, shape=[N]) into a
buffer with 256-element guard bands either side (NaN); for each N it prints how many guard
elements changed (0 expected: TMA clips a box at the tensor's shape)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _tile_store(out_ptr, N, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(out_ptr, shape=[N], strides=[1], block_shape=[BLOCK])
    desc.store([tl.program_id(0) * BLOCK], tl.full([BLOCK], 1.0, tl.float32))


def main() -> None:
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    guard = 256
    for n in (1, 3, 4, 5, 100, 255, 256, 257, 1000, 4097, 65537):
        buffer = torch.full((n + 2 * guard,), float("nan"), dtype=torch.float32, device="cuda")
        out = buffer[guard:guard + n]
        _tile_store[(triton.cdiv(n, 256),)](out, n, BLOCK=256)
        torch.cuda.synchronize()
        changed = int((~buffer[:guard].isnan()).sum()) + int((~buffer[guard + n:].isnan()).sum())
        written = int((out == 1.0).sum())
        print(f"N={n}: {written} of {n} written, {changed} guard elements changed")


if __name__ == "__main__":
    main()
