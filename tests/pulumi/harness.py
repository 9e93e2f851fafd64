"""Runs the Pulumi program under `pulumi.runtime.set_mocks` (no engine, no CLI) and records
what it registers: type, name, parent, secret outputs, inputs, and the stack outputs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import set_root_resource

from tests.conftest import ROOT, stack_layout
from topology.pulumi.program import deploy
from topology.pulumi.records import slice_layout
from topology.pulumi.settings import read_settings


@dataclass
class Registered:
    type: str
    name: str
    parent: str
    custom: bool
    secret_outputs: list[str]
    inputs: dict[str, Any] = field(default_factory=dict)


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return [f"{args.name}-id", args.inputs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: Mocks):
        super().__init__(mocks)
        self.registered: list[Registered] = []

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        state = self.resources.get(response.urn)
        self.registered.append(Registered(request.type, request.name, request.parent, request.custom,
                                          list(request.additionalSecretOutputs), state.state if state else {}))
        return response


@dataclass
class Run:
    registered: list[Registered]
    outputs: dict[str, Any]
    pod: Any  # the Pod component
    secret: dict[str, bool]  # resource name -> is any of its checked outputs secret

    def by_type(self, suffix: str) -> list[Registered]:
        return [r for r in self.registered if r.type.endswith(suffix)]

    def named(self, name: str) -> Registered:
        return next(r for r in self.registered if r.name == name)


def stack_pod(stack: str) -> dict:
    return yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]["superpod:pod"]


def run_program(stack: str, root: Path, config: dict[str, Any] | None = None, secret_keys=(),
                pod: dict | None = None) -> Run:
    """Runs the program for `stack` with the project folder `root` (files land there when a
    provider is driven by hand; the program itself writes nothing)."""
    mocks = Mocks()
    monitor = RecordingMonitor(mocks)
    set_root_resource(None)
    pulumi.runtime.set_mocks(mocks, project="superpod", stack=stack, preview=False, monitor=monitor)
    values = {"superpod:pod": json.dumps(pod or stack_pod(stack))}
    values |= {f"superpod:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in (config or {}).items()}
    pulumi.runtime.set_all_config(values, [f"superpod:{k}" for k in secret_keys])
    out: dict[str, Any] = {}

    @pulumi.runtime.test
    def program():
        out["pod"] = pod = deploy(read_settings(pulumi.Config("superpod"), stack, root))
        stack_outputs = pulumi.runtime.get_root_resource().outputs
        # which outputs of the vault resource the SDK treats as secret
        vault = pod.artifacts.vault
        names = ("username", "password", "vault_password", "fingerprint")
        checked = {k: getattr(vault, k) for k in names} if vault else {}

        async def secrecy():
            out["secret"] = {k: await o.is_secret() for k, o in checked.items()}

        return pulumi.Output.all(pulumi.Output.all(**stack_outputs), pulumi.Output.from_input(secrecy())).apply(
            lambda o: out.update(outputs=o[0]))

    program()
    return Run(monitor.registered, out["outputs"], out["pod"], out.get("secret", {}))


def slice_maps(stack: str) -> dict[str, dict[str, dict]]:
    """Record name -> the slice's devices, cables and racks, from the layout itself."""
    slices = slice_layout(stack_layout(stack))
    named = {f"su{su:02d}-layout": p for su, p in slices.sus.items()}
    named |= {f"tier-{t}-layout": p for t, p in slices.tiers.items()}
    named |= {f"row-{r}-layout": p for r, p in slices.rows.items()}
    return {name: {"devices": p.devices, "cables": p.cables, "racks": p.racks} for name, p in named.items()}
