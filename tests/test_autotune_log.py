"""torch.compile's autotuning log, kept with its time (kernelgen.gpu.autotune_log): what each
candidate measured and which one was kept, so a baseline time that looks wrong can be traced."""

from __future__ import annotations

import logging

import pytest

from kernelgen.gpu.autotune_log import LOGGERS, MAX_LINES, autotune_lines


def test_the_autotuners_lines_are_kept_and_the_loggers_restored(caplog: pytest.LogCaptureFixture) -> None:
    heuristics, descent = (logging.getLogger(name) for name in LOGGERS)
    heuristics.setLevel(logging.WARNING)
    caplog.set_level(logging.DEBUG)
    try:
        with autotune_lines() as lines:
            heuristics.debug("Benchmark all input configs for %s, get:", "triton_red_fused_var_0")
            heuristics.debug("%s: %f, nreg %d", "XBLOCK: 2, R0_BLOCK: 512, num_warps: 2", 0.0226, 32)
            descent.debug("Try config %s", "XBLOCK: 4")  # every neighbour tried: left out
            descent.debug("%s: Improve from %s %f -> %s %f", "k", "a", 0.03, "b", 0.0226)
        assert lines == ["Benchmark all input configs for triton_red_fused_var_0, get:",
                         "XBLOCK: 2, R0_BLOCK: 512, num_warps: 2: 0.022600, nreg 32",
                         "k: Improve from a 0.030000 -> b 0.022600"]
        assert not caplog.records  # not propagated to pytest's capture meanwhile
        assert heuristics.level == logging.WARNING and heuristics.propagate and not heuristics.handlers
        assert descent.level == logging.NOTSET and descent.propagate and not descent.handlers
        heuristics.warning("after")
        assert [r.getMessage() for r in caplog.records] == ["after"]
    finally:
        heuristics.setLevel(logging.NOTSET)


def test_a_long_log_is_cut_keeps_what_was_kept_and_says_how_much_was_left_out() -> None:
    heuristics, descent = (logging.getLogger(name) for name in LOGGERS)
    kept = "k: Improve from " + "XBLOCK: 1, R0_BLOCK: 2048, num_warps: 16, num_ctas: 1, num_stages: 1 " * 4 + "0.020, 1.50x"
    with autotune_lines() as lines:
        for k in range(MAX_LINES + 5):
            heuristics.debug("COORDESC: config %d: %f", k, 0.01)
        descent.debug(kept)
        heuristics.debug("Function hash h has best config XBLOCK: 1")
    assert len(lines) == MAX_LINES + 3
    assert lines[0] == "COORDESC: config 0: 0.010000" and lines[-1] == "... 5 more lines"
    assert lines[-3:-1] == [kept, "Function hash h has best config XBLOCK: 1"]  # whole: its time and ratio too


def test_the_lines_are_kept_when_the_compile_fails() -> None:
    with pytest.raises(RuntimeError), autotune_lines() as lines:
        logging.getLogger(LOGGERS[1]).debug("= Do coordinate descent tuning for %s =", "k")
        raise RuntimeError("compile failed")
    assert lines == ["= Do coordinate descent tuning for k ="]
    assert not logging.getLogger(LOGGERS[1]).handlers
