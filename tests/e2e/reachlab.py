"""The whole pod on real routing daemons: every network's switches (compute leaves and spines,
storage leaves and spines, the in-band pairs and cores, the OOB rack and aggregation switches)
run FRR with the frr.conf `superpod plan` renders; a site-border stand-in runs FRR with a config
of the site's (not ours: the default route out, whatever the cores announce in); light host
containers (no systemd, a shell each) hold the GPU nodes' rail, storage and in-band addresses,
the storage servers', the mgmt nodes', and one stand-in per BMC. Every cable between them is a
veth pair named by its planned ends (FabricLab: cabling.csv's ports).

Stand-ins for what this kernel lacks (no bonding, macvlan or 802.1Q driver):
- a bond: its address on one member (the active one of active-backup); `fail_over` moves it to
  the other member, as the bonding driver would on carrier loss. The failover itself is not tested.
- an SVI: a Linux bridge named as the SVI (vlan10, vlan2, vlan200) holding the ports of that VLAN
  and one of the pair's peer-link cables (the n-th SVI the n-th cable: without a bond two would
  loop, without 802.1Q one cable carries one VLAN), with the switch's own address and the shared
  VRR gateway.
- VRR: both switches of a pair answer for the gateway with one virtual MAC, so a frame reaches
  the switch its host is cabled to; here the host's neighbour entry for the gateway is pinned to
  the MAC of the switch its active member is cabled to.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import netaddr

from tests.e2e.fabriclab import Cable, FabricLab
from tests.e2e.labpod import docker
from topology.layout.border import SITE_BORDER
from topology.layout.model import Layout
from topology.render.switches.build import FABRIC_OF_ROLE
from topology.render.switches.frr import render_frr

HOST_ROLES = ("gpu_node", "storage_server", "mgmt_node")
SWITCH_ROLES = tuple(r for r in FABRIC_OF_ROLE if r not in ("core",))  # the lab pod's compute fabric is two tiers
TIERS = ("node-leaf", "leaf-spine", "node-storage_leaf", "server-storage_leaf", "storage_leaf-storage_spine",
         "node-inband", "mgmt-core", "service-inband", "inband-core", "inband-spine", "inband-spine-core",
         "inband-peer", "oob-agg", "oob-uplink", "border")
BOND_TIERS = ("node-inband", "mgmt-core", "service-inband")
STORAGE_TABLE_BASE = 200  # a storage port answers from its own table, as a rail does
PROBE = (Path(__file__).parent / "icmp_probe.py").read_text()
SITE_ASN = 64999  # the site's own (outside the pod's range; the cores peer with `remote-as external`)


def bmc(device: str) -> str:
    """The BMC stand-in's key: a container of its own, its one port named `bmc` as planned."""
    return f"{device}.bmc"


class ReachLab(FabricLab):
    frr_timeout_s = 120  # 38 FRRs on 2 cores shared with other jobs

    def __init__(self, layout: Layout, session: str):
        """`session` ends with the test process's pid (LabPod.remove_orphans keeps live ones);
        container names carry `-reach-` so they never meet another lab's of the same session."""
        hosts = [d.name for d in layout.devices if d.role in HOST_ROLES]
        self.bmcs = [h for h in hosts if any(a.interface == "bmc" for a in layout.addresses_by_device.get(h, []))]
        super().__init__(layout, {h: h for h in hosts}, session, roles=SWITCH_ROLES, tiers=TIERS)
        self.switches = {s: f"{session}-reach-{s}" for s in [*self.switches, SITE_BORDER]}
        self.nodes = {h: f"{session}-reach-{h}" for h in hosts} | {
            bmc(h): f"{session}-reach-{h}-bmc" for h in self.bmcs}
        self.cables += [Cable(lk.a_device, lk.a_port, lk.b_device, lk.b_port, lk.tier) for lk in layout.border_links]
        self.cables += [Cable(bmc(lk.a_device), lk.a_port, lk.b_device, lk.b_port, lk.tier)
                        for lk in layout.links if lk.tier == "device-oob" and lk.a_device in self.bmcs]
        self.active: dict[str, str] = {}  # host -> the bond member its address is on
        self._batch: dict[str, list[str]] | None = None
        self._macs: dict[tuple[str, str], str] = {}

    # ---- containers -------------------------------------------------------------------
    def start(self, image: str) -> None:
        """Hosts first (a shell each; one address per subnet answers ARP, as multi-NIC hosts are
        set up), then the switches and the site's border (FabricLab's, which reads every pid)."""
        def run(item: tuple[str, str]) -> None:
            key, container = item
            docker("rm", "-f", container, check=False)
            docker("run", "-d", "--name", container, "--hostname", key.replace(".", "-"), "--label",
                   f"superpod-e2e={self.session}", "--network", "none", "--cap-add", "NET_ADMIN", "--cap-add",
                   "NET_RAW", "--sysctl", "net.ipv4.conf.all.arp_ignore=1", "--sysctl",
                   "net.ipv4.conf.all.arp_announce=2", "--sysctl", "net.ipv4.conf.all.rp_filter=0",
                   "--tmpfs", "/run", image, "sleep", "infinity")

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(run, self.nodes.items()))
        super().start(image)

    def remove(self) -> None:
        with ThreadPoolExecutor(8) as pool:
            containers = [*self.switches.values(), *self.nodes.values()]
            list(pool.map(lambda c: docker("rm", "-f", c, check=False), containers))

    def sh(self, key: str, script: str, check: bool = False) -> subprocess.CompletedProcess:
        container = self.switches.get(key) or self.nodes[key]
        return docker("exec", container, "sh", "-c", script, check=check)

    # ---- batched `ip` ----------------------------------------------------------------------
    def ip(self, host: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Inside `batched()`, queued for the host's one `ip -batch`; else run at once."""
        if self._batch is not None:
            self._batch.setdefault(host, []).append(" ".join(args))
            return subprocess.CompletedProcess(args, 0, "", "")
        return super().ip(host, *args, check=check)

    @contextmanager
    def batched(self) -> Iterator[None]:
        """`ip` commands queued per namespace and run as one `ip -force -batch` each (a thousand
        nsenter calls otherwise: minutes on this machine). -force: a failed line (a rule or
        address not there to delete) does not stop the rest, as check=False does one by one."""
        self._batch = {}
        try:
            yield
        finally:
            batch, self._batch = self._batch, None
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda item: self._run_batch(*item), batch.items()))

    def _run_batch(self, host: str, commands: list[str]) -> None:
        subprocess.run(["nsenter", "-t", self.pids[host], "-n", "ip", "-force", "-batch", "-"],
                       input="\n".join(commands) + "\n", text=True, capture_output=True)

    def wire(self, cables: Iterable[Cable] | None = None) -> None:
        """Every veth pair from one `ip -batch` in this namespace, each end created in its container."""
        cables = list(cables or self.cables)
        adds = [f"link add {c.a_port} netns {self.pids[c.a_device]} mtu 9216 type veth peer name {c.b_port} "
                f"netns {self.pids[c.b_device]} mtu 9216" for c in cables]
        subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(adds) + "\n", text=True, capture_output=True)
        with self.batched():
            for c in cables:
                self.ip(c.a_device, "link", "set", c.a_port, "up")
                self.ip(c.b_device, "link", "set", c.b_port, "up")

    # ---- addresses ------------------------------------------------------------------------
    def configure(self) -> None:
        with self.batched():
            for host in self.switches:
                if host != SITE_BORDER:
                    self._address(host)
                    self._svis(host)
                    if self.intents[host].loopback:
                        self.ip(host, "addr", "replace", self.intents[host].loopback, "dev", "lo")
                self.ip(host, "link", "set", "lo", "up")
            for a in self.layout.addresses:  # the site's end of each border /31
                if a.pool == "border":
                    port = next(c.b_port for c in self.cables if c.tier == "border" and c.a_port == a.interface
                                and c.a_device == a.device)
                    self.ip(SITE_BORDER, "addr", "replace", f"{a.peer}/31", "dev", port)
        with self.batched():  # after the switches' bridges exist: the hosts pin their gateways' MACs
            for key in self.nodes:
                self._host(key)
        with ThreadPoolExecutor(4) as pool:  # 8 at once left a daemon unloaded for 30 s on this 2-core machine
            list(pool.map(self._start_frr, [s for s in self.switches if s != SITE_BORDER]))
        self._start_site()

    def _address(self, host: str, ports: list[str] | None = None) -> None:
        super()._address(host, ports)
        for a in self.layout.addresses_by_device.get(host, []):  # the cores' ends of the border /31s
            if a.pool == "border" and (ports is None or a.interface in ports):
                self.ip(host, "addr", "replace", a.address, "dev", a.interface, check=False)

    def _svis(self, switch: str) -> None:
        """Each SVI a bridge of its VLAN's ports (bond members included) and the first peer link."""
        sw = self.intents[switch]
        members: dict[int, list[str]] = {}
        for p in sw.ports:
            if p.access_vlan is not None:
                members.setdefault(p.access_vlan, []).append(p.name)
        for b in sw.bonds:
            members.setdefault(b.access_vlan, []).extend(b.members)
        # one peer-link cable per SVI (each a bridge of its own: a port joins one bridge)
        peer = list(sw.pairing.peer_link) if sw.pairing else []
        wired = {c.a_port for c in self.cables if c.a_device == switch} | {
            c.b_port for c in self.cables if c.b_device == switch}
        for i, svi in enumerate(sw.svis):
            name = f"vlan{svi.vlan}"
            self.ip(switch, "link", "add", name, "type", "bridge")
            for port in [*members.get(svi.vlan, []), *peer[i:i + 1]]:
                if port in wired:
                    self.ip(switch, "link", "set", port, "master", name)
            self.ip(switch, "link", "set", name, "up")
            for addr in (svi.address, svi.vrr):
                if addr:
                    self.ip(switch, "addr", "replace", addr, "dev", name)

    def _host(self, key: str) -> None:
        """A host's addresses: rails (FabricLab's tables), storage ports (a table each), its bond on
        the member cabled to side a, the BMC stand-in's port; the in-band (or BMC) gateway default."""
        device = key.removesuffix(".bmc")
        addrs = self.layout.addresses_by_device.get(device, [])
        if key != device:  # a BMC stand-in
            a = next(a for a in addrs if a.interface == "bmc")
            self.ip(key, "addr", "replace", a.address, "dev", "bmc")
            self._gateway(key, "bmc", a.peer)
            return
        super()._address(key)  # rails and their per-rail tables
        for i, a in enumerate(x for x in addrs if x.pool == "storage"):
            table = str(STORAGE_TABLE_BASE + i)
            self.ip(key, "addr", "replace", a.address, "dev", a.interface)
            self.ip(key, "route", "replace", self.layout.spec.addressing.storage, "via", a.peer, "dev", a.interface,
                    "table", table)
            self.ip(key, "rule", "add", "from", a.address.split("/")[0], "table", table)
        bond = next((a for a in addrs if a.interface == "bond0"), None)
        if bond is not None:
            self.fail_over(key, self.bond_members(key)[0])

    def bond_members(self, host: str) -> list[str]:
        """The host's bond members in the order of the switches they are cabled to (side a first)."""
        ends = [(c.b_device, c.a_port) for c in self.cables if c.a_device == host and c.tier in BOND_TIERS]
        return [port for _, port in sorted(ends, key=lambda e: self.layout.by_name[e[0]].slot)]

    def switch_of(self, host: str, port: str) -> tuple[str, str]:
        return next((c.b_device, c.b_port) for c in self.cables if c.a_device == host and c.a_port == port)

    def fail_over(self, host: str, member: str) -> None:
        """The bond's address to `member` (the stand-in for active-backup), the gateway pinned to
        the switch that member is cabled to (VRR's shared MAC: that switch routes the frame)."""
        bond = next(a for a in self.layout.addresses_by_device[host] if a.interface == "bond0")
        for port in self.bond_members(host):
            self.ip(host, "addr", "flush", "dev", port)
        self.ip(host, "addr", "replace", bond.address, "dev", member)
        self.active[host] = member
        self._gateway(host, member, bond.peer)

    def _gateway(self, host: str, port: str, gateway: str) -> None:
        switch, switch_port = self.switch_of(host, port)
        svi = next(f"vlan{s.vlan}" for s in self.intents[switch].svis
                   if _same_subnet(s.vrr or s.address, gateway))
        mac = self.mac(switch, svi)
        self.ip(host, "neigh", "replace", gateway, "lladdr", mac, "dev", port, "nud", "permanent")
        self.ip(host, "route", "replace", "default", "via", gateway, "dev", port)

    def mac(self, switch: str, interface: str) -> str:
        if (switch, interface) not in self._macs:
            out = subprocess.run(["nsenter", "-t", self.pids[switch], "-n", "ip", "-j", "link", "show", interface],
                                 capture_output=True, text=True, check=True).stdout
            self._macs[(switch, interface)] = json.loads(out)[0]["address"]
        return self._macs[(switch, interface)]

    def _start_site(self) -> None:
        """The site's border routers: eBGP to each core's end, the default route sent down."""
        cores = sorted((a for a in self.layout.addresses if a.pool == "border"), key=lambda a: a.peer)
        lines = ["frr defaults datacenter", f"hostname {SITE_BORDER}", "!", f"router bgp {SITE_ASN}",
                 f" bgp router-id {cores[0].peer}", " no bgp ebgp-requires-policy", " no bgp default ipv4-unicast",
                 " bgp bestpath as-path multipath-relax"]
        for a in cores:
            ip = a.address.split("/")[0]
            lines += [f" neighbor {ip} remote-as external", f" neighbor {ip} timers 3 9"]
        lines += [" address-family ipv4 unicast"]
        for a in cores:
            ip = a.address.split("/")[0]
            lines += [f"  neighbor {ip} activate", f"  neighbor {ip} default-originate"]
        lines += ["  maximum-paths 64", " exit-address-family", "exit", ""]
        self._load_frr(SITE_BORDER, "\n".join(lines))

    def _start_frr(self, switch: str) -> None:
        self._load_frr(switch, render_frr(self.intents[switch]))

    def _load_frr(self, switch: str, conf: str) -> None:
        """zebra and bgpd started directly, then `conf` loaded with `vtysh -b` until it took, in one
        docker exec. Not frrinit's watchfrr: on the loaded machine it restarted daemons slow to
        answer, and a switch never loaded its config in 180 s; this way one loads in seconds."""
        script = (
            "cat > /etc/frr/frr.conf && chown frr:frr /etc/frr/frr.conf && install -d -o frr -g frr /run/frr && "
            "/usr/lib/frr/zebra -d -F datacenter && /usr/lib/frr/bgpd -d -F datacenter && "
            f"for i in $(seq {self.frr_timeout_s}); do vtysh -b >/dev/null 2>&1; "
            "vtysh -c 'show running-config' | grep -q '^router bgp' && exit 0; sleep 1; done; exit 1"
        )
        r = subprocess.run(["docker", "exec", "-i", self.switches[switch], "sh", "-c", script], input=conf,
                           text=True, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"{switch}: FRR did not take /etc/frr/frr.conf: {r.stderr[-500:]}")

    # ---- failures ---------------------------------------------------------------------------
    def ports_of(self, switch: str) -> list[str]:
        return [c.a_port for c in self.cables if c.a_device == switch] + [
            c.b_port for c in self.cables if c.b_device == switch]

    def power_off(self, switch: str) -> None:
        """A switch gone: its ports down, so every cable's far end loses carrier as a dead switch's
        peers do (a frozen container alone still forwards in its kernel), and its daemons frozen.
        The freeze can fail transiently on a loaded machine ("unable to freeze"): a few tries."""
        with self.batched():
            for port in self.ports_of(switch):
                self.ip(switch, "link", "set", port, "down")
        for _ in range(5):
            r = docker("pause", self.switches[switch], check=False)
            if r.returncode == 0:
                return
            time.sleep(1)
        raise RuntimeError(f"{switch}: {r.stderr}")

    def power_on(self, switch: str) -> None:
        docker("unpause", self.switches[switch], check=False)
        with self.batched():
            for port in self.ports_of(switch):
                self.ip(switch, "link", "set", port, "up")

    # ---- observation ------------------------------------------------------------------------
    def unreachable(self, probes: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """The (host, source, destination) probes whose ICMP echo gets no answer: one prober per
        host (tests/e2e/icmp_probe.py, a raw socket per source), hosts a few at a time."""
        by_host: dict[str, list[tuple[str, str]]] = {}
        for host, src, dst in probes:
            by_host.setdefault(host, []).append((src, dst))

        def run(host: str) -> list[tuple[str, str, str]]:
            pairs = "\n".join(f"{s} {d}" for s, d in by_host[host])
            r = subprocess.run(["docker", "exec", "-i", self.nodes[host], "python3", "-c", PROBE],
                               input=pairs, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{host}: the prober failed: {r.stderr}")
            return [(host, *line.split()) for line in r.stdout.split("\n") if line.strip()]

        with ThreadPoolExecutor(4) as pool:
            return [miss for misses in pool.map(run, by_host) for miss in misses]

    def kernel_routes(self, switch: str) -> dict[str, list[str]]:
        """The switch's kernel routing table (main), default route excluded: prefix -> next hops."""
        out = subprocess.run(["nsenter", "-t", self.pids[switch], "-n", "ip", "-j", "-4", "route", "show", "table",
                              "main"], capture_output=True, text=True, check=True).stdout
        routes = {}
        for r in json.loads(out or "[]"):
            if r["dst"] != "default":
                hops = r.get("nexthops", [r])
                routes[r["dst"] if "/" in r["dst"] else f"{r['dst']}/32"] = sorted(
                    h["gateway"] for h in hops if "gateway" in h)
        return routes


def _same_subnet(cidr: str, address: str) -> bool:
    return netaddr.IPAddress(address) in netaddr.IPNetwork(cidr)
