"""The providers in Pulumi's own dynamic-provider process (`python -m pulumi.dynamic`, what the
engine starts), over gRPC, with the inputs the program registers: the pickled provider is
loaded there, inputs and outputs cross the wire, and Create / Diff / Update / Read / Delete
requests go as the engine sends them."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import proto, rpc
from pulumi.runtime.proto import provider_pb2_grpc

from tests.conftest import ROOT, spec_with
from tests.pulumi.harness import run_program, slice_maps
from topology.pulumi.records import PARTS


def struct(props: dict):
    loop = asyncio.new_event_loop()  # its own loop: asyncio.run would unset the mocks' loop
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def unwrap(value):
    """The mocks hand secrets back wrapped; the engine sends this provider (it accepts no
    secrets) their plain values."""
    secret = isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig
    return value["value"] if secret else value


def engine_inputs(registered, root) -> dict:
    return {k: unwrap(v) for k, v in registered.inputs.items()} | {"root": str(root)}


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    """The dynamic provider process, started from an unrelated folder as the engine would."""
    cwd = tmp_path_factory.mktemp("provider-cwd")
    proc = subprocess.Popen([sys.executable, "-m", "pulumi.dynamic"], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        stub.Configure(proto.ConfigureRequest(args=struct_pb2.Struct()))
        yield stub
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def lab_run():
    return run_program("lab", ROOT)


def test_artifact_lifecycle_in_the_provider_process(provider, lab_run, tmp_path):
    svc = provider
    [reg] = [r for r in lab_run.by_type(":Artifact") if r.name.endswith("hosts.yml")]
    news = engine_inputs(reg, tmp_path)
    checked = svc.Check(proto.CheckRequest(urn="urn:x", olds=struct({}), news=struct(news)))
    created = svc.Create(proto.CreateRequest(urn="urn:x", properties=checked.inputs))
    target = tmp_path / "inventories/lab/hosts.yml"
    assert created.id == "inventories/lab/hosts.yml" and target.is_file()
    outs = rpc.deserialize_properties(created.properties)
    assert outs["created_dirs"] == ["inventories", "inventories/lab"] and outs["owned"] is True

    same = svc.Diff(proto.DiffRequest(id=created.id, urn="urn:x", olds=created.properties, news=checked.inputs))
    assert same.changes == proto.DiffResponse.DIFF_NONE

    grown = [r for r in run_program("lab", ROOT, pod=spec_with("lab", scalable_units=2).model_dump(
        mode="json", exclude_none=True)).by_type(":Artifact") if r.name.endswith("hosts.yml")][0]
    new = struct(engine_inputs(grown, tmp_path))
    diff = svc.Diff(proto.DiffRequest(id=created.id, urn="urn:x", olds=created.properties, news=new))
    assert diff.changes == proto.DiffResponse.DIFF_SOME and not diff.replaces
    updated = svc.Update(proto.UpdateRequest(id=created.id, urn="urn:x", olds=created.properties, news=new))
    assert "su02-node01" in target.read_text()

    target.unlink()  # removed by hand: `pulumi refresh` drops it from state
    read = svc.Read(proto.ReadRequest(id=created.id, urn="urn:x", properties=updated.properties))
    assert read.id == ""
    svc.Delete(proto.DeleteRequest(id=created.id, urn="urn:x", properties=updated.properties))
    assert not (tmp_path / "inventories").exists()


def test_provider_errors_reach_the_engine_as_messages(provider, lab_run, tmp_path):
    svc = provider
    [reg] = [r for r in lab_run.by_type(":Artifact") if r.name.rsplit("/", 1)[-1] == "devices.csv"]
    bad = engine_inputs(reg, tmp_path) | {"sha256": "0" * 64}
    with pytest.raises(grpc.RpcError) as failed:
        svc.Create(proto.CreateRequest(urn="urn:x", properties=struct(bad)))
    assert "other content than the program planned" in failed.value.details()


def test_vault_file_in_the_provider_process(provider, tmp_path):
    creds = {"bmcUsername": "admin", "bmcPassword": "Pl41n-Pa55", "vaultPassword": "vp"}
    [reg] = run_program("lab", ROOT, creds, secret_keys=creds).by_type(":VaultFile")
    svc = provider
    created = svc.Create(proto.CreateRequest(urn="urn:v", properties=struct(engine_inputs(reg, tmp_path))))
    text = (tmp_path / "inventories/lab/group_vars/all/vault.yml").read_text()
    assert text.startswith("$ANSIBLE_VAULT;1.1;AES256") and "Pl41n-Pa55" not in text
    outs = rpc.deserialize_properties(created.properties)
    assert set(outs) == {"root", "path", "fingerprint", "created_dirs", "version", "__provider"}  # no credential


def old_digest(devices: dict, cables: dict, racks: dict) -> str:
    """The digest in states written while the records' inputs were maps (before 28 Nov 2026)."""
    return hashlib.sha256(json.dumps([devices, cables, racks], sort_keys=True).encode()).hexdigest()


def test_a_record_state_written_with_maps_diffs_clean(provider, lab_run):
    """A stack deployed while the records' inputs were maps shows no change once they are JSON
    strings: the engine sends the provider the old state's outputs and the program's new inputs."""
    svc = provider
    layout = slice_maps("lab")
    records = {r.name: r for r in lab_run.by_type(":LayoutRecord")}
    assert set(records) == set(layout)
    for name, reg in records.items():
        maps = layout[name]
        new = engine_inputs(reg, ROOT)
        old = {k: v for k, v in new.items() if k not in PARTS} | maps  # the inputs as registered before
        created = svc.Create(proto.CreateRequest(urn="urn:r", properties=struct(old)))
        outs = rpc.deserialize_properties(created.properties)
        assert outs["digest"] == old_digest(maps["devices"], maps["cables"], maps["racks"])
        assert outs["device_count"] == len(maps["devices"]) and outs["cable_count"] == len(maps["cables"])

        checked = svc.Check(proto.CheckRequest(urn="urn:r", olds=struct(old), news=struct(new)))
        same = svc.Diff(proto.DiffRequest(id=created.id, urn="urn:r", olds=created.properties, news=checked.inputs))
        assert same.changes == proto.DiffResponse.DIFF_NONE, name

        part = next(p for p in PARTS if maps[p])
        dropped = next(iter(maps[part]))
        fewer = new | {part: json.dumps({k: v for k, v in maps[part].items() if k != dropped})}
        changed = svc.Diff(proto.DiffRequest(id=created.id, urn="urn:r", olds=created.properties, news=struct(fewer)))
        assert changed.changes == proto.DiffResponse.DIFF_SOME, name
