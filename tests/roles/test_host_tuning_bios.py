"""host_tuning's BIOS path against a stand-in Redfish service (plain HTTP on localhost,
host_tuning_bmc_scheme http): the host's ComputerSystem is the member with a Bios resource
(HGX/DGX BMCs list the baseboard first), the credentials come from the inventory's
superpod_bmc_* variables, a manufacturer without a map is reported and skipped, and Dell's
map switches the profile to Custom (the C-state attributes are read-only under PerfOptimized)."""

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

DELL_CURRENT = {"SysProfile": "Custom", "ProcPwrPerf": "MaxPerf", "ProcCStates": "Disabled", "ProcC1E": "Disabled",
                "LogicalProc": "Enabled", "ProcVirtualization": "Enabled"}


def redfish_tree(manufacturer: str, attributes: dict) -> dict:
    return {
        "/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/HGX_Baseboard_0"},
                                            {"@odata.id": "/redfish/v1/Systems/DGX"}]},
        "/redfish/v1/Systems/HGX_Baseboard_0": {"Id": "HGX_Baseboard_0", "Manufacturer": "NVIDIA"},
        "/redfish/v1/Systems/DGX": {"Id": "DGX", "Manufacturer": manufacturer,
                                    "Bios": {"@odata.id": "/redfish/v1/Systems/DGX/Bios"}},
        "/redfish/v1/Systems/DGX/Bios": {"Attributes": attributes},
    }


@pytest.fixture
def bmc():
    state = {"trees": {}, "auth": set()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            port_tree = state["trees"][self.server.server_address[1]]
            state["auth"].add(base64.b64decode(self.headers.get("Authorization", "Basic ")[6:]).decode())
            body = port_tree.get(self.path.rstrip("/"))
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body or {}).encode())

        def log_message(self, *args):
            pass

    servers = []

    def start(tree):
        server = HTTPServer(("127.0.0.1", 0), Handler)
        state["trees"][server.server_address[1]] = tree
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start, state
    for server in servers:
        server.shutdown()


def run_bios(tmp_path, hosts):
    tasks = [{"ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": "bios.yml"}}]
    common = {"host_tuning_bmc_scheme": "http", "host_tuning_redfish_delegate_to": "{{ inventory_hostname }}",
              "host_tuning_bmc_no_log": False, "superpod_bmc_username": "root", "superpod_bmc_password": "s3cret"}
    return run_play(tmp_path, tasks, {h: dict(common, **v) for h, v in hosts.items()})


def test_host_system_is_picked_and_inventory_credentials_used(tmp_path, bmc):
    start, state = bmc
    dell = start(redfish_tree("Dell Inc.", DELL_CURRENT))
    dgx = start(redfish_tree("NVIDIA", {"SomeAmiAttribute": "Enabled"}))
    results = run_bios(tmp_path, {"dell-node": {"host_tuning_bmc_address": "127.0.0.1", "host_tuning_bmc_port": dell},
                                  "dgx-node": {"host_tuning_bmc_address": "127.0.0.1", "host_tuning_bmc_port": dgx}})
    for host in ("dell-node", "dgx-node"):
        failed = [r.get("msg") for r in results[host] if r.get("failed")]
        assert not failed, failed
    assert state["auth"] == {"root:s3cret"}
    dell_report = [r["msg"] for r in results["dell-node"] if r["task"] == "host_tuning : Report the BIOS state"][0]
    assert dell_report["vendor_map"] == "dell"
    assert dell_report["set_now"] == {} and dell_report["waiting_for_reboot"] == {}
    skipped = [r for r in results["dgx-node"] if "no attribute map for manufacturer 'NVIDIA'" in str(r.get("msg", ""))]
    assert skipped, "a DGX BMC (no map) must be reported, not failed"


def test_dell_map_uses_the_custom_profile():
    dell = load(ROOT / "roles/host_tuning/defaults/main.yml")["host_tuning_bios_vendor_attributes"]["dell"]
    assert dell["SysProfile"] == "Custom" and dell["ProcCStates"] == "Disabled"
