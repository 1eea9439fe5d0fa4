"""``kernelgen report html|compare|merge|gate``: reports over the results of benchmark runs.

* ``html RESULTS_DIR... -o OUT``: the Allure 3 HTML report of ``--alluredir`` folders.
* ``compare RUN...``: the scores of results files (``--kg-results``) side by side, and the
  tasks that changed between them; ``--plot OUT.png`` draws them.
* ``merge RUN... -o OUT``: one run from the results files, or the Allure results folders, of
  its shards (``--shard i/n``).
* ``gate BASE NEW --max-pass-drop P --max-speedup-drop S``: exit 0 when NEW is within the
  limits of the baseline BASE, 1 when it is not, 2 on bad usage or input (for CI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelgen.errors import KernelgenError

GATE_DESCRIPTION = """\
Judge a run (NEW) against a baseline run (BASE), both results files (--kg-results), over all of
their cases, and exit 0 when NEW is within the limits, 1 when the gate failed, 2 on bad usage or
input (a missing or malformed file, an empty run, no limit given).

  pass-rate drop: in percentage points, 100 x (BASE pass rate - NEW pass rate); 82% -> 80% is 2.
  speedup drop:   in percent of the baseline's geometric-mean speedup over PyTorch eager,
                  100 x (1 - NEW geomean / BASE geomean); 1.50x -> 1.35x is 10. Not compared when
                  BASE timed no case; 100 when BASE did and NEW timed no correct case.
  missing tasks:  (track, tier, task) in BASE without a case in NEW (a lost shard); they fail the
                  gate unless --allow-missing.

A check fails when its drop is more than its limit; a negative drop is a gain. A metric given
no limit is shown but not gated."""


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="report", metavar="REPORT", required=True)

    html = sub.add_parser("html", help="build the Allure 3 HTML report of Allure results folders",
                          description="Build the Allure 3 HTML report (OUT/index.html) of --alluredir folders; "
                                      "view it over http: python -m http.server -d OUT")
    html.add_argument("results", nargs="+", type=Path, metavar="RESULTS_DIR", help="an Allure results folder")
    html.add_argument("-o", "--output", type=Path, required=True, metavar="OUT", help="the report's folder")
    html.add_argument("--name", default="kernelgen", help="the report's title")

    compare = sub.add_parser("compare", help="compare the scores of runs and the tasks that changed",
                             description="Compare results files (--kg-results): scores per tier, and per task.")
    compare.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="a results file (.jsonl)")
    compare.add_argument("--label", action="append", metavar="NAME",
                         help="a name for each run, in order (default: the file names)")
    compare.add_argument("--plot", type=Path, metavar="OUT.png", help="also draw pass rate and speedup per tier")
    compare.add_argument("--speedup-change", type=float, default=None, metavar="FRACTION",
                         help="list a task whose speedup differs by more than this between runs (default 0.1)")

    gate = sub.add_parser("gate", help="exit 1 when a run's pass rate or speedup dropped too far below a baseline's",
                          description=GATE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    gate.add_argument("base", type=Path, metavar="BASE", help="the baseline's results file (.jsonl)")
    gate.add_argument("new", type=Path, metavar="NEW", help="the judged run's results file (.jsonl)")
    gate.add_argument("--max-pass-drop", type=_limit, metavar="POINTS",
                      help="the most the pass rate may fall, in percentage points (e.g. 2)")
    gate.add_argument("--max-speedup-drop", type=_limit, metavar="PERCENT",
                      help="the most the geometric-mean speedup may fall, in percent of the baseline's (e.g. 5)")
    gate.add_argument("--allow-missing", action="store_true",
                      help="report the baseline's tasks missing from NEW without failing the gate")
    gate.add_argument("--label", action="append", metavar="NAME",
                      help="a name for BASE, then for NEW (default: base, new)")

    merge = sub.add_parser("merge", help="merge the shards of a run",
                           description="Merge the results files, or the Allure results folders, of a run's shards.")
    merge.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                       help="a results file (.jsonl) or an Allure results folder of one shard")
    merge.add_argument("-o", "--output", type=Path, required=True, metavar="OUT",
                       help="the merged results file, or Allure results folder")


def _limit(text: str) -> float:
    """A gate's limit: a finite number, 0 or more (argparse makes a bad one exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"a limit is a number, 0 or more, not {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    return {"html": run_html, "compare": run_compare, "merge": run_merge, "gate": run_gate}[args.report](args)


def run_html(args: argparse.Namespace) -> int:
    from kernelgen.report.html import build_html

    index = build_html(args.results, args.output, name=args.name)
    print(f"report: {index} (view it over http: python -m http.server -d {index.parent})")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from kernelgen.report.compare import DEFAULT_SPEEDUP_CHANGE, compare_lines, load_runs

    runs = load_runs(args.runs, args.label)
    speedup_change = DEFAULT_SPEEDUP_CHANGE if args.speedup_change is None else args.speedup_change
    print("\n".join(compare_lines(runs, speedup_change)))
    if args.plot is not None:
        from kernelgen.report.plot import plot_runs

        print(f"plot: {plot_runs(runs, args.plot)}")
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from kernelgen.report.merge import MergeError, merge_allure, merge_results

    folders = [path.is_dir() for path in args.runs]
    if all(folders):
        print(f"merged {merge_allure(args.runs, args.output)} files into {args.output}")
    elif not any(folders):
        cases = merge_results(args.runs, args.output)
        print(f"merged {len(cases)} cases from {len(args.runs)} runs into {args.output}")
    else:
        raise MergeError("give either results files or Allure results folders, not both", code="mixed_inputs")
    return 0


GATE_PASSED, GATE_FAILED, GATE_USAGE = 0, 1, 2


def run_gate(args: argparse.Namespace) -> int:
    from kernelgen.report.compare import load_runs
    from kernelgen.report.gate import gate, gate_lines

    try:
        base, new = load_runs([args.base, args.new], args.label or ["base", "new"])
        result = gate(base, new, max_pass_drop=args.max_pass_drop, max_speedup_drop=args.max_speedup_drop,
                      allow_missing=args.allow_missing)
    except KernelgenError as exc:  # input the gate cannot judge is a usage error, not a failed gate
        for diagnostic in exc.diagnostics:
            print(f"{exc.stage}: {diagnostic}", file=sys.stderr)
        return GATE_USAGE
    print("\n".join(gate_lines(result)))
    return GATE_PASSED if result.passed else GATE_FAILED
