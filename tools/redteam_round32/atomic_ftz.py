"""Whether an f32 atomic add on the GPU flushes subnormal operands and results to zero (the PTX ISA
says atom/red .add.f32 do; the interpreter adds in f32 keeping them). Run on a GPU machine:
    python3 tools/redteam_round32/atomic_ftz.py
Prints, per case, the value atomically added into memory holding the start value, and the result."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add(ptr, val_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.atomic_add(ptr + offs, tl.load(val_ptr + offs), sem="relaxed")


@triton.jit
def _add_f16(ptr, val_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.atomic_add(ptr + offs, tl.load(val_ptr + offs), sem="relaxed")


def main() -> None:
    tiny = 1e-40  # an f32 subnormal
    cases = [(0.0, tiny), (tiny, 0.0), (tiny, tiny), (1e-38, -9.99e-39), (0.0, 1.0)]
    start = torch.tensor([c[0] for c in cases] + [0.0] * (8 - len(cases)), dtype=torch.float32, device="cuda")
    add = torch.tensor([c[1] for c in cases] + [0.0] * (8 - len(cases)), dtype=torch.float32, device="cuda")
    expected = (start.double() + add.double()).float()
    _add[(1,)](start, add, N=8)
    for i, (s, a) in enumerate(cases):
        print(f"f32 atomic_add: {s!r} + {a!r} -> {start[i].item()!r} (in f32 without flushing: {expected[i].item()!r})")
    h_start = torch.zeros(8, dtype=torch.float16, device="cuda")
    h_add = torch.full((8,), 2.0 ** -20, dtype=torch.float16, device="cuda")  # an f16 subnormal
    _add_f16[(1,)](h_start, h_add, N=8)
    print(f"f16 atomic_add: 0 + 2**-20 -> {h_start[0].item()!r}")


if __name__ == "__main__":
    main()
