"""host_tuning's BIOS write path (issue 34) through the pinned community.general redfish_config
against a stand-in iDRAC over HTTPS (self-signed, on localhost): the PATCH goes to the Bios
SettingsObject with `@Redfish.SettingsApplyTime: OnReset` (iDRAC creates its BIOS config job for
the next reboot; without it the values stay pending), and on a BMC that lists more than one
ComputerSystem (HGX/DGX: the HGX baseboard beside the host) the module is told which system is
the host (`resource_id`), or it refuses: "Multiple Systems present and 'resource_id' not
specified". Resource layout as Dell documents it for iDRAC9 (System.Embedded.1, Bios/Settings,
service root Vendor "Dell")."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

pytestmark = pytest.mark.skipif(not shutil.which("openssl"), reason="openssl makes the stand-in's certificate")

WANTED = load(ROOT / "roles/host_tuning/defaults/main.yml")["host_tuning_bios_vendor_attributes"]["dell"]
# the factory profile: every wanted attribute at another value
CURRENT = {k: ("PerfPerWattOptimizedDapc" if k == "SysProfile" else f"not-{v}") for k, v in WANTED.items()}


def idrac_tree() -> dict:
    system = "/redfish/v1/Systems/System.Embedded.1"
    return {
        "/redfish/v1": {"Vendor": "Dell", "Systems": {"@odata.id": "/redfish/v1/Systems"}},
        "/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/HGX_Baseboard_0"},
                                            {"@odata.id": system}]},
        "/redfish/v1/Systems/HGX_Baseboard_0": {"Id": "HGX_Baseboard_0", "Manufacturer": "NVIDIA"},
        system: {"Id": "System.Embedded.1", "Manufacturer": "Dell Inc.", "Bios": {"@odata.id": f"{system}/Bios"}},
        f"{system}/Bios": {"Attributes": dict(CURRENT),
                           "@Redfish.Settings": {"SettingsObject": {"@odata.id": f"{system}/Bios/Settings"}}},
        f"{system}/Bios/Settings": {"Attributes": {}},
    }


@pytest.fixture
def idrac(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
                   check=True, capture_output=True)
    tree, patches, auth = idrac_tree(), [], set()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, code, body):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def _authorized(self):
            """Basic auth as a BMC asks for it: a request without it gets 401 and a challenge."""
            given = self.headers.get("Authorization")
            if given is None:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="iDRAC"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return False
            auth.add(base64.b64decode(given[6:]).decode())
            return True

        def do_GET(self):  # noqa: N802 (http.server's name)
            if not self._authorized():
                return
            body = tree.get(self.path.rstrip("/"))
            self._answer(200 if body is not None else 404, body or {})

        def do_PATCH(self):  # noqa: N802
            if not self._authorized():
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            patches.append((self.path, body))
            tree[self.path.rstrip("/")]["Attributes"].update(body.get("Attributes", {}))  # now pending
            self._answer(202, {})

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], patches, auth
    server.shutdown()


@pytest.mark.timeout(180)
def test_idrac_gets_the_settings_with_an_apply_time_on_the_host_system(tmp_path, idrac):
    port, patches, auth = idrac
    tasks = [{"ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": "bios.yml"}}]
    host = {"host_tuning_bmc_address": "127.0.0.1", "host_tuning_bmc_port": port, "host_tuning_bmc_scheme": "https",
            "host_tuning_bmc_validate_certs": False, "host_tuning_redfish_delegate_to": "{{ inventory_hostname }}",
            "host_tuning_bmc_no_log": False, "superpod_bmc_username": "root", "superpod_bmc_password": "calvin"}
    (tmp_path / "play").mkdir()
    results = run_play(tmp_path / "play", tasks, {"dell-node": host})["dell-node"]
    failed = [r.get("msg") for r in results if r.get("failed")]
    assert not failed, failed
    assert auth == {"root:calvin"}
    [(path, body)] = patches
    assert path == "/redfish/v1/Systems/System.Embedded.1/Bios/Settings"  # the host, not the baseboard
    assert body["Attributes"] == {k: v for k, v in WANTED.items() if CURRENT[k] != v}
    assert body["@Redfish.SettingsApplyTime"] == {"ApplyTime": "OnReset"}
    report = [r["msg"] for r in results if r["task"] == "host_tuning : Report the BIOS state"][0]
    assert report["waiting_for_reboot"] == WANTED  # pending until the BIOS applies them at the reset
