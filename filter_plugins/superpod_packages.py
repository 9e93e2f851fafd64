"""Jinja filters the roles share (ansible.cfg's filter_plugins; molecule/base.yml for the scenarios).

superpod_missing_packages: of the packages a role wants, those this node lacks, read from the
installed packages site.yml's pre_task registered in this run (superpod_package_facts). Roles
call their package manager only for a non-empty result, instead of once per role on a converged
node (each call opens the package cache: seconds per role in a no-op apply)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping


def _installed(facts) -> Mapping | None:
    """The packages of a fresh package_facts result, or None (no fresh read: the role ran alone,
    the read failed, or only the fact cache's list exists, which may be an hour old)."""
    if not isinstance(facts, Mapping):
        return None
    packages = (facts.get("ansible_facts") or {}).get("packages")
    return packages if isinstance(packages, Mapping) else None


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


def superpod_missing_packages(wanted, fresh_read, facts=None, separator: str = "="):
    """The entries of `wanted` (names, or name<separator>version pins) not installed as asked,
    in order. fresh_read: site.yml's registered package_facts result of this run; facts: the
    host's ansible_facts, whose packages a role may have read again since (after installing or
    removing some), else the fresh read's list is used. Without a fresh read every entry: the
    install task runs as it always did and the package manager decides. A pinned package
    installed at another version is missing."""
    if isinstance(wanted, str):
        wanted = [wanted]
    wanted = [str(w) for w in wanted]
    installed = _installed(fresh_read)
    if installed is None:
        return wanted
    current = facts.get("packages") if isinstance(facts, Mapping) else None
    if isinstance(current, Mapping):
        installed = current
    return [w for w in wanted if not _present(w, installed, separator)]


class FilterModule:
    def filters(self):
        return {"superpod_missing_packages": superpod_missing_packages}
