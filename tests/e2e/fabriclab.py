"""The lab pod's fabric with real routing daemons: the leaves and spines of the plan run as
containers with Debian's frr package and the frr.conf `superpod plan` renders for them; the node
containers (the shared lab pod's) carry their planned rail addresses; every cable of the plan
between them is a veth pair named by its planned ends (node netdev, switch port).

Used by tests/e2e/test_fabric_e2e.py, by the OOB network's lab (tests/e2e/test_oob_e2e.py: the
rack OOB switches, the aggregation switches and the in-band cores, with no node), and by the
cabling validation lab: `cables` says which veth is which planned cable, `unplug`/`plug`/`rewire`
move one.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from tests.e2e.labpod import docker, ensure_image
from topology.layout.model import Layout
from topology.render.switches.build import build_intents
from topology.render.switches.frr import render_frr

PACKAGES = ("frr", "lldpd", "iputils-ping")  # routing daemons, LLDP for the cabling lab, a prober
SWITCH_ROLES = ("leaf", "spine")
TIERS = ("node-leaf", "leaf-spine")
RAIL_TABLE_BASE = 100  # node policy routing: rail i answers from table 100 + i


@dataclass(frozen=True)
class Cable:
    """One planned cable, as wired: the veth end named a_port lives in a_device's container."""

    a_device: str
    a_port: str
    b_device: str
    b_port: str
    tier: str


def fabric_image(base: str) -> str:
    """The base image plus PACKAGES, built once with `docker commit`, keyed by its inputs."""
    key = hashlib.sha256(f"{base} {' '.join(PACKAGES)}".encode()).hexdigest()[:12]
    tag = f"superpod-fabric:{key}"
    if docker("image", "inspect", tag, check=False).returncode == 0:
        return tag
    name = f"superpod-fabric-build-{key}"
    docker("rm", "-f", name, check=False)
    script = (
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        f"{' '.join(PACKAGES)} >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/*"
    )
    try:
        docker("run", "--name", name, base, "sh", "-c", script)
        docker("commit", name, tag)
    finally:
        docker("rm", "-f", name, check=False)
    return tag


class FabricLab:
    frr_timeout_s = 30  # how long one switch's FRR may take to load its frr.conf
    def __init__(self, layout: Layout, node_containers: dict[str, str], session: str,
                 roles: tuple[str, ...] = SWITCH_ROLES, tiers: tuple[str, ...] = TIERS):
        """`session`: the lab pod's (ends with the test process's pid: LabPod.remove_orphans keeps
        containers labelled with a live pid, and the pod's own teardown removes them too).
        `roles`/`tiers`: the switches and cables it runs (the compute fabric's, or the OOB network's)."""
        self.layout = layout
        self.nodes = dict(node_containers)  # planned host -> running container (the lab pod's)
        self.session = session
        present = set(self.nodes) | {d.name for d in layout.devices if d.role in roles}
        self.switches = {d.name: f"{session}-{d.name}" for d in layout.devices if d.role in roles}
        self.cables = [
            Cable(lk.a_device, lk.a_port, lk.b_device, lk.b_port, lk.tier)
            for lk in layout.links
            if lk.tier in tiers and lk.a_device in present and lk.b_device in present
        ]
        self.intents = {sw.name: sw for sw in build_intents(layout) if sw.name in self.switches}
        self.asn = {a.device: a.asn for a in layout.asns}
        self.pids: dict[str, str] = {}

    @contextmanager
    def running(self) -> Iterator[FabricLab]:
        """Started, wired and configured for the block; its containers and node ends removed after."""
        try:
            self.start(fabric_image(ensure_image()))
            self.wire()
            self.configure()
            yield self
        finally:
            self.remove()

    # ---- containers -------------------------------------------------------------------
    def start(self, image: str) -> None:
        """Switch containers without systemd: FRR's own init script runs its daemons. Started a
        few at a time (docker's own latency dominates: the whole-pod lab has some 40)."""
        def run(item: tuple[str, str]) -> None:
            name, container = item
            docker("rm", "-f", container, check=False)
            docker("run", "-d", "--name", container, "--hostname", name, "--label", f"superpod-e2e={self.session}",
                   "--network", "none", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_ADMIN",
                   "--sysctl", "net.ipv4.ip_forward=1", "--sysctl", "net.ipv4.fib_multipath_hash_policy=1",
                   # docker disables IPv6 in a container: BGP unnumbered runs over the ports' link-local
                   "--sysctl", "net.ipv6.conf.all.disable_ipv6=0", "--sysctl", "net.ipv6.conf.default.disable_ipv6=0",
                   "--tmpfs", "/run", image, "sleep", "infinity")

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(run, self.switches.items()))
        self._refresh_pids()

    def _refresh_pids(self) -> None:
        for host, container in {**self.nodes, **self.switches}.items():
            self.pids[host] = docker("inspect", "-f", "{{.State.Pid}}", container).stdout.strip()

    def remove(self) -> None:
        """Switch containers go (their veth ends with them); node ends and rail config are undone."""
        for container in self.switches.values():
            docker("rm", "-f", container, check=False)
        for host in self.nodes:
            for c in self.cables:
                if c.a_device == host:
                    self.ip(host, "link", "del", c.a_port, check=False)
            for rail in range(16):
                self.ip(host, "rule", "del", "table", str(RAIL_TABLE_BASE + rail), check=False)

    # ---- cables -------------------------------------------------------------------------
    def ip(self, host: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["nsenter", "-t", self.pids[host], "-n", "ip", *args], check=check,
                              capture_output=True, text=True)

    def plug(self, a: tuple[str, str], b: tuple[str, str]) -> None:
        """A veth pair between two containers, each end named as its planned port (<= 15 chars)."""
        self.ip(a[0], "link", "del", a[1], check=False)
        self.ip(b[0], "link", "del", b[1], check=False)
        subprocess.run(["ip", "link", "add", a[1], "netns", self.pids[a[0]], "mtu", "9216", "type", "veth",
                        "peer", "name", b[1], "netns", self.pids[b[0]], "mtu", "9216"],
                       check=True, capture_output=True)
        self.ip(a[0], "link", "set", a[1], "up")
        self.ip(b[0], "link", "set", b[1], "up")

    def unplug(self, end: tuple[str, str]) -> None:
        self.ip(end[0], "link", "del", end[1], check=False)  # its veth peer goes with it

    def rewire(self, cable: Cable, a: tuple[str, str] | None = None, b: tuple[str, str] | None = None) -> None:
        """Move one end (or both) of a planned cable elsewhere; addresses on it are re-applied."""
        self.unplug((cable.a_device, cable.a_port))
        self.plug(a or (cable.a_device, cable.a_port), b or (cable.b_device, cable.b_port))
        for host, port in (a or (cable.a_device, cable.a_port), b or (cable.b_device, cable.b_port)):
            self._address(host, [port])

    def wire(self, cables: Iterable[Cable] | None = None) -> None:
        for c in cables or self.cables:
            self.plug((c.a_device, c.a_port), (c.b_device, c.b_port))

    # ---- addresses and routing ----------------------------------------------------------------
    def _address(self, host: str, ports: list[str] | None = None) -> None:
        for a in self.layout.addresses_by_device.get(host, []):
            routed = a.pool in ("rails", "fabric_p2p") or (a.pool == "oob" and a.network.endswith("/31"))
            if routed and (ports is None or a.interface in ports):
                self.ip(host, "addr", "replace", a.address, "dev", a.interface, check=False)
        if host in self.nodes:
            self._node_routes(host)

    def _svis(self, switch: str) -> None:
        """A switch's management gateways (a rack's OOB subnet, the cores' in-band subnets, with
        their VRR address) on an interface each, named as the plan names the SVI: the connected
        route its frr.conf originates, and an address to ping. A veth pair with both ends up in
        the container (this kernel has no `dummy` driver; a veth without its peer has no carrier)."""
        for a in self.layout.addresses_by_device.get(switch, []):
            if a.pool in ("oob", "inband") and a.interface.startswith("vlan"):
                svi = a.interface.split("-")[0]
                self.ip(switch, "link", "add", svi, "type", "veth", "peer", "name", f"{svi}-host", check=False)
                for end in (svi, f"{svi}-host"):
                    self.ip(switch, "link", "set", end, "up")
                self.ip(switch, "addr", "replace", a.address, "dev", svi)

    def _node_routes(self, host: str) -> None:
        """Each rail answers from its own address through its own leaf (as roles/rail_network does)."""
        rails = self.layout.spec.addressing.rails
        for a in self.layout.addresses_by_device.get(host, []):
            if a.pool != "rails":
                continue
            rail = self.rail_of(host, a.interface)
            table = str(RAIL_TABLE_BASE + rail)
            src = a.address.split("/")[0]
            self.ip(host, "route", "replace", rails, "via", a.peer, "dev", a.interface, "src", src, "table", table,
                    check=False)
            self.ip(host, "rule", "del", "from", src, "table", table, check=False)
            self.ip(host, "rule", "add", "from", src, "table", table)

    def rail_of(self, host: str, netdev: str) -> int:
        leaf = next(c.b_device for c in self.cables if c.a_device == host and c.a_port == netdev)
        return self.layout.by_name[leaf].rail

    def rail_address(self, host: str, rail: int) -> str:
        netdev = next(c.a_port for c in self.cables if c.a_device == host and self.rail_of(host, c.a_port) == rail)
        return next(a.address for a in self.layout.addresses_by_device[host] if a.interface == netdev).split("/")[0]

    def configure(self) -> None:
        """Addresses from the plan on every wired port, the switches' SVIs, loopbacks, then FRR with
        the rendered frr.conf."""
        for host in [*self.nodes, *self.switches]:
            self._address(host)
        for switch in self.switches:
            self._svis(switch)
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(self._start_frr, self.switches))

    def _start_frr(self, switch: str) -> None:
        sw = self.intents[switch]
        container = self.switches[switch]
        if sw.loopback:
            self.ip(switch, "addr", "replace", sw.loopback, "dev", "lo")
        self.ip(switch, "link", "set", "lo", "up")
        conf = render_frr(sw)
        script = (
            "sed -i -e 's/^bgpd=no/bgpd=yes/' -e 's/^bfdd=no/bfdd=yes/' /etc/frr/daemons && "
            "cat > /etc/frr/frr.conf && "
            "chown frr:frr /etc/frr/frr.conf && /usr/lib/frr/frrinit.sh restart >/dev/null"
        )
        subprocess.run(["docker", "exec", "-i", container, "sh", "-c", script], input=conf, text=True, check=True,
                       capture_output=True)
        # on a loaded machine `vtysh -b` in frrinit can run before bgpd listens: load until it took
        deadline = time.monotonic() + self.frr_timeout_s
        while time.monotonic() < deadline:
            running = docker("exec", container, "vtysh", "-c", "show running-config", check=False).stdout
            if f"router bgp {sw.bgp.asn}" in running:
                return
            time.sleep(1)
            docker("exec", container, "vtysh", "-b", check=False)
        raise RuntimeError(f"{switch}: FRR did not take /etc/frr/frr.conf")

    # ---- observation ------------------------------------------------------------------------
    def vtysh(self, switch: str, command: str) -> dict:
        out = docker("exec", self.switches[switch], "vtysh", "-c", f"{command} json", check=False).stdout
        return json.loads(out or "{}")

    def ping_from(self, switch: str, src: str, dst: str, count: int = 3) -> bool:
        """ICMP from the switch's own address `src` to `dst`."""
        r = docker("exec", self.switches[switch], "ping", "-c", str(count), "-i", "0.2", "-W", "1", "-I", src, dst,
                   check=False)
        return r.returncode == 0

    def established(self, switch: str) -> dict[str, int]:
        """Established sessions: peer address -> the peer's AS."""
        peers = self.vtysh(switch, "show bgp ipv4 unicast summary").get("peers", {})
        return {ip: p["remoteAs"] for ip, p in peers.items() if p.get("state") == "Established"}

    def bfd_up(self, switch: str) -> set[str]:
        """Peers whose BFD session is up (bfdd runs beside bgpd: the sessions' `bfd profile`)."""
        peers = json.loads(docker("exec", self.switches[switch], "vtysh", "-c", "show bfd peers json",
                                  check=False).stdout or "[]")
        return {p["peer"] for p in peers if p.get("status") == "up"}

    def nexthops(self, switch: str, prefix: str) -> list[str]:
        """Next hops the kernel FIB uses for `prefix` on `switch` (installed ECMP members)."""
        return _active(self.vtysh(switch, f"show ip route {prefix}").get(prefix, []))

    def bgp_routes(self, switch: str) -> dict[str, list[str]]:
        """Every installed BGP route of `switch` with its next hops, in one vtysh call."""
        table = self.vtysh(switch, "show ip route bgp")
        return {prefix: _active(routes) for prefix, routes in table.items()}

    def ping(self, host: str, src: str, dst: str, count: int = 3) -> bool:
        """ICMP from `src` on `host` to `dst`, sent inside the node's network namespace."""
        image = docker("inspect", "-f", "{{.Config.Image}}", next(iter(self.switches.values()))).stdout.strip()
        r = docker("run", "--rm", "--network", f"container:{self.nodes[host]}", "--cap-add", "NET_RAW", image,
                   "ping", "-c", str(count), "-i", "0.2", "-W", "1", "-I", src, dst, check=False)
        return r.returncode == 0

    def wait(self, condition, timeout: float = 90, step: float = 1.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = condition()
            if last:
                return last
            time.sleep(step)
        return last


def _active(routes: list[dict]) -> list[str]:
    return sorted({nh["ip"] for r in routes if r.get("installed") for nh in r.get("nexthops", [])
                   if nh.get("active") and "ip" in nh})
