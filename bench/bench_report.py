"""Report render time and size for the example stacks (lab, roce-1k, roce-8k), plus what the
8k report costs a browser to open (headless Chromium, when installed).

Run: .venv/bin/python bench/bench_report.py
Targets: roce-8k's report renders in under 10 s and stays under 20 MB (all pages together).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from topology.layout.build import build  # noqa: E402
from topology.render.bom import bom_csv  # noqa: E402
from topology.render.files import write_all  # noqa: E402
from topology.render.labels import labels_csv  # noqa: E402
from topology.render.report import render_report  # noqa: E402
from topology.spec import load_stack_file  # noqa: E402

STACKS = ("lab", "roce-1k", "roce-8k")


def browser_seconds(page: Path) -> float | None:
    """Wall time for headless Chromium to load a page and take a screenshot (start-up included)."""
    chromium = shutil.which("chromium")
    if not chromium:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp}/p",
                        f"--screenshot={tmp}/s.png", "--window-size=1280,900", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
        return time.perf_counter() - t0


def main() -> None:
    print(f"{'stack':>8} {'racks':>6} {'cables':>7} {'build s':>8} {'report s':>9} {'pages':>6} {'MB':>6} "
          f"{'index KB':>9} {'bom+labels s':>13} {'labels MB':>10} {'chromium s':>11}")
    for stack in STACKS:
        spec = load_stack_file(str(ROOT / f"Pulumi.{stack}.yaml"))
        t0 = time.perf_counter()
        layout = build(spec)
        t1 = time.perf_counter()
        files = render_report(layout, Path("/nonexistent"))
        t2 = time.perf_counter()
        labels = labels_csv(layout)
        bom_csv(layout)
        t3 = time.perf_counter()
        size = sum(len(c.encode()) for c in files.values())
        index = len(files[Path("/nonexistent/report/index.html")].encode())
        with tempfile.TemporaryDirectory() as tmp:
            write_all({Path(tmp) / p.relative_to("/nonexistent"): c for p, c in files.items()})
            opened = browser_seconds(Path(tmp) / "report" / "index.html")
        shown = f"{opened:>11.1f}" if opened is not None else f"{'-':>11}"
        print(f"{stack:>8} {len(layout.racks):>6} {len(layout.links):>7} {t1 - t0:>8.2f} {t2 - t1:>9.2f} "
              f"{len(files):>6} {size / 1e6:>6.1f} {index / 1e3:>9.0f} {t3 - t2:>13.2f} {len(labels) / 1e6:>10.1f} "
              f"{shown}")


if __name__ == "__main__":
    main()
