"""Jinja filters the roles share (ansible.cfg's filter_plugins; molecule/base.yml for the scenarios).

The installed packages are read with one query command (superpod_package_query: dpkg-query or
rpm) whose registered result superpod_installed_packages parses, not with package_facts: that
module always stores the list as a host fact, and Ansible decodes and copies a host's facts for
every task it runs there (the list was 60% of a node's facts and of that per-task cost).

superpod_missing_packages: of the packages a role wants, those this node lacks, read from the
installed packages site.yml's pre_task registered in this run (superpod_package_facts; a role
that reads them again, as nvidia_driver does after installing, sets that variable to its read).
Roles call their package manager only for a non-empty result, instead of once per role on a
converged node (each call opens the package cache: seconds per role in a no-op apply)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

# One line per package, tab-separated. dpkg: the status abbreviation's second letter is the
# current state ("i": installed; "rc" is removed with its configuration left).
_DPKG_QUERY = ["dpkg-query", "--show", "--showformat", "${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\n"]
_RPM_QUERY = ["rpm", "--query", "--all", "--queryformat", "%{NAME}\t%{EPOCHNUM}\t%{VERSION}\t%{RELEASE}\t%{ARCH}\n"]


def superpod_package_query(os_family) -> list[str]:
    """The command (argv) that lists a node's installed packages for superpod_installed_packages;
    a family it does not know gets `false` (no read: the roles install as they always did)."""
    return {"Debian": _DPKG_QUERY, "RedHat": _RPM_QUERY}.get(str(os_family), ["false"])


def _dpkg_entry(line: str) -> dict | None:
    status, name, version, arch = (line.split("\t") + ["", "", "", ""])[:4]
    if len(status) >= 2 and status[1] == "i" and name:
        return {"name": name, "version": version, "arch": arch, "source": "apt"}
    return None


def _rpm_entry(line: str) -> dict | None:
    fields = line.split("\t")
    if len(fields) != 5 or not fields[0]:
        return None
    name, epoch, version, release, arch = fields
    return {"name": name, "epoch": None if epoch in ("", "0") else epoch, "version": version, "release": release,
            "arch": arch, "source": "rpm"}


def _grouped(entries) -> dict:
    """name -> its entries (one per architecture installed), as package_facts groups them."""
    installed: dict[str, list] = {}
    for entry in entries:
        if entry:
            installed.setdefault(entry["name"], []).append(entry)
    return installed


def superpod_installed_packages(read) -> Mapping | None:
    """name -> [{name, version, arch, source, (rpm:) release, epoch}], as package_facts lists them,
    from a registered superpod_package_query run (or a package_facts result); None when there
    is no usable read (none, skipped, failed, an unknown family)."""
    if not isinstance(read, Mapping) or read.get("skipped") or read.get("failed"):
        return None
    packages = (read.get("ansible_facts") or {}).get("packages")
    if isinstance(packages, Mapping):
        return packages
    if read.get("rc") != 0 or not isinstance(read.get("stdout"), str) or not isinstance(read.get("cmd"), list):
        return None
    entry = _rpm_entry if read["cmd"][:1] == ["rpm"] else _dpkg_entry
    return _grouped(map(entry, read["stdout"].splitlines()))


def _versions(entry: Mapping) -> set[str]:
    """The spellings one installed package's version goes by: apt's version, rpm's
    version-release, with and without the epoch."""
    version, release, epoch = (str(entry.get(k) or "") for k in ("version", "release", "epoch"))
    found = {version}
    if release:
        found.add(f"{version}-{release}")
    if epoch and epoch != "0":
        found |= {f"{epoch}:{v}" for v in list(found)}
    return {v for v in found if v}


def _matches(pin: str, entries) -> bool:
    """An installed version satisfies the pin (exact, or a glob as apt's name=1.2* takes)."""
    return any(fnmatch.fnmatchcase(v, pin) for e in entries if isinstance(e, Mapping) for v in _versions(e))


def _present(wanted: str, installed: Mapping, separator: str) -> bool:
    if wanted in installed:
        return True
    # name<separator>version (apt name=1.2-1; dnf name-1.2-1, where names hold dashes too):
    # present only when some split names an installed package at that version.
    parts = wanted.split(separator)
    for cut in range(1, len(parts)):
        name, pin = separator.join(parts[:cut]), separator.join(parts[cut:])
        if name in installed and pin and _matches(pin, installed[name]):
            return True
    return False


def superpod_missing_packages(wanted, fresh_read, separator: str = "="):
    """The entries of `wanted` (names, or name<separator>version pins) not installed as asked,
    in order. fresh_read: the package read of this run (site.yml's superpod_package_facts, or a
    role's later read). Without a fresh read every entry: the install task runs as it always
    did and the package manager decides (a host fact list, possibly an hour old in the fact
    cache, is never used). A pinned package installed at another version is missing."""
    if isinstance(wanted, str):
        wanted = [wanted]
    wanted = [str(w) for w in wanted]
    installed = superpod_installed_packages(fresh_read)
    if installed is None:
        return wanted
    return [w for w in wanted if not _present(w, installed, separator)]


class FilterModule:
    def filters(self):
        return {"superpod_missing_packages": superpod_missing_packages,
                "superpod_installed_packages": superpod_installed_packages,
                "superpod_package_query": superpod_package_query}
