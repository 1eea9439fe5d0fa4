"""``kernelgen report html|compare|merge``: reports over the results of benchmark runs.

* ``html RESULTS_DIR... -o OUT``: the Allure 3 HTML report of ``--alluredir`` folders.
* ``compare RUN...``: the scores of results files (``--kg-results``) side by side, and the
  tasks that changed between them; ``--plot OUT.png`` draws them.
* ``merge RUN... -o OUT``: one run from the results files, or the Allure results folders, of
  its shards (``--shard i/n``).
"""

from __future__ import annotations

import argparse
from pathlib import Path


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

    merge = sub.add_parser("merge", help="merge the shards of a run",
                           description="Merge the results files, or the Allure results folders, of a run's shards.")
    merge.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                       help="a results file (.jsonl) or an Allure results folder of one shard")
    merge.add_argument("-o", "--output", type=Path, required=True, metavar="OUT",
                       help="the merged results file, or Allure results folder")


def run(args: argparse.Namespace) -> int:
    return {"html": run_html, "compare": run_compare, "merge": run_merge}[args.report](args)


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
