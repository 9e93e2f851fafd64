"""Every artifact of the four example stacks and bench/bench_plan.py's 1k pod is byte-identical to
the record committed before topology/ was reorganised (tests/artifact_identity.py): a move of code
changes no byte a plan writes. A change meant to alter output rewrites the record on purpose."""

from __future__ import annotations

import json

import pytest

from tests.artifact_identity import MANIFEST, cases, hashes

RECORD = json.loads(MANIFEST.read_text())


def test_the_record_names_every_case():
    assert sorted(RECORD) == sorted(cases())


@pytest.mark.parametrize("case", sorted(cases()))
def test_artifacts_byte_identical(case):
    now = hashes(cases()[case]())
    assert sorted(now) == sorted(RECORD[case]), "the set of files a plan writes changed"
    changed = [path for path in now if now[path] != RECORD[case][path]]
    assert not changed, f"{len(changed)} artifacts changed, e.g. {changed[:5]}"
