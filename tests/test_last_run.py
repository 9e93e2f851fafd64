"""last_run (the e2e's and bench's way to find a run's artifacts) picks the newest run of exactly
the kind asked: `drift --quick` runs end in `-quick-drift`, and a glob on `*-drift` took the
newest of those for the last full drift check."""

from __future__ import annotations

from tests.e2e.labpod import last_run


def test_last_run_matches_the_kind_exactly(tmp_path):
    for name in ("20261125T054932.986922Z-apply", "20261125T055415.335357Z-drift",
                 "20261125T055538.530967Z-fix", "20261125T055600.100000Z-quick-drift"):
        (tmp_path / "lab" / name).mkdir(parents=True)
    assert last_run(tmp_path, "lab", "drift").name == "20261125T055415.335357Z-drift"
    assert last_run(tmp_path, "lab", "quick-drift").name == "20261125T055600.100000Z-quick-drift"
    assert last_run(tmp_path, "lab", "apply").name == "20261125T054932.986922Z-apply"
