"""The Pulumi side of superpod: components that mirror the layout and dynamic resources for
the generated files, used by the thin `__main__.py` at the project root.

- `settings`: the stack's configuration (`superpod:*`), secrets kept as Pulumi secrets.
- `records`: the layout cut into a few data-only resources (per SU, per pod-wide tier, per rack
  row), so `pulumi preview --diff` names the devices, cables and racks that change.
- `components`: Pod -> ScalableUnit / Tier / Racks component resources.
- `artifacts`: one resource per generated file, written by a dynamic provider.
- `vault`: the ansible-vault encrypted BMC credentials.
- `ansible_run`: the optional `site.yml` run through ansible-runner.
- `program`: `deploy()`, the whole program.
"""
