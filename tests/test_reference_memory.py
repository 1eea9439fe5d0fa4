"""The references' GPU memory at their largest draws (kernelgen/task/reference_memory.py)."""

from __future__ import annotations

import pytest

from kernelgen.task.reference_memory import REFERENCE_BYTE_BUDGET, largest_draw_peaks, reference_peak
from kernelgen.task.spec import get_task, load_tasks

TASKS = load_tasks()


def _with_reference(task_id: str, source: str):
    task = get_task(task_id)
    return task.model_copy(update={"reference": source})


def test_a_peak_counts_what_is_alive_at_once():
    """row_sum's x is [M, N] f32: a reference making x * 2 and x * 3 (M*N*4 bytes each) and then
    their sum holds three at once; one that sums each product before the next holds one (and two
    rows: the first sum and the second's)."""
    sizes = {"M": 1024, "N": 512}
    x, row = 1024 * 512 * 4, 1024 * 4
    both = _with_reference("row_sum", "def reference(x):\n    y = x * 2\n    z = x * 3\n    return (y + z).sum(dim=1)\n")
    assert reference_peak(both, sizes).nbytes == x + 3 * x + row
    one = _with_reference("row_sum", "def reference(x):\n    y = (x * 2).sum(dim=1)\n    return y + (x * 3).sum(dim=1)\n")
    assert reference_peak(one, sizes).nbytes == x + x + 2 * row


def test_an_input_returned_or_changed_in_place_counts_once():
    sizes = {"M": 256, "N": 256}
    same = _with_reference("row_sum", "def reference(x):\n    return x.mul_(2)[:, 0]\n")
    assert reference_peak(same, sizes).nbytes == 256 * 256 * 4


def test_a_reference_that_reads_values_is_not_measured_and_says_why():
    reads = _with_reference("row_sum", "def reference(x):\n    return x.sum(dim=1) * float(x.max())\n")
    peak = reference_peak(reads, {"M": 4, "N": 4})
    assert peak.nbytes is None and "meta" in peak.why_not


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_every_reference_fits_its_share_of_an_80_gb_card_at_its_largest_draws(task):
    """alibi_attention_f16's reference held every head's S x S scores in f64 at once, 74 GiB at
    its largest draw: a correct kernel got CUDA out of memory on an H100 (2026-12-05)."""
    over = [p for p in largest_draw_peaks(task) if p.nbytes is not None and p.nbytes > REFERENCE_BYTE_BUDGET]
    assert not over, "; ".join(f"{p.task} at {p.sizes}: {p.nbytes / 2**30:.1f} GiB" for p in over)


def test_sdpa_over_every_head_at_once_in_f64_is_past_the_budget():
    """The reference alibi_attention_f16 had until 2026-12-05, at B = 4, H = 16, S = 8192."""
    whole = _with_reference("alibi_attention_f16", (
        "def reference(q, k, v, slopes):\n"
        "    i = torch.arange(q.shape[2], device=q.device)\n"
        "    distance = (i[:, None] - i[None, :]).double()\n"
        "    bias = (-slopes.double()[:, None, None] * distance).masked_fill(distance < 0, float('-inf'))\n"
        "    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=bias).half()\n"))
    peak = reference_peak(whole, {"B": 4, "H": 16, "S": 8192})
    assert peak.nbytes > REFERENCE_BYTE_BUDGET > reference_peak(get_task("alibi_attention_f16"), peak.sizes).nbytes
