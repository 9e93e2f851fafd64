"""Static checks of the Kubernetes roles (gpu_operator, dcgm_exporter): the GPU Operator values
the role renders use only documented keys of the pinned chart (files/gpu-operator-values-keys-
<version>.yml, keys from NVIDIA's values.yaml), argument specs cover the defaults, OS family files
agree, and the dcgm-exporter metric list renders in the exporter's CSV format."""

import importlib.util
import itertools
import json

import jinja2
import pytest
import yaml

from tests.role_files import ROOT, load

GPU_OP = ROOT / "roles/gpu_operator"

_spec = importlib.util.spec_from_file_location("superpod_k8s", GPU_OP / "filter_plugins/superpod_k8s.py")
filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(filters)


def render(template: str, variables: dict) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    env.filters["to_json"] = json.dumps
    env.filters["bool"] = bool
    return env.from_string((GPU_OP / "templates" / template).read_text()).render(**variables)


def defaults(role: str) -> dict:
    return load(ROOT / "roles" / role / "defaults/main.yml")


def documented_keys(version: str) -> set[str]:
    data = load(GPU_OP / f"files/gpu-operator-values-keys-{version}.yml")
    assert data["version"] == version and data["chart"] == "gpu-operator"
    return set(data["keys"])


FIXTURES = ROOT / "tests/roles/fixtures"


def chart_values_file(version: str):
    """The chart's own values.yaml of that version: testdata/gpu-operator/ (NVIDIA's, with its
    LICENSE and README), or the older fixture (source in its header)."""
    path = ROOT / f"testdata/gpu-operator/values-{version}.yaml"
    return path if path.is_file() else FIXTURES / f"gpu-operator-values-{version}.yaml"


def chart_values(version: str) -> dict:
    return load(chart_values_file(version))


def test_pinned_chart_is_a_supported_release():
    """NVIDIA's life-cycle table (Nov 2026): 26.3.x supported, 25.10.x deprecated (critical fixes),
    25.3.x and older out of support. The pin is a supported release whose values.yaml was read."""
    version = defaults("gpu_operator")["gpu_operator_chart_version"]
    major, minor = (int(p) for p in version.lstrip("v").split(".")[:2])
    assert (major, minor) >= (26, 3), version


def test_keys_file_is_the_fixture_values_yaml_keys():
    """The keys file the role reads at run time is derived from the chart's values.yaml, nothing
    added but the `#version` keys the chart documents as comments (default: the chart's appVersion)."""
    version = defaults("gpu_operator")["gpu_operator_chart_version"]
    data = load(GPU_OP / f"files/gpu-operator-values-keys-{version}.yml")
    commented = set(data["commented"])
    assert set(data["keys"]) - commented == set(filters.superpod_key_paths(chart_values(version)))
    text = chart_values_file(version).read_text()
    assert all(k.endswith(".version") and k.rsplit(".", 1)[0] in data["keys"] for k in commented)
    assert text.count("  #version: \"\"") == len(commented)


@pytest.mark.parametrize("registry", ["nvcr.io", "mirror.local:5000"])
def test_rendered_repositories_are_the_chart_defaults_under_the_registry(registry):
    """A repository the role renders is the chart's own default with only the registry swapped:
    a wrong path (24.6's validator lived under nvidia/cloud-native, 25.10's is nvidia/gpu-operator)
    is an image pull failure on every node."""
    d = defaults("gpu_operator")
    chart = chart_values(d["gpu_operator_chart_version"])
    values = yaml.safe_load(render("gpu-operator-values.yaml.j2", dict(d, gpu_operator_registry=registry)))
    repos = [p for p in filters.superpod_key_paths(values) if p.endswith(".repository")]
    assert len(repos) >= 10
    for path in repos:
        rendered, default = values, chart
        for part in path.split("."):
            rendered, default = rendered[part], default[part]
        assert rendered == default.replace("nvcr.io", registry, 1), path


def test_pinned_chart_version_has_a_keys_file_with_the_keys_the_issue_names():
    keys = documented_keys(defaults("gpu_operator")["gpu_operator_chart_version"])
    for key in [
        "driver.enabled",
        "toolkit.enabled",
        "dcgmExporter.enabled",
        "migManager.enabled",
        "cdi.enabled",
        "validator.repository",
        "mig.strategy",
        "nfd.enabled",
    ]:
        assert key in keys
    # a path is only listed when its parent is (the file is a tree, not a bag of names; a key may
    # itself hold dots, as the annotation openshift.io/scc does)
    assert all(any(k.startswith(p + ".") for p in keys) for k in keys if "." in k)


@pytest.mark.parametrize(
    "secrets,driver,toolkit,exporter,mig,nfd",
    list(itertools.product([[], ["mirror"]], [False, True], [False, True], [True], [True, False], [True])),
)
def test_rendered_values_use_only_documented_keys(secrets, driver, toolkit, exporter, mig, nfd):
    d = defaults("gpu_operator")
    variables = dict(
        d,
        gpu_operator_image_pull_secrets=secrets,
        gpu_operator_driver_enabled=driver,
        gpu_operator_toolkit_enabled=toolkit,
        gpu_operator_dcgm_exporter_enabled=exporter,
        gpu_operator_mig_manager_enabled=mig,
        gpu_operator_nfd_enabled=nfd,
    )
    values = yaml.safe_load(render("gpu-operator-values.yaml.j2", variables))
    paths = filters.superpod_key_paths(values)
    undocumented = set(paths) - documented_keys(d["gpu_operator_chart_version"])
    assert not undocumented, undocumented
    assert values["driver"]["enabled"] is driver and values["toolkit"]["enabled"] is toolkit
    assert values["dcgmExporter"]["enabled"] is exporter and values["migManager"]["enabled"] is mig
    assert ("imagePullSecrets" in values["operator"]) == bool(secrets)


def test_registry_override_reaches_every_repository():
    d = defaults("gpu_operator")
    values = yaml.safe_load(render("gpu-operator-values.yaml.j2", dict(d, gpu_operator_registry="mirror.local:5000")))
    repos = [v["repository"] for v in values.values() if isinstance(v, dict) and "repository" in v]
    repos += [values["driver"]["manager"]["repository"]]
    assert len(repos) >= 10 and all(r.startswith("mirror.local:5000/nvidia") for r in repos)


def test_defaults_host_managed_driver_operator_managed_toolkit():
    """No role installs nvidia-container-toolkit or configures containerd's nvidia runtime on the
    hosts: with toolkit.enabled false no GPU pod would ever schedule. The operator's toolkit
    daemonset installs it and configures containerd; the driver stays host-managed."""
    d = defaults("gpu_operator")
    assert d["gpu_operator_driver_enabled"] is False and d["gpu_operator_toolkit_enabled"] is True
    values = yaml.safe_load(render("gpu-operator-values.yaml.j2", d))
    assert values["toolkit"]["enabled"] is True and values["driver"]["enabled"] is False
    # 25.10 detects each node's runtime (no operator.defaultRuntime) and defaults to CDI
    assert "defaultRuntime" not in values["operator"] and values["cdi"]["enabled"] is True
    assert d["gpu_operator_dcgm_exporter_enabled"] and d["gpu_operator_mig_manager_enabled"]
    assert d["gpu_operator_topology_label_keys"]["su"] == "topology.kubernetes.io/zone"


def test_nic_cluster_policy_carries_the_plugin_config_as_json():
    d = defaults("gpu_operator")
    cfg = {"configList": [{"resourceName": "rdma_rail0", "rdmaHcaMax": 63, "selectors": {"ifNames": ["enp24s0np0"]}}]}
    doc = yaml.safe_load(render("nic-cluster-policy.yaml.j2", dict(d, gpu_operator_rdma_config=cfg)))
    assert doc["kind"] == "NicClusterPolicy" and json.loads(doc["spec"]["rdmaSharedDevicePlugin"]["config"]) == cfg




def test_dcgm_counters_csv_format():
    d = defaults("dcgm_exporter")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    text = env.from_string((ROOT / "roles/dcgm_exporter/templates/counters.csv.j2").read_text()).render(
        ansible_managed="managed", **d
    )
    rows = [line.split(", ", 2) for line in text.splitlines() if line and not line.startswith("#")]
    assert rows == [[m["field"], m["type"], m["help"]] for m in d["dcgm_exporter_metrics"]]
    assert {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS"} <= {r[0] for r in rows}


def test_only_one_control_plane_host_runs_helm_and_patches():
    """The play targets every kube_control_plane host: helm upgrades and label patches from all
    of them at once race. Everything that talks to the cluster sits under one host's condition."""
    tasks = yaml.safe_load((GPU_OP / "tasks/main.yml").read_text())
    block = next(t for t in tasks if "block" in t)
    assert block["when"] == "inventory_hostname == gpu_operator_cluster_host"
    inner = [t.get("ansible.builtin.include_tasks") or t.get("ansible.builtin.import_tasks") for t in block["block"]]
    assert {"discover.yml", "live.yml", "render.yml"} <= set(inner)
    outer = [t.get("ansible.builtin.include_tasks") or t.get("ansible.builtin.import_tasks") for t in tasks]
    assert not {"discover.yml", "live.yml"} & set(outer)
    assert defaults("gpu_operator")["gpu_operator_cluster_host"] == "{{ ansible_play_hosts | first }}"
