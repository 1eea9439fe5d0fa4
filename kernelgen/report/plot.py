"""A picture of runs side by side: pass rate and geometric-mean speedup per tier, per run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from kernelgen.errors import require
from kernelgen.task.metrics import by_tier, score, tier_key

if TYPE_CHECKING:
    from kernelgen.report.compare import Run


def plot_runs(runs: Sequence[Run], output: Path | str) -> Path:
    """Grouped bars (one group per tier, one bar per run) into a PNG; its path."""
    matplotlib = require("matplotlib", "--plot", "report")
    matplotlib.use("Agg")  # no display: render to the file only
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    tiers = sorted({case.tier for run in runs for case in run.cases}, key=tier_key)
    width = 0.8 / max(len(runs), 1)
    figure, (rates, speedups) = plt.subplots(1, 2, figsize=(5 + 1.5 * len(tiers), 4.5))
    any_timed = False
    for i, run in enumerate(runs):
        groups = by_tier(run.cases)
        scores = [score(groups[t]) if t in groups else None for t in tiers]
        positions = [t + (i - (len(runs) - 1) / 2) * width for t in range(len(tiers))]
        rates.bar(positions, [s.pass_rate if s else 0.0 for s in scores], width, label=run.label)
        geomeans = [s.geomean[0] if s and s.geomean else 0.0 for s in scores]
        any_timed = any_timed or any(geomeans)
        speedups.bar(positions, geomeans, width, label=run.label)
    for axes, title in ((rates, "pass rate"), (speedups, "geometric-mean speedup over PyTorch eager")):
        axes.set_xticks(range(len(tiers)), tiers)
        axes.set_title(title, fontsize=10)
    rates.set_ylim(0, 1)
    rates.yaxis.set_major_formatter(PercentFormatter(1.0))
    speedups.axhline(1.0, color="gray", linewidth=0.8, linestyle="--")
    if not any_timed:
        speedups.text(0.5, 0.5, "no timed cases\n(runs without a GPU)", transform=speedups.transAxes,
                      ha="center", va="center", color="gray")
    rates.legend(fontsize=8)
    figure.tight_layout()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=120)
    plt.close(figure)
    return output
