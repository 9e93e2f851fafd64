"""SwitchIntent -> frr.conf (SONiC with docker_routing_config_mode: split-unified, or plain FRR).

Interface addresses stay with the OS (SONiC's INTERFACE table, or the kernel in the lab): FRR
learns them through zebra, so this file holds routing only and works on any port naming.
"""

from __future__ import annotations

from topology.render.files import GENERATED
from topology.render.switches.intent import BorderPolicy, SwitchIntent

# the in-band cores' border policy (topology/border.py): names shared with the NVUE renderer
SITE_IN, POD_OUT, BORDER_IN, BORDER_OUT = "SITE-IN", "POD-OUT", "BORDER-IN", "BORDER-OUT"
BFD_PROFILE = "fabric"  # the BFD timers of the pod's own sessions (the NVUE renderer's name too)
# switch_services.bgp_graceful_restart -> FRR's global command (helper-only is per peer: FRR has no
# global helper-only line, and its default may differ per release, so it is written out)
GRACEFUL_RESTART = {"full": " bgp graceful-restart", "off": " bgp graceful-restart-disable"}


def render_frr(sw: SwitchIntent, port_name=lambda name: name) -> str:
    """`port_name` maps a planned port to the OS's name (unnumbered sessions name ports)."""
    lines = [
        f"! {GENERATED}",
        f"! {sw.name} ({sw.role}, {sw.model})",
        "frr defaults datacenter",
        f"hostname {sw.name}",
        "log syslog informational",
        "service integrated-vtysh-config",
        "!",
    ]
    b = sw.bgp
    if b is None:
        return "\n".join(lines) + "\n"
    if b.unnumbered:
        for n in b.neighbors:
            lines += [f"interface {port_name(n.interface)}", " ipv6 nd ra-interval 10", " no ipv6 nd suppress-ra", "!"]
    lines += [
        f"router bgp {b.asn}",
        f" bgp router-id {b.router_id}",
        " bgp bestpath as-path multipath-relax",
        " no bgp ebgp-requires-policy",
        " no bgp default ipv4-unicast",
    ]
    gr = sw.services.graceful_restart
    if gr in GRACEFUL_RESTART:
        lines.append(GRACEFUL_RESTART[gr])
    lines.append(" neighbor FABRIC peer-group")
    lines.append(" neighbor FABRIC timers 3 9")
    lines.append(" neighbor FABRIC advertisement-interval 0")
    if gr == "helper-only":
        lines.append(" neighbor FABRIC graceful-restart-helper")
    for n in b.neighbors:
        if b.unnumbered:
            lines.append(f" neighbor {port_name(n.interface)} interface peer-group FABRIC")
            lines.append(f" neighbor {port_name(n.interface)} remote-as {n.remote_as}")
            lines.append(f" neighbor {port_name(n.interface)} description {n.peer}")
        else:
            lines.append(f" neighbor {n.address} peer-group FABRIC")
            lines.append(f" neighbor {n.address} remote-as {n.remote_as}")
            lines.append(f" neighbor {n.address} description {n.peer}")
        if sw.services.bfd and not n.site:  # the pod's own sessions; the site's routers may not run BFD
            lines.append(f" neighbor {port_name(n.interface) if b.unnumbered else n.address} bfd profile {BFD_PROFILE}")
    lines.append(" !")
    lines.append(" address-family ipv4 unicast")
    lines += [f"  network {net}" for net in b.networks]
    lines += [f"  aggregate-address {agg} summary-only" for agg in b.aggregates]
    lines.append("  neighbor FABRIC activate")
    if b.unnumbered:
        lines.append("  neighbor FABRIC capability extended-nexthop")
    if b.border:
        for n in (n for n in b.neighbors if n.site):
            peer = port_name(n.interface) if b.unnumbered else n.address
            lines += [f"  neighbor {peer} route-map {BORDER_IN} in", f"  neighbor {peer} route-map {BORDER_OUT} out"]
    lines.append(f"  maximum-paths {b.max_paths}")
    lines += [" exit-address-family", "exit", "!"]
    if b.border:
        lines += _border_policy(b.border)
    if sw.services.bfd and any(not n.site for n in b.neighbors):
        interval, multiplier = sw.services.bfd
        lines += ["bfd", f" profile {BFD_PROFILE}", f"  receive-interval {interval}",
                  f"  transmit-interval {interval}", f"  detect-multiplier {multiplier}", " exit", "exit", "!"]
    return "\n".join(lines) + "\n"


def _border_policy(policy: BorderPolicy) -> list[str]:
    """Prefix lists and route maps of the border sessions: the site's routes in, the summaries out
    (a core holding no management subnet announces nothing)."""
    lines = [f"ip prefix-list {SITE_IN} seq {10 * (i + 1)} permit {p}" for i, p in enumerate(policy.accept)]
    lines += [f"ip prefix-list {POD_OUT} seq {10 * (i + 1)} permit {p}" for i, p in enumerate(policy.announce)]
    lines += ["!", f"route-map {BORDER_IN} permit 10", f" match ip address prefix-list {SITE_IN}", "exit", "!"]
    if policy.announce:
        lines += [f"route-map {BORDER_OUT} permit 10", f" match ip address prefix-list {POD_OUT}", "exit", "!"]
    else:
        lines += [f"route-map {BORDER_OUT} deny 10", "exit", "!"]
    return lines
