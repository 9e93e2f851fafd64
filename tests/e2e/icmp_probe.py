"""ICMP echo from many (source, destination) pairs in one process: run inside a lab host's
container (`python3 - < this file`, pairs on stdin after a line `--`), it prints the pairs that
got no answer. A ping process per pair costs the 2-core lab minutes at thousands of pairs; one
raw socket per source address (bound to it, so the host's policy routing picks that source's
table, and only replies to it arrive there) costs a second. Up to ROUNDS tries per pair."""

import os
import select
import socket
import struct
import sys
import time

ROUNDS, WAIT_S = 3, 1.0


def checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF


def echo(ident: int, seq: int) -> bytes:
    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    return struct.pack("!BBHHH", 8, 0, checksum(header + b"superpod"), ident, seq) + b"superpod"


def main() -> None:
    pairs = [tuple(line.split()) for line in sys.stdin.read().split("\n") if line.strip()]
    ident = os.getpid() & 0xFFFF
    socks = {}
    for src in {s for s, _ in pairs}:
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        sock.bind((src, 0))
        socks[src] = sock
    waiting = dict(enumerate(pairs))
    for _ in range(ROUNDS):
        for seq, (src, dst) in waiting.items():
            try:
                socks[src].sendto(echo(ident, seq), (dst, 0))
            except OSError:
                pass  # no route: stays waiting
        deadline = time.monotonic() + WAIT_S
        while waiting and time.monotonic() < deadline:
            ready, _, _ = select.select(list(socks.values()), [], [], max(0.0, deadline - time.monotonic()))
            for sock in ready:
                packet, (peer, _) = sock.recvfrom(2048)
                icmp = packet[(packet[0] & 0x0F) * 4:]
                kind, _, _, got_id, seq = struct.unpack("!BBHHH", icmp[:8])
                if kind == 0 and got_id == ident and waiting.get(seq, (None, None))[1] == peer:
                    del waiting[seq]
        if not waiting:
            break
    for src, dst in waiting.values():
        print(src, dst)


main()
