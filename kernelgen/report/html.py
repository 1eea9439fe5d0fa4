"""The HTML report of Allure results, built by Allure 3 (the npm package ``allure``).

``kernelgen report html RESULTS_DIR -o OUT`` runs Allure 3's ``generate`` with its Awesome
report, cases grouped by tier, track and provider/model (Allure's parent suite, suite and
sub-suite, which :mod:`kernelgen.report.allure` sets). The report's pages fetch their data
files, which browsers refuse over ``file://``: serve the folder over http to view it
(``python -m http.server -d OUT`` or ``npx allure open OUT``). Allure's single-file mode does not
avoid that (its test pages fetch too), so it is not offered.

Allure 3 is looked up as a project-local install (``.allure/`` in the working directory or a
folder above it, or in the kernelgen checkout), then as an ``allure`` 3.x on PATH. It is never
fetched on the fly (``npx`` would download it): where it is missing, the error names the
install command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from kernelgen.errors import KernelgenError

LOCAL_DIR = ".allure"
ALLURE_INSTALL = f"npm install --prefix {LOCAL_DIR} allure@3"
NODE_INSTALL = "apt-get install -y nodejs npm"
GENERATE_TIMEOUT_S = 600
GROUP_BY = ["parentSuite", "suite", "subSuite"]


class ReportError(KernelgenError):
    stage = "report"


def _local_cli(start: Path) -> Path | None:
    checkout = Path(__file__).resolve().parents[2]
    for folder in (start, *start.parents, checkout):
        cli = folder / LOCAL_DIR / "node_modules" / "allure" / "cli.js"
        if cli.is_file():
            return cli
    return None


def _is_allure3(executable: str) -> bool:
    try:
        version = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return version.returncode == 0 and version.stdout.strip().startswith("3.")


def find_allure(start: Path | None = None) -> list[str]:
    """The command that runs Allure 3; a clear error naming the install where it is missing."""
    node = shutil.which("node")
    if node is None:
        raise ReportError(f"the HTML report needs Node.js and Allure 3: {NODE_INSTALL} && {ALLURE_INSTALL}",
                          code="node_missing")
    cli = _local_cli((start or Path.cwd()).resolve())
    if cli is not None:
        return [node, str(cli)]
    on_path = shutil.which("allure")
    if on_path is not None and _is_allure3(on_path):
        return [on_path]
    raise ReportError(f"the HTML report needs Allure 3 (the npm package 'allure'), which is not installed: "
                      f"{ALLURE_INSTALL}", code="allure_missing")


def build_html(results: Sequence[Path | str], output: Path | str, *, name: str = "kernelgen") -> Path:
    """Build the report of one or more Allure results folders into ``output``; its index.html."""
    folders = [Path(folder).resolve() for folder in results]
    for folder in folders:
        if not folder.is_dir():
            raise ReportError(f"{folder}: no such Allure results folder", code="not_found")
        if not any(folder.glob("*-result.json")):
            raise ReportError(f"{folder} holds no Allure test results (*-result.json): run pytest with "
                              f"--alluredir {folder}", code="no_results")
    output = Path(output).resolve()
    command = find_allure()
    config = {"name": name, "output": str(output),
              "plugins": {"awesome": {"options": {"reportName": name, "groupBy": GROUP_BY}}}}
    with tempfile.TemporaryDirectory(prefix="kernelgen-allure-") as work:
        config_path = Path(work) / "allurerc.json"
        config_path.write_text(json.dumps(config), encoding="utf-8")
        # In a scratch folder: Allure 3 reads an allurerc.* from its working directory.
        try:
            generated = subprocess.run([*command, "generate", *map(str, folders), "--config", str(config_path),
                                        "--output", str(output)], cwd=work, capture_output=True, text=True,
                                       timeout=GENERATE_TIMEOUT_S, env=os.environ | {"NO_COLOR": "1"})
        except subprocess.TimeoutExpired:
            raise ReportError(f"Allure did not finish within {GENERATE_TIMEOUT_S} s", code="allure_timeout") from None
    index = output / "index.html"
    if generated.returncode != 0 or not index.is_file():
        tail = "\n".join((generated.stderr or generated.stdout).strip().splitlines()[-15:])
        raise ReportError(f"Allure failed to build the report (exit status {generated.returncode}):\n{tail}",
                          code="allure_failed")
    return index
