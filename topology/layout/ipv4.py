"""IPv4 addresses from integers, as text: the plan writes some 150k of them at 8k GPUs (every
/31 end, gateway and peer). netaddr's int_to_str formats four shifted octets in Python (about
0.9 us each); here the first three octets' text is kept per /24 (a pod uses a few thousand /24s)
and the last octet's text comes from a table: a quarter of the time, the same dotted-quad text
(no leading zeros), and what netaddr refuses (a value outside 0 .. 2**32-1) is refused too."""

from __future__ import annotations

import socket

_OCTET = [str(n) for n in range(256)]
_NETS: dict[int, str] = {}  # value >> 8 -> "a.b.c."
_NETS_MAX = 1 << 16


def int_to_str(value: int) -> str:
    """Dotted-quad text of an IPv4 address given as an unsigned 32-bit integer."""
    net = value >> 8
    head = _NETS.get(net)
    if head is None:
        head = _head(net, value)
    return head + _OCTET[value & 255]


def p2p_texts(lower: int) -> tuple[str, str]:
    """Both addresses of the /31 whose lower address is `lower` (even, so both share its /24's
    head): a point-to-point link's two ends and peers from one head lookup instead of four."""
    if lower & 1:
        raise ValueError(f"{lower!r} is no /31's lower address")
    net = lower >> 8
    head = _NETS.get(net)
    if head is None:
        head = _head(net, lower)
    last = lower & 255
    return head + _OCTET[last], head + _OCTET[last + 1]


def _head(net: int, value: int) -> str:
    try:
        head = socket.inet_ntoa((net << 8).to_bytes(4, "big"))[:-1]  # "a.b.c.0" -> "a.b.c."
    except OverflowError:
        raise ValueError(f"{value!r} is not a valid 32-bit unsigned integer!") from None
    if len(_NETS) >= _NETS_MAX:
        _NETS.clear()
    _NETS[net] = head
    return head
