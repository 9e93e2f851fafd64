"""SwitchIntent -> frr.conf (SONiC with docker_routing_config_mode: split-unified, or plain FRR).

Interface addresses stay with the OS (SONiC's INTERFACE table, or the kernel in the lab): FRR
learns them through zebra, so this file holds routing only and works on any port naming.
"""

from __future__ import annotations

from topology.render.files import GENERATED
from topology.render.switches.intent import Bfd, BorderPolicy, SwitchIntent

# the in-band cores' border policy (topology/layout/border.py): names shared with the NVUE renderer
SITE_IN, POD_OUT, BORDER_IN, BORDER_OUT = "SITE-IN", "POD-OUT", "BORDER-IN", "BORDER-OUT"
# switch_services.bgp_graceful_restart -> bgpd's lines (FRR's default is helper-only)
GRACEFUL_RESTART = {"full": [" bgp graceful-restart"], "helper-only": [], "off": [" bgp graceful-restart-disable"]}


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
    # switch_services of the spec: BFD on the pod's own sessions, BGP graceful restart
    bfd = Bfd(interval_ms=sw.services.bfd[0], detect_multiplier=sw.services.bfd[1]) if sw.services.bfd else None
    if bfd:
        lines += _bfd_profile(bfd)
    if b.unnumbered:
        for n in b.neighbors:
            lines += [f"interface {port_name(n.interface)}", " ipv6 nd ra-interval 10", " no ipv6 nd suppress-ra",
                      "exit", "!"]
    lines += [
        f"router bgp {b.asn}",
        f" bgp router-id {b.router_id}",
        " bgp bestpath as-path multipath-relax",
        " no bgp ebgp-requires-policy",
        " no bgp default ipv4-unicast",
    ]
    lines += GRACEFUL_RESTART[sw.services.graceful_restart]
    lines.append(" neighbor FABRIC peer-group")
    lines.append(" neighbor FABRIC timers 3 9")
    lines.append(" neighbor FABRIC advertisement-interval 0")
    if b.unnumbered:  # a session option, not an address family's: IPv4 routes over the IPv6 LLA session
        lines.append(" neighbor FABRIC capability extended-nexthop")
    for n in b.neighbors:
        peer = port_name(n.interface) if b.unnumbered else n.address
        if n.next_hop_self and not b.unnumbered:  # iBGP across a peer link: FRR keeps a peer group all
            lines.append(f" neighbor {peer} remote-as {n.remote_as}")  # external or all internal
            lines.append(f" neighbor {peer} timers 3 9")
        else:
            lines.append(f" neighbor {peer} {'interface ' if b.unnumbered else ''}peer-group FABRIC")
            lines.append(f" neighbor {peer} remote-as {n.remote_as}")
        lines.append(f" neighbor {peer} description {n.peer}")
        if bfd and not n.site:
            lines.append(f" neighbor {peer} bfd profile {bfd.profile}")
    lines.append(" !")
    lines.append(" address-family ipv4 unicast")
    lines += [f"  network {net}" for net in b.networks]
    lines += [f"  aggregate-address {agg} summary-only" for agg in b.aggregates]
    lines.append("  neighbor FABRIC activate")
    for n in (n for n in b.neighbors if n.next_hop_self and not b.unnumbered):
        lines += [f"  neighbor {n.address} activate", f"  neighbor {n.address} next-hop-self"]
    if b.border:
        for n in (n for n in b.neighbors if n.site):
            peer = port_name(n.interface) if b.unnumbered else n.address
            lines += [f"  neighbor {peer} route-map {BORDER_IN} in", f"  neighbor {peer} route-map {BORDER_OUT} out"]
    lines.append(f"  maximum-paths {b.max_paths}")
    lines += [" exit-address-family", "exit", "!"]
    if b.border:
        lines += _border_policy(b.border)
    return "\n".join(lines) + "\n"


def _bfd_profile(bfd: Bfd) -> list[str]:
    return [
        "bfd",
        f" profile {bfd.profile}",
        f"  detect-multiplier {bfd.detect_multiplier}",
        f"  receive-interval {bfd.interval_ms}",
        f"  transmit-interval {bfd.interval_ms}",
        " exit",
        "exit",
        "!",
    ]


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
