"""The comparison: planned cables against discovered neighbor records.

Each discovered record names one cable (its two ends); a cable reported from both ends is one
cable. Against the plan a cable is correct (both ends where planned), part of a swap (two
planned cables whose far ends are exchanged), miswired (an end on a planned port, the other end
elsewhere), or unplanned (no end on a planned port). A planned cable nobody reports is missing
when an end's device reported, and unverified when neither did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topology.operate.neighbors import Discovery, Endpoint, PlannedLink

Cable = tuple[Endpoint, Endpoint]  # ends in sorted order


def cable(a: Endpoint, b: Endpoint) -> Cable:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # correct, missing, miswired, swap, wrong_speed, unplanned, unverified
    planned: PlannedLink | None = None
    found: tuple[Cable, ...] = ()  # the cable(s) seen instead of, or for, the planned one
    other: PlannedLink | None = None  # a swap's partner
    speed_gbps: int | None = None  # wrong_speed: the speed seen
    detail: str = ""


@dataclass
class Result:
    findings: list[Finding] = field(default_factory=list)
    not_heard: list[str] = field(default_factory=list)  # planned devices nobody heard from
    reporters: int = 0

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    @property
    def all_correct(self) -> bool:
        return not self.not_heard and all(f.kind == "correct" for f in self.findings)


def _seen_cables(discovery: Discovery) -> dict[Cable, int | None]:
    """Each discovered cable once, with the speed either end reported (a port's own state wins)."""
    advertised: dict[Cable, int | None] = {}
    measured: dict[Cable, int] = {}
    virtual: set[Cable] = set()
    for nb in discovery.neighbors:
        c = cable(nb.local, nb.remote)
        advertised[c] = advertised.get(c) or nb.speed_gbps
        state = discovery.ports.get(nb.local)
        if state and state.virtual:
            virtual.add(c)
        elif state and state.speed_gbps:
            measured[c] = state.speed_gbps
    return {c: None if c in virtual else measured.get(c, speed) for c, speed in advertised.items()}


def compare(links: list[PlannedLink], discovery: Discovery) -> Result:
    planned_at: dict[Endpoint, PlannedLink] = {}
    for lk in links:
        planned_at[lk.a] = lk
        planned_at[lk.b] = lk
    seen = _seen_cables(discovery)
    seen_at: dict[Endpoint, Cable] = {}
    for c in seen:
        for end in c:
            seen_at.setdefault(end, c)
    heard = set(discovery.reporters) | {end[0] for c in seen for end in c}

    result = Result(reporters=len(discovery.reporters))
    wrong: list[PlannedLink] = []
    for lk in links:
        c = cable(lk.a, lk.b)
        if c in seen:
            speed = seen[c]
            if speed is not None and speed != lk.speed_gbps:
                result.findings.append(Finding("wrong_speed", lk, (c,), speed_gbps=speed))
            else:
                result.findings.append(Finding("correct", lk, (c,)))
        elif lk.a in seen_at or lk.b in seen_at:
            wrong.append(lk)
        elif lk.a[0] in heard or lk.b[0] in heard:
            result.findings.append(Finding("missing", lk, detail=_down_detail(lk, discovery)))
        else:
            result.findings.append(Finding("unverified", lk))

    result.findings += _miswired(wrong, seen_at)
    for c in seen:
        if c[0] not in planned_at and c[1] not in planned_at:
            result.findings.append(Finding("unplanned", found=(c,), speed_gbps=seen[c]))

    # the site's routers are never polled: a border cable nobody saw is missing on the pod's end
    planned_devices = {end[0] for lk in links for end in ((lk.a,) if lk.site_end else (lk.a, lk.b))}
    result.not_heard = sorted(planned_devices - heard)
    return result


def _down_detail(lk: PlannedLink, discovery: Discovery) -> str:
    downs = [f"{d} {p} is down" for d, p in (lk.a, lk.b)
             if (s := discovery.ports.get((d, p))) is not None and s.up is False]
    return "; ".join(downs) or "no neighbor seen on either end"


def _miswired(wrong: list[PlannedLink], seen_at: dict[Endpoint, Cable]) -> list[Finding]:
    """Pairs whose far ends are exchanged become swaps; the rest are single miswires."""
    out: list[Finding] = []
    paired: set[PlannedLink] = set()
    for lk in wrong:
        if lk in paired:
            continue
        partner = _swap_partner(lk, seen_at, wrong)
        if partner is not None and partner not in paired:
            paired |= {lk, partner}
            found = tuple(sorted({seen_at[e] for e in (lk.a, lk.b, partner.a, partner.b) if e in seen_at}))
            out.append(Finding("swap", lk, found, other=partner))
    for lk in wrong:
        if lk not in paired:
            found = tuple(sorted({seen_at[e] for e in (lk.a, lk.b) if e in seen_at}))
            out.append(Finding("miswired", lk, found))
    return out


def _swap_partner(lk: PlannedLink, seen_at: dict[Endpoint, Cable], wrong: list[PlannedLink]) -> PlannedLink | None:
    """The planned cable M with lk.a seen on M's far end and M's near end on lk.b (either way round)."""
    wrong_at = {e: m for m in wrong for e in (m.a, m.b)}
    for near, far in ((lk.a, lk.b), (lk.b, lk.a)):
        c = seen_at.get(near)
        if c is None:
            continue
        other_end = c[1] if c[0] == near else c[0]
        m = wrong_at.get(other_end)
        if m is None or m == lk:
            continue
        m_near = m.a if m.b == other_end else m.b  # the end of M that should face other_end's old partner
        back = seen_at.get(m_near)
        if back is not None and far in back:
            return m
    return None
