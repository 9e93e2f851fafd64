"""Every role's doc says, per declared platform, what was run and what is only declared: a
"What was run, per platform" table (in docs/<role>.md, or a section named after the role in the
doc that covers it) with a row for each platform of the role's meta/main.yml, and every test file
or molecule scenario it names exists."""

import re

import pytest

from tests.role_files import ROOT, load

HEADING = "## What was run, per platform"
# Roles whose doc is not docs/<role>.md: their table is a section "<HEADING>: <role>" there.
SHARED_DOC = {"cooling_monitor": "cooling.md", "dcgm_exporter": "kubernetes.md", "gpu_operator": "kubernetes.md",
              "lldp": "validate.md", "switch_fabric": "switches.md"}
SECTION_NAMED = {"dcgm_exporter", "gpu_operator", "lldp", "switch_fabric"}
# meta/main.yml platform -> how a table row names it
PLATFORM_LABEL = {("Debian", "bookworm"): "Debian 12", ("Ubuntu", "jammy"): "22.04", ("Ubuntu", "noble"): "24.04",
                  ("EL", "9"): "RHEL 9"}
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks/main.yml").is_file())


def table_rows(role):
    doc = ROOT / "docs" / SHARED_DOC.get(role, f"{role}.md")
    assert doc.is_file(), f"{role}: no doc {doc.name}"
    lines = doc.read_text().splitlines()
    heading = f"{HEADING}: {role}" if role in SECTION_NAMED else HEADING
    assert heading in lines, f"{role}: {doc.name} has no '{heading}' section"
    rows = []
    for line in lines[lines.index(heading) + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not line.startswith("|---") and not line.startswith("| platform"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


@pytest.mark.parametrize("role", ROLES)
def test_doc_has_a_row_per_declared_platform(role):
    rows = table_rows(role)
    assert rows and all(len(r) == 3 and all(r) for r in rows), f"{role}: rows need platform, run, declared: {rows}"
    platforms = load(ROOT / "roles" / role / "meta/main.yml")["galaxy_info"]["platforms"]
    for p in platforms:
        for version in p["versions"]:
            label = PLATFORM_LABEL[(p["name"], str(version))]
            assert any(label in r[0] for r in rows), f"{role}: no row for {label} ({p['name']} {version})"


@pytest.mark.parametrize("role", ROLES)
def test_what_the_table_says_was_run_exists(role):
    rows = table_rows(role)
    debian = next(r for r in rows if "Debian 12" in r[0])
    assert f"molecule `{role}/default`" in debian[1], f"{role}: the Debian row must name molecule `{role}/default`"
    assert (ROOT / "roles" / role / "molecule/default/molecule.yml").is_file()
    for row in rows:
        for path in re.findall(r"`(tests/[^`]+?\.py)", row[1]):
            assert (ROOT / path).is_file(), f"{role}: {path} named as run but missing"
