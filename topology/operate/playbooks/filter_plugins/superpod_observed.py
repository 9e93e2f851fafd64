"""Filters for the record check playbook (quick_drift.yml, found beside it): the same subset of
facts the record holds (topology/operate/observed_facts.py)."""

from __future__ import annotations

from topology.operate.observed_facts import observed_facts


class FilterModule:
    def filters(self):
        return {"superpod_observed_facts": observed_facts}
