"""molecule/create.yml and destroy.yml: the containers the docker driver would make, in seconds.

The molecule job replaced the docker driver's bundled create/destroy playbooks (an async job per
container, polled at a 5 s delay) with its own `docker run` / `docker rm`, and dropped each
scenario's leading `destroy`. The judge of "the same container" is the driver's own create.yml
(molecule-plugins, installed with molecule), run on the same platform; Docker says what each one
made (`docker inspect`). The platform is slurm's GPU node (the most options any scenario sets).
Needs dockerd and the molecule base image (scripts/ensure-image.sh --no-build): skipped otherwise.
"""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import molecule_plugins.docker
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CREATE = ROOT / "molecule" / "create.yml"
DESTROY = ROOT / "molecule" / "destroy.yml"
DRIVER_PLAYBOOKS = Path(molecule_plugins.docker.__file__).parent / "playbooks"
SLURM = ROOT / "roles" / "slurm" / "molecule" / "default" / "molecule.yml"


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def image() -> str:
    try:
        found = subprocess.run([str(ROOT / "scripts/ensure-image.sh"), "--no-build"], capture_output=True, text=True)
    except OSError as exc:
        pytest.skip(f"no docker: {exc}")
    if found.returncode != 0 or docker("info", check=False).returncode != 0:
        pytest.skip("needs dockerd and the molecule base image (scripts/ensure-image.sh)")
    return found.stdout.strip().splitlines()[-1]


def platform(image: str, name: str, network: str, **extra) -> dict:
    """slurm's GPU node platform as molecule.yml sets it, under another name and network."""
    node = next(p for p in yaml.safe_load(SLURM.read_text())["platforms"] if p["name"] == "slurm-su01-node01")
    return {**node, "name": name, "image": image, "networks": [{"name": network}], **extra}


def start_playbook(path: Path, platforms: list[dict], workdir: Path) -> subprocess.Popen:
    """Starts a create/destroy playbook with the variables molecule gives it."""
    workdir.mkdir(exist_ok=True)
    variables = {"molecule_yml": {"platforms": platforms}, "molecule_no_log": False,
                 "molecule_scenario_directory": str(workdir), "molecule_ephemeral_directory": str(workdir)}
    (workdir / "vars.json").write_text(json.dumps(variables))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    return subprocess.Popen(
        ["ansible-playbook", "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}",
         "-e", "@vars.json", str(path)], cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


def finished(run: subprocess.Popen) -> subprocess.CompletedProcess:
    out, _ = run.communicate(timeout=600)
    return subprocess.CompletedProcess(run.args, run.returncode, out)


def playbook(path: Path, platforms: list[dict], workdir: Path) -> subprocess.CompletedProcess:
    return finished(start_playbook(path, platforms, workdir))


def inspect(name: str) -> dict:
    return json.loads(docker("inspect", name).stdout)[0]


def settings(container: dict) -> dict:
    """Config and HostConfig without the name, the spellings the API and the CLI differ in folded:
    empty lists/maps vs null, CAP_SYS_ADMIN vs SYS_ADMIN, restart policy "" vs "no", Init false vs unset."""
    config = {k: v for k, v in container["Config"].items() if k != "Hostname"}
    host = {k: v for k, v in container["HostConfig"].items() if k != "NetworkMode"}
    host["CapAdd"] = sorted(c.removeprefix("CAP_") for c in host["CapAdd"] or [])
    host["RestartPolicy"] = {**host["RestartPolicy"], "Name": host["RestartPolicy"]["Name"] or "no"}
    if host.get("Init") is False:
        del host["Init"]
    both = {"Config": config, "HostConfig": host}
    return json.loads(json.dumps(both), object_hook=lambda d: {k: v for k, v in d.items() if v not in (None, [], {})})


def test_every_scenario_sets_only_platform_keys_create_applies():
    applied = set(yaml.safe_load(CREATE.read_text())[0]["vars"]["molecule_create_keys"])
    for path in sorted(ROOT.glob("roles/*/molecule/*/molecule.yml")):
        for p in yaml.safe_load(path.read_text())["platforms"]:
            assert set(p) <= applied, (str(path), p["name"], set(p) - applied)


@pytest.mark.slow
def test_create_makes_the_drivers_container_replaces_leftovers_and_destroy_removes_it(image, tmp_path):
    tag = uuid.uuid4().hex[:8]
    ours = platform(image, f"superpod-test-ours-{tag}", f"superpod-test-ours-{tag}")
    theirs = platform(image, f"superpod-test-driver-{tag}", f"superpod-test-driver-{tag}")
    # a killed run's leftover under our name: create must not reuse it
    leftover = docker("create", "--name", ours["name"], image, "true").stdout.strip()
    driver_run = None
    try:
        # side by side: the driver's polls at a 5 s delay would otherwise set the test's time
        driver_run = start_playbook(DRIVER_PLAYBOOKS / "create.yml", [theirs], tmp_path / "driver")
        run = playbook(CREATE, [ours], tmp_path / "ours")
        assert run.returncode == 0, run.stdout[-3000:]
        run = finished(driver_run)
        assert run.returncode == 0, run.stdout[-3000:]

        made, reference = inspect(ours["name"]), inspect(theirs["name"])
        assert made["Id"] != leftover
        assert made["State"]["Running"]
        assert settings(made) == settings(reference)
        assert made["Config"]["Hostname"] == ours["name"]
        assert made["HostConfig"]["NetworkMode"] == ours["networks"][0]["name"]
        assert list(made["NetworkSettings"]["Networks"]) == [ours["networks"][0]["name"]]
        network = json.loads(docker("network", "inspect", ours["networks"][0]["name"]).stdout)[0]
        assert network["Labels"] == {"owner": "molecule"}

        run = playbook(DESTROY, [ours], tmp_path / "ours")
        assert run.returncode == 0, run.stdout[-3000:]
        assert docker("container", "inspect", ours["name"], check=False).returncode != 0
        assert docker("network", "inspect", ours["networks"][0]["name"], check=False).returncode != 0
    finally:
        if driver_run is not None and driver_run.poll() is None:
            driver_run.communicate(timeout=600)  # let it finish before its container goes
        docker("rm", "--force", ours["name"], theirs["name"], check=False)
        docker("network", "rm", ours["networks"][0]["name"], theirs["networks"][0]["name"], check=False)


@pytest.mark.parametrize(("extra", "named"), [
    ({"privileged": True}, "'privileged'"),                     # a key create.yml does not apply
    ({"command": 'bash -c "sleep 1"'}, "a command without quotes"),  # the driver would shlex-split it
])
def test_create_refuses_a_platform_it_would_not_make_as_the_driver(image, tmp_path, extra, named):
    name = f"superpod-test-refused-{uuid.uuid4().hex[:8]}"
    run = playbook(CREATE, [platform(image, name, name, **extra)], tmp_path)
    assert run.returncode != 0
    assert f"platform {name}" in run.stdout and named in run.stdout, run.stdout[-3000:]
    assert docker("container", "inspect", name, check=False).returncode != 0
