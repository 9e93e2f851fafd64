"""The roce_qos apply script (roles/roce_qos/files/superpod-roce-qos) against a fake sysfs /
configfs tree (--root) and fake `mlnx_qos` / `dcb` tools on PATH that record their arguments
and keep their state in a JSON file: the real writes and tool calls, proven without hardware."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ANSIBLE_STRATEGY_LINES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "roles/roce_qos/files/superpod-roce-qos"

RAILS = [
    {"rail": 0, "netdev": "enp24s0np0", "hca": "mlx5_0"},
    {"rail": 1, "netdev": "enp64s0np0", "hca": "mlx5_3"},
]

# What the role renders from its defaults (templates/roce-qos.json.j2).
CONFIG = {
    "trust": "dscp",
    "pfc_priorities": [3],
    "ecn_priorities": [3],
    "ecn_points": ["roce_np", "roce_rp"],
    "dscp2prio": {"26": 3, "48": 6},
    "rdma_cm_tos": 106,
    "rdma_cm_roce_mode": "",
    "port": 1,
    "tool": "auto",
    "interfaces": RAILS,
}

# mlnx_qos -i DEV output, trimmed to the lines the script parses (format of mlnx-tools 5.x).
FAKE_MLNX_QOS = textwrap.dedent('''\
    #!{python}
    import json, os, sys
    state_file = os.environ["FAKE_STATE"]
    state = json.load(open(state_file))
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(" ".join(["mlnx_qos"] + sys.argv[1:]) + "\\n")
    args = sys.argv[1:]
    dev = args[args.index("-i") + 1]
    s = state.setdefault(dev, {{"trust": "pcp", "pfc": [0] * 8}})
    if "--trust" in args:
        s["trust"] = args[args.index("--trust") + 1]
    if "--pfc" in args:
        s["pfc"] = [int(b) for b in args[args.index("--pfc") + 1].split(",")]
    json.dump(state, open(state_file, "w"))
    print("DCBX mode: OS controlled")
    print("Priority trust state: " + s["trust"])
    print("PFC configuration:")
    print("\\tpriority    0   1   2   3   4   5   6   7")
    print("\\tenabled     " + "   ".join(map(str, s["pfc"])) + "   ")
    print("tc: 0 ratelimit: unlimited, tsa: vendor")
''')

FAKE_DCB = textwrap.dedent('''\
    #!{python}
    import json, os, sys
    state_file = os.environ["FAKE_STATE"]
    state = json.load(open(state_file))
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(" ".join(["dcb"] + sys.argv[1:]) + "\\n")
    args = [a for a in sys.argv[1:] if a != "-N"]
    obj, cmd, dev = args[0], args[1], args[3]
    s = state.setdefault(dev, {{"pfc": {{str(p): "off" for p in range(8)}}, "app": {{}}}})
    pairs = dict(w.split(":") for w in args[5:])
    if obj == "pfc" and cmd == "set":
        s["pfc"].update(pairs)
    elif obj == "app" and cmd == "replace":
        s["app"].update(pairs)
    elif obj == "pfc":
        print("pfc-cap 8 macsec-bypass off delay 0")
        print("prio-pfc " + " ".join(f"{{k}}:{{v}}" for k, v in sorted(s["pfc"].items())))
    elif obj == "app" and s["app"]:
        print("dscp-prio " + " ".join(f"{{k}}:{{v}}" for k, v in sorted(s["app"].items())))
    json.dump(state, open(state_file, "w"))
''')


def write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


@pytest.fixture
def fake(tmp_path):
    """A node with two ConnectX rail NICs, ECN off, RDMA-CM configfs loaded, nothing set."""
    root = tmp_path / "root"
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    write(root / "sys/bus/pci/devices/0000:00:1f.0/vendor", "0x8086")
    for i, rail in enumerate(RAILS):
        write(root / f"sys/bus/pci/devices/0000:{i + 0x18:02x}:00.0/vendor", "0x15b3")
        net = root / "sys/class/net" / rail["netdev"]
        write(net / "device/vendor", "0x15b3")
        for side in ("roce_np", "roce_rp"):
            for prio in range(8):
                write(net / f"ecn/{side}/enable/{prio}", "0")
        port = root / "sys/kernel/config/rdma_cm" / rail["hca"] / "ports/1"
        write(port / "default_roce_tos", "0")
        write(port / "default_roce_mode", "RoCE v2")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state, log = tmp_path / "tool-state.json", tmp_path / "tool.log"
    state.write_text("{}")
    log.write_text("")
    cfg = tmp_path / "roce-qos.json"
    cfg.write_text(json.dumps(CONFIG))
    return {"root": root, "bin": bin_dir, "state": state, "log": log, "cfg": cfg, "tmp": tmp_path}


def install_tool(fake, name, source):
    tool = fake["bin"] / name
    tool.write_text(source.format(python=sys.executable))
    tool.chmod(0o755)


def run(fake, *extra, config=None):
    if config is not None:
        fake["cfg"].write_text(json.dumps(config))
    env = {"PATH": str(fake["bin"]), "FAKE_STATE": str(fake["state"]), "FAKE_LOG": str(fake["log"])}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--config", str(fake["cfg"]), "--root", str(fake["root"]), *extra],
        capture_output=True, text=True, env=env, check=False,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def tool_calls(fake):
    calls = fake["log"].read_text().splitlines()
    fake["log"].write_text("")
    return calls


def sysfs(fake, rel):
    return (fake["root"] / rel).read_text().strip()


def test_no_connectx_device_says_so_and_touches_nothing(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    for dev in (fake["root"] / "sys/bus/pci/devices").iterdir():
        (dev / "vendor").write_text("0x8086\n")
    rc, report, stderr = run(fake)
    assert rc == 0
    assert report["connectx_devices"] == []
    assert report["applied"] is False and report["changes"] == []
    assert "no ConnectX (PCI vendor 0x15b3) device found: nothing applied" in report["message"]
    assert "nothing applied" in stderr
    assert tool_calls(fake) == []
    assert sysfs(fake, "sys/class/net/enp24s0np0/ecn/roce_np/enable/3") == "0"
    assert sysfs(fake, "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "0"


def test_mlnx_qos_applies_everything_once_then_nothing(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    rc, report, _ = run(fake)
    assert rc == 0, report
    assert report["tool"] == "mlnx_qos" and report["applied"] is True
    assert report["connectx_devices"] == ["0000:18:00.0", "0000:19:00.0"]
    assert tool_calls(fake) == [
        "mlnx_qos -i enp24s0np0",
        "mlnx_qos -i enp24s0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0",
        "mlnx_qos -i enp64s0np0",
        "mlnx_qos -i enp64s0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0",
    ]
    for rail in RAILS:
        net = f"sys/class/net/{rail['netdev']}/ecn"
        for side in ("roce_np", "roce_rp"):
            assert [sysfs(fake, f"{net}/{side}/enable/{p}") for p in range(8)] == ["0"] * 3 + ["1"] + ["0"] * 4
        assert sysfs(fake, f"sys/kernel/config/rdma_cm/{rail['hca']}/ports/1/default_roce_tos") == "106"
    # 2 rails x (qos + 2 ECN points + ToS)
    assert len(report["changes"]) == 8

    rc, report, _ = run(fake)
    assert rc == 0 and report["changes"] == [] and report["errors"] == []
    assert tool_calls(fake) == ["mlnx_qos -i enp24s0np0", "mlnx_qos -i enp64s0np0"]


def test_dry_run_lists_changes_and_writes_nothing(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    rc, report, _ = run(fake, "--dry-run")
    assert rc == 0 and report["dry_run"] is True and report["applied"] is False
    assert "enp24s0np0 ecn roce_np prio 3: '0' -> '1'" in report["changes"]
    assert "mlx5_3 rdma_cm tos: '0' -> '106'" in report["changes"]
    assert any("--trust dscp --pfc 0,0,0,1,0,0,0,0" in c for c in report["changes"])
    assert tool_calls(fake) == ["mlnx_qos -i enp24s0np0", "mlnx_qos -i enp64s0np0"]
    assert sysfs(fake, "sys/class/net/enp24s0np0/ecn/roce_np/enable/3") == "0"
    assert sysfs(fake, "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "0"


def test_dcb_fallback_sets_pfc_and_dscp_map_once(fake):
    install_tool(fake, "dcb", FAKE_DCB)
    rc, report, _ = run(fake)
    assert rc == 0, report
    assert report["tool"] == "dcb"
    calls = tool_calls(fake)
    assert "dcb pfc set dev enp24s0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off" in calls
    assert "dcb app replace dev enp64s0np0 dscp-prio 26:3 48:6" in calls
    state = json.loads(fake["state"].read_text())
    assert state["enp24s0np0"]["app"] == {"26": "3", "48": "6"}
    assert [state["enp64s0np0"]["pfc"][str(p)] for p in range(8)] == ["off"] * 3 + ["on"] + ["off"] * 4

    rc, report, _ = run(fake)
    assert rc == 0 and report["changes"] == []
    assert all(" show " in c for c in tool_calls(fake))


def test_configurable_priority_tos_and_roce_mode(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    cfg = dict(CONFIG, pfc_priorities=[4], ecn_priorities=[4], ecn_points=["roce_np"],
               rdma_cm_tos=138, rdma_cm_roce_mode="IB/RoCE v1", tool="mlnx_qos")
    rc, report, _ = run(fake, config=cfg)
    assert rc == 0, report
    assert "mlnx_qos -i enp24s0np0 --trust dscp --pfc 0,0,0,0,1,0,0,0" in tool_calls(fake)
    net = "sys/class/net/enp24s0np0/ecn"
    assert sysfs(fake, f"{net}/roce_np/enable/4") == "1" and sysfs(fake, f"{net}/roce_np/enable/3") == "0"
    assert sysfs(fake, f"{net}/roce_rp/enable/4") == "0"
    port = "sys/kernel/config/rdma_cm/mlx5_0/ports/1"
    assert sysfs(fake, f"{port}/default_roce_tos") == "138"
    assert sysfs(fake, f"{port}/default_roce_mode") == "IB/RoCE v1"


def test_rdma_cm_device_directory_is_created(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    hca_dir = fake["root"] / "sys/kernel/config/rdma_cm/mlx5_3"
    for f in sorted(hca_dir.rglob("*"), reverse=True):
        f.unlink() if f.is_file() else f.rmdir()
    hca_dir.rmdir()
    rc, report, _ = run(fake, "--dry-run")
    assert "mlx5_3 rdma_cm: create /sys/kernel/config/rdma_cm/mlx5_3" in report["changes"]
    assert not hca_dir.exists()
    # A real configfs fills ports/ on mkdir; this plain directory does not, which the script reports.
    rc, report, _ = run(fake)
    assert hca_dir.is_dir()
    assert rc == 1
    assert any("mlx5_3 rdma_cm tos" in e and "does not exist" in e for e in report["errors"])


def test_missing_rail_netdev_or_tool_is_an_error(fake):
    cfg = dict(CONFIG, interfaces=RAILS + [{"rail": 2, "netdev": "enp79s0np0", "hca": "mlx5_4"}])
    rc, report, stderr = run(fake, config=cfg)
    assert rc == 1
    assert "rail 2: netdev enp79s0np0 not present" in report["errors"]
    assert "enp24s0np0 qos: neither mlnx_qos nor dcb found (tool auto)" in report["errors"]
    assert "enp79s0np0 not present" in stderr


def test_parsers_read_real_tool_output():
    ns = {}
    exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), ns)  # the script is not a module name
    out = ("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n"
           "\tprio:0 dscp:07,06,05,04,03,02,01,00,\nPFC configuration:\n"
           "\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0   \n")
    assert ns["parse_mlnx_qos"](out) == ("dscp", [0, 0, 0, 1, 0, 0, 0, 0])
    assert ns["parse_pairs"]("pfc-cap 8 macsec-bypass off delay 0\nprio-pfc 0:off 3:on\n", "prio-pfc") == \
        {"0": "off", "3": "on"}


# ---------------------------------------------------------------- the role's apply tasks on that tree
def play_apply(fake, *extra):
    """roles/roce_qos/tasks/apply.yml on a local host whose sysfs is the fake tree; returns
    {task name: result} of the one host."""
    import os

    import yaml

    tmp = fake["tmp"]
    (tmp / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": {"node": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "superpod_fabric_kind": "roce", "rails": [dict(r, gpu=r["rail"]) for r in RAILS]}}}}))
    (tmp / "play.yml").write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "roce_qos", "tasks_from": "apply.yml"}}]}]))
    (tmp / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ROOT / 'roles'}\nlibrary = {ROOT / 'library'}\n"
                                     f"action_plugins = {ROOT / 'action_plugins'}\n{ANSIBLE_STRATEGY_LINES}")
    overrides = {"roce_qos_script": str(SCRIPT), "roce_qos_config_file": str(fake["cfg"]),
                 "roce_qos_sysfs_root": str(fake["root"]), "roce_qos_python": sys.executable}
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               PATH=f"{fake['bin']}:{os.environ['PATH']}", FAKE_STATE=str(fake["state"]), FAKE_LOG=str(fake["log"]))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "inventory.yml"),
                           "-e", json.dumps(overrides), *extra, str(tmp / "play.yml")],
                          capture_output=True, text=True, env=env, check=False)
    out = json.loads(proc.stdout)
    return {t["task"]["name"].removeprefix("roce_qos : "): t["hosts"]["node"]
            for p in out["plays"] for t in p["tasks"] if "node" in t["hosts"]}


APPLY_INCLUDE = "Apply the settings that differ, or show them (check mode); enable the unit; fail on errors"


def test_role_applies_once_is_idempotent_and_shows_drift_under_check(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    ecn3 = "sys/class/net/enp24s0np0/ecn/roce_np/enable/3"

    first = play_apply(fake)
    assert first["Apply the QoS settings that differ"]["changed"] is True
    assert not any(r.get("failed") for r in first.values())
    assert sysfs(fake, ecn3) == "1"
    assert sysfs(fake, "sys/kernel/config/rdma_cm/mlx5_3/ports/1/default_roce_tos") == "106"

    second = play_apply(fake)
    assert [n for n, r in second.items() if r.get("changed")] == []
    # nothing differs: the apply's include is skipped, so the apply task is not even loaded
    assert second[APPLY_INCLUDE].get("skipped") is True
    assert "Apply the QoS settings that differ" not in second

    (fake["root"] / ecn3).write_text("0\n")  # someone turned ECN off: drift
    check = play_apply(fake, "--check")
    drift_task = "Show the settings that differ from the plan (check mode)"
    assert [n for n, r in check.items() if r.get("changed")] == [drift_task]
    assert check[drift_task]["msg"] == ["enp24s0np0 ecn roce_np prio 3: '0' -> '1'"]
    assert sysfs(fake, ecn3) == "0"  # --check wrote nothing


def test_inbox_driver_without_ecn_sysfs_is_reported_not_fatal(fake):
    """The upstream (inbox) mlx5 driver creates no /sys/class/net/<dev>/ecn tree (that tree is
    DOCA/MLNX_OFED's): the rest is applied, ECN is left to the firmware and said so."""
    import shutil
    install_tool(fake, "dcb", FAKE_DCB)
    for rail in RAILS:
        shutil.rmtree(fake["root"] / "sys/class/net" / rail["netdev"] / "ecn")
    rc, report, _ = run(fake)
    assert rc == 0 and report["errors"] == [], report
    assert report["ecn_control"] == {rail["netdev"]: "firmware" for rail in RAILS}
    assert any("no per-priority ECN in sysfs" in n for n in report["notes"])
    assert any("rdma_cm tos" in c for c in report["changes"])  # the rest still applied
    rc, again, _ = run(fake)
    assert rc == 0 and again["changes"] == []


def test_an_ecn_only_storage_nic_gets_ecn_and_tos_but_no_pfc(fake):
    """storage_fabric.qos: ecn -> the storage NIC's entry carries pfc_priorities [] (the role's
    template): PFC off on it, ECN and RDMA-CM ToS as on the rails."""
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    storage = {"storage": True, "netdev": RAILS[1]["netdev"], "hca": RAILS[1]["hca"], "pfc_priorities": []}
    rc, report, _ = run(fake, config=dict(CONFIG, interfaces=[RAILS[0], storage]))
    assert rc == 0, report
    calls = tool_calls(fake)
    assert "mlnx_qos -i enp24s0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0" in calls
    assert "mlnx_qos -i enp64s0np0 --trust dscp --pfc 0,0,0,0,0,0,0,0" in calls
    for side in ("roce_np", "roce_rp"):
        assert sysfs(fake, f"sys/class/net/enp64s0np0/ecn/{side}/enable/3") == "1"
    assert sysfs(fake, "sys/kernel/config/rdma_cm/mlx5_3/ports/1/default_roce_tos") == "106"
    assert "1 rail NIC(s), 1 storage NIC(s)" in report["message"]


def test_a_missing_storage_nic_is_named_as_storage(fake):
    install_tool(fake, "mlnx_qos", FAKE_MLNX_QOS)
    storage = {"storage": True, "netdev": "enp41s0f0np0", "hca": "mlx5_8"}
    rc, report, _ = run(fake, config=dict(CONFIG, interfaces=[RAILS[0], storage]))
    assert rc == 1
    assert "storage NIC: netdev enp41s0f0np0 not present" in report["errors"]
