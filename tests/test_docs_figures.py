"""Figures in the docs come from the plans (scripts/docs_figures.py): the committed docs match
what the script computes now, and a figure typed over fails the check."""

from __future__ import annotations

import importlib.util
import re

from tests.conftest import ROOT, stack_layout

spec = importlib.util.spec_from_file_location("docs_figures", ROOT / "scripts" / "docs_figures.py")
figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(figures)


def test_docs_figures_match_the_plans():
    stale = figures.stale()
    assert not stale, f"run python scripts/docs_figures.py: {[str(p.relative_to(ROOT)) for p in stale]}"


def test_a_typed_over_figure_is_caught_and_restored():
    readme = (ROOT / "README.md").read_text()
    lab = stack_layout("lab")
    cables = len(lab.links) + len(lab.border_links)
    row = re.search(r"^\| lab \| .*$", readme, re.M).group(0)
    assert f"| {cables} (" in row  # the figure is the plan's, from the layout itself
    typed = readme.replace(row, row.replace(f"| {cables} (", f"| {cables + 1} ("))
    assert typed != readme and figures.render(typed) == readme


def test_figure_blocks_are_in_the_docs_a_newcomer_reads():
    for doc, block in (("README.md", "examples"), ("docs/quickstart.md", "lab"), ("docs/report.md", "report")):
        assert f"<!-- figures:{block} -->" in (ROOT / doc).read_text(), doc
