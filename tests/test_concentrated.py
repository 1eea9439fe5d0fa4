"""Integer inputs drawn at one value everywhere (kernelgen/task/concentrated.py): a count that
concentrates in one bin (round 27: bincount's per-block counts kept in u8 passed every draw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kernelgen.check.checker import check
from kernelgen.lang.parse import kernel_from_obj
from kernelgen.task.concentrated import concentrated_orders
from kernelgen.task.draws import case_draws
from kernelgen.task.spec import get_task
from kernelgen.task.verify import make_inputs

CATALOGUE = Path(__file__).parent / "redteam"


def test_an_integer_input_takes_its_domains_highest_value_everywhere_at_the_joint_size() -> None:
    task = get_task("bincount_bytes")
    assert concentrated_orders(task) == ["concentrated:x"]
    kernel = check(kernel_from_obj(json.loads((CATALOGUE / "bincount_bytes_block_256_counts_u8.json").read_text())["kernel"]))
    (draw,) = [d for d in case_draws(task, kernel, 3, 0, gpu=False) if d.kind == "concentrated"]
    x = make_inputs(task, draw.sizes, 0, order=draw.order)["x"]
    assert x.numel() > 65536 and bool((x == 255).all())  # past a u8 count, and an i16 one over blocks of 65536


def test_only_integer_domains_take_it() -> None:
    """Floats have no such draw; integers, starts and ends do."""
    assert concentrated_orders(get_task("row_sum")) == []
    bag = get_task("embedding_bag_sum")
    assert {bag.domains[o.split(":")[1]].kind for o in concentrated_orders(bag)} == {"integers", "starts"}


@pytest.mark.parametrize("task_id, name", [("segment_sum_csr", "offsets"), ("grouped_gemm_f16", "offs")])
def test_one_segment_takes_all_of_the_total_and_the_others_are_empty(task_id: str, name: str) -> None:
    """Uniform cut points keep the longest segment near ln(S) times the average: a kernel capping a
    segment at 8 times the average passed them (round 33)."""
    task = get_task(task_id)
    sizes = {size: min(spec.max, 40) for size, spec in task.sizes.items()}
    cuts = make_inputs(task, sizes, 0, order=f"concentrated:{name}")[name].long()
    domain = task.domains[name]
    if domain.kind == "starts":
        bounds = torch.cat([cuts, torch.tensor([sizes[domain.total]])])
        lengths, total = bounds[1:] - bounds[:-1], sizes[domain.total]
    else:
        low, high = (int(b) for b in domain.bounds(sizes))
        lengths, total = cuts - torch.cat([torch.tensor([low]), cuts[:-1]]), high - low
    assert sorted(lengths.tolist())[-2:] == [0, total] and int(lengths.argmax()) == (len(lengths) - 1) // 2
    assert bool((lengths >= 0).all())


def test_an_order_naming_no_such_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no input 'y'"):
        make_inputs(get_task("bincount_bytes"), {"N": 8}, 0, order="concentrated:y")
    assert torch.is_tensor(make_inputs(get_task("bincount_bytes"), {"N": 8}, 0, order="concentrated:x")["x"])
