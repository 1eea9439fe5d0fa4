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


def test_only_integers_domains_take_it() -> None:
    """Floats have no such draw; ordered offsets (``starts``) keep their promise."""
    assert concentrated_orders(get_task("row_sum")) == []
    bag = get_task("embedding_bag_sum")
    assert all(bag.domains[o.split(":")[1]].kind == "integers" for o in concentrated_orders(bag))


def test_an_order_naming_no_such_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no input 'y'"):
        make_inputs(get_task("bincount_bytes"), {"N": 8}, 0, order="concentrated:y")
    assert torch.is_tensor(make_inputs(get_task("bincount_bytes"), {"N": 8}, 0, order="concentrated:x")["x"])
