"""A stand-in node for tests, the benchmark and the molecule scenario: a sysfs tree and
`ethtool -S` outputs written from recorded ConnectX-7 counters (tests/data/cx7).

Standard library only, so it runs on a bare node:
    python3 fakes.py ROOT RECORDINGS PHASE NETDEV:HCA[:down] ...
writes ROOT/sys/... and ROOT/ethtool/NETDEV; point the exporter's sysfs_root at ROOT/sys and
its ethtool_command at ``ethtool_command(ROOT)``.
"""

from __future__ import annotations

import sys
from pathlib import Path


def ethtool_command(root: Path | str) -> list[str]:
    """An ethtool stand-in: the netdev the exporter appends is $1, the recordings folder $0."""
    return ["/bin/sh", "-c", 'exec cat "$0/$1"', str(Path(root) / "ethtool")]


def _pairs(path: Path) -> dict[str, str]:
    return dict(line.split() for line in path.read_text().splitlines() if line.strip())


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)  # a scrape never reads half a file


def write_nic(root: Path, recordings: Path, phase: str, netdev: str, hca: str, port: int = 1, *,
              up: bool = True, speed_mbps: int = 400000) -> None:
    root = Path(root)
    net = root / "sys" / "class" / "net" / netdev
    _write(net / "operstate", "up\n" if up else "down\n")
    _write(net / "speed", f"{speed_mbps if up else -1}\n")
    _write(net / "carrier_changes", "4\n" if phase == "t0" else "6\n")
    if hca:
        p = root / "sys" / "class" / "infiniband" / hca / "ports" / str(port)
        _write(p / "state", "4: ACTIVE\n" if up else "1: DOWN\n")
        _write(p / "link_layer", "Ethernet\n")
        for src in ("hw_counters", "counters"):
            for name, value in _pairs(Path(recordings) / f"{src}_{phase}.txt").items():
                _write(p / src / name, value + "\n")
    _write(root / "ethtool" / netdev, (Path(recordings) / f"ethtool_{phase}.txt").read_text())


def main(argv: list[str]) -> int:
    root, recordings, phase, *nics = argv
    for spec in nics:
        netdev, hca, *flags = spec.split(":")
        write_nic(Path(root), Path(recordings), phase, netdev, hca, up="down" not in flags)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
