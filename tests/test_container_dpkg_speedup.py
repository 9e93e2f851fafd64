"""The test containers' dpkg drop-in (force-unsafe-io): the molecule prepare and the lab pod's
bring-up write the same file, and the bring-up writes it into every node after boot."""

from __future__ import annotations

import subprocess

import yaml

from tests.e2e import labpod


def test_molecule_prepare_writes_the_same_drop_in():
    plays = yaml.safe_load((labpod.ROOT / "molecule/prepare.yml").read_text())
    copies = [t["ansible.builtin.copy"] for play in plays for t in play["tasks"] if "ansible.builtin.copy" in t]
    assert [(c["dest"], c["content"].strip()) for c in copies] == [(labpod.DPKG_SPEEDUP_FILE, labpod.DPKG_SPEEDUP)]


def test_lab_bring_up_writes_the_drop_in_into_every_node_after_boot(monkeypatch):
    calls: list[tuple[str, ...]] = []
    booted: list[str] = []

    def fake_docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        calls.append(args)
        return subprocess.CompletedProcess(["docker", *args], 0, "", "")

    def fake_boot(name: str) -> None:
        booted.append(name)
        calls.append(("booted", name))

    monkeypatch.setattr(labpod, "docker", fake_docker)
    monkeypatch.setattr(labpod, "wait_booted", fake_boot)
    pod = object.__new__(labpod.LabPod)  # no plan: the hosts are given
    pod.session = "superpod-unit-1"
    pod.containers = {"gpu-a": "superpod-unit-1-gpu-a", "gpu-b": "superpod-unit-1-gpu-b"}
    pod.start("superpod-debian12:test")

    assert sorted(booted) == sorted(pod.containers.values())
    for name in pod.containers.values():
        write = ("exec", name, "sh", "-c", f"echo {labpod.DPKG_SPEEDUP} > {labpod.DPKG_SPEEDUP_FILE}")
        assert write in calls
        assert calls.index(write) > calls.index(("booted", name))
