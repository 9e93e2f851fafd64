"""The lab pod, brought up once for the whole tests/e2e session and shared by every lab test
(apply/drift, and the labs that build on the same nodes): containers started once, an
inventory overlay pointing the planned hosts at them, one runs directory.

Tests that break the pod (kill a node) carry `@pytest.mark.breaks_pod`: they run after every
other e2e test, and still restore what they broke."""

from __future__ import annotations

import json
import os

import pytest

from tests.e2e.labpod import ROOT, TIMINGS, LabPod, ensure_image, setup_floor

LAB_GROUPS = ("gpu_nodes",)


def pytest_configure(config):
    config.addinivalue_line("markers", "breaks_pod: the test breaks the shared lab pod; it runs last")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.get_closest_marker("breaks_pod") is not None)  # stable: order kept otherwise


@pytest.fixture(scope="session")
def lab_pod(tmp_path_factory):
    """The started LabPod: .containers (host -> container), .overlay, .runs_dir, .playbook
    (lab.sh(host, script) runs a command in a node; lab.restart(host) brings a killed one back)."""
    image = ensure_image()
    lab = LabPod(groups=LAB_GROUPS, tag="e2e")
    try:
        lab.start(image)
        # over SSH with ansible.cfg's pipelining and ControlPersist, as users reach real nodes
        # (SUPERPOD_E2E_CONNECTION=docker: docker exec, for comparison)
        connection = os.environ.get("SUPERPOD_E2E_CONNECTION", "ssh")
        if connection == "ssh":
            lab.enable_ssh(tmp_path_factory.mktemp("ssh"))
        lab.write_overlay(tmp_path_factory.mktemp("overlay") / "containers.yml", connection)
        # the floor the runs are measured against (bench/bench_apply.py prints the ratios)
        floor = setup_floor(lab, tmp_path_factory.mktemp("setup-facts"), ",".join(LAB_GROUPS))
        TIMINGS["floor_setup_s"] = round(floor, 1)
        lab.runs_dir = tmp_path_factory.mktemp("runs")
        # site.yml as it was when the session began: other work may enable roles while it runs
        lab.playbook = tmp_path_factory.mktemp("playbook") / "site.yml"
        lab.playbook.write_text((ROOT / "site.yml").read_text())
        yield lab
    finally:
        lab.remove()
        out = ROOT / "build" / "e2e-timings.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(TIMINGS, indent=1) + "\n")
