"""Conventions every role keeps (users rely on them across roles): the standard layout with a
molecule scenario and a verify, every default prefixed with the role name and declared in
meta/argument_specs.yml with the same default, and one vars file per declared OS family, all with
the same `<role>_family_` keys."""


import pytest

from tests.role_files import FAMILIES, ROOT, load

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks/main.yml").is_file())


@pytest.mark.parametrize("role", ROLES)
def test_layout(role):
    base = ROOT / "roles" / role
    for sub in ["defaults/main.yml", "tasks/main.yml", "meta/main.yml", "meta/argument_specs.yml",
                "molecule/default/molecule.yml", "molecule/default/verify.yml"]:
        assert (base / sub).is_file(), f"{role}: missing {sub}"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_are_declared_and_prefixed(role):
    base = ROOT / "roles" / role
    defaults = load(base / "defaults/main.yml")
    options = load(base / "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert all(k.startswith(role + "_") for k in defaults), "defaults must carry the role prefix"
    missing = sorted(set(defaults) - set(options))
    assert not missing, f"{role}: defaults not in argument_specs: {missing}"
    # ansible-doc and the argument check show the spec's default: it must be the one the role uses
    stale = sorted(k for k, v in defaults.items() if "default" in options[k] and options[k]["default"] != v)
    assert not stale, f"{role}: argument_specs defaults differ from defaults/main.yml: {stale}"


@pytest.mark.parametrize("role", ROLES)
def test_families_declare_the_same_keys(role):
    base = ROOT / "roles" / role / "vars"
    present = [f for f in FAMILIES if (base / f"{f}.yml").is_file()]
    if not present:
        pytest.skip(f"{role} has no OS family specifics")
    assert present == FAMILIES, f"{role}: family files {present}, want {FAMILIES}"
    keys = {f: set(load(base / f"{f}.yml")) for f in FAMILIES}
    assert all(k == keys["Debian"] for k in keys.values()), keys
    assert all(k.startswith(f"{role}_family_") for k in keys["Debian"]), keys["Debian"]


def _tasks(role):
    for path in sorted((ROOT / "roles" / role / "tasks").glob("*.yml")):
        for task in load(path) or []:
            yield path.name, task
            for inner in task.get("block", []) + task.get("rescue", []) + task.get("always", []):
                yield path.name, inner


@pytest.mark.parametrize("role", ROLES)
def test_index_refresh_only_when_needed(role):
    """A bare apt index refresh reports a change whenever the mirror published since the last
    run (cache_valid_time reads the lists' mtime, which an unchanged mirror leaves old): a
    second run is then not changed=0. Refresh only after a source changed or for a missing
    package (a registered result the condition tests)."""
    for file, task in _tasks(role):
        apt = task.get("ansible.builtin.apt") or task.get("apt")
        if not isinstance(apt, dict) or not apt.get("update_cache") or apt.get("name"):
            continue
        when = task.get("when", [])
        when = " ".join(when if isinstance(when, list) else [str(when)])
        assert any(w in when for w in ("is changed", "is failed", "is not skipped", "length == 0")), (
            f"{role}/{file}: '{task.get('name')}' refreshes the index unconditionally (when: {when!r})")
