"""Stand-ins for the tests and the bench: scontrol and kubectl that check their arguments as
the real ones do and record each call (JSON lines), and nvidia-smi that prints a file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

FAKE_SCONTROL = '''#!{python}
# scontrol update's rules (slurm scontrol(1)): keywords are KEY=VALUE, case-insensitive keys;
# NodeName is required; State=DRAIN (or DOWN) needs a Reason; RESUME needs none, and slurmctld
# refuses it for a node that is not drained or down (22.05: "Invalid node state specified").
# Each node's state is kept beside the log; `show node NAME -o` prints it as the real one-liner
# (State=IDLE or IDLE+DRAIN, Reason=TEXT [user@time] last). Only updates are logged.
import json, os, sys
STATE = {log!r} + ".nodes.json"
nodes = json.load(open(STATE)) if os.path.exists(STATE) else {{}}
args = sys.argv[1:]
if args[:2] == ["show", "node"] and len(args) >= 3:
    n = nodes.get(args[2], {{"state": "IDLE", "reason": ""}})
    reason = f" Reason={{n['reason']}} [root@2026-11-27T09:00:00]" if n["reason"] else ""
    print(f"NodeName={{args[2]}} Arch=x86_64 CPUAlloc=0 State={{n['state']}} ThreadsPerCore=1{{reason}}")
    sys.exit(0)
if not args or args[0].lower() != "update":
    print("scontrol: only 'update' and 'show node' are faked", file=sys.stderr); sys.exit(1)
kv = {{}}
for a in args[1:]:
    key, eq, value = a.partition("=")
    if not eq:
        print(f"Invalid input: {{a}}", file=sys.stderr); sys.exit(1)
    kv[key.lower()] = value
if "nodename" not in kv:
    print("No valid entity in update command", file=sys.stderr); sys.exit(1)
state = kv.get("state", "").lower()
if state not in ("drain", "down", "resume", "undrain", "idle"):
    print(f"Invalid node state specified: {{kv.get('state')}}", file=sys.stderr); sys.exit(1)
if state in ("drain", "down") and not kv.get("reason"):
    print("You must specify a reason when DOWNING or DRAINING a node. Request denied", file=sys.stderr); sys.exit(1)
node = nodes.get(kv["nodename"], {{"state": "IDLE", "reason": ""}})
if state == "resume" and node["state"] == "IDLE":
    print("slurm_update error: Invalid node state specified", file=sys.stderr); sys.exit(1)
nodes[kv["nodename"]] = ({{"state": "IDLE+DRAIN", "reason": kv["reason"]}} if state in ("drain", "down")
                         else {{"state": "IDLE", "reason": ""}})
with open(STATE, "w") as f:
    json.dump(nodes, f)
with open({log!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
'''

FAKE_KUBECTL = '''#!{python}
import json, sys
with open({log!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
'''


def write_tool(path: Path, template: str, log: Path) -> Path:
    path.write_text(template.format(python=sys.executable, log=str(log)))
    path.chmod(0o755)
    return path


def calls(log: Path) -> list[list[str]]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.is_file() else []
