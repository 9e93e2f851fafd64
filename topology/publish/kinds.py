"""The Nautobot object types a sync writes, parents first, each one `Kind`: how to read it
(endpoint, natural key, the fields we manage, in names rather than ids), what the plan wants, and
how to write it (ids resolved from what was read or just created). The engine: sync.py."""

from __future__ import annotations

from topology.publish.sync_types import Ctx, Kind, ref_id
from topology.render.dcim import OWNER_TAG, ROLE_COLORS

ASN_FIELD = "superpod_asn"  # plain Nautobot has no ASN model: a device custom field holds it
LOCATION_TYPE = "Site"
TAGGED = ["dcim.location", "dcim.rack", "dcim.device", "dcim.interface", "dcim.cable", "ipam.prefix", "ipam.ipaddress",
          "dcim.powerpanel", "dcim.powerfeed"]
LOCATED = ["dcim.device", "dcim.rack", "dcim.rackgroup", "dcim.powerpanel"]
PLANNED, ACTIVE = "Planned", "Active"


# ---- the object types, parents first ------------------------------------------------------------

def _choice(v):
    """A choice field as the API gives it: {"value": ..., "label": ...} or the bare value."""
    return v.get("value") if isinstance(v, dict) else v


def _tags(obj, ctx):
    return ctx.tag_names(obj)


def _content_types(obj):
    return frozenset(obj.get("content_types") or ())


def kinds() -> list[Kind]:
    d_site = lambda ctx: ctx.desired.site  # noqa: E731
    return [
        Kind("tags", "extras/tags/", key=lambda o, c: o["name"],
             fields=lambda o, c: {"content_types": _content_types(o)},
             want=lambda c: {t: {"content_types": frozenset(TAGGED)} for t in c.desired.tags},
             body=lambda k, f, c: {"name": k, "content_types": sorted(f["content_types"])}, prunable=False),
        Kind("custom_fields", "extras/custom-fields/", key=lambda o, c: o["key"],
             fields=lambda o, c: {"type": _choice(o.get("type")), "content_types": _content_types(o)},
             want=lambda c: {ASN_FIELD: {"type": "integer", "content_types": frozenset({"dcim.device"})}},
             body=lambda k, f, c: {"key": k, "label": "ASN", "type": f["type"],
                                   "content_types": sorted(f["content_types"]),
                                   "description": "BGP ASN from the superpod plan"}, prunable=False),
        Kind("statuses", "extras/statuses/", key=lambda o, c: o["name"], fields=lambda o, c: {},
             want=lambda c: {}, body=lambda k, f, c: {}, prunable=False, m2m=False),
        Kind("location_types", "dcim/location-types/", key=lambda o, c: o["name"],
             fields=lambda o, c: {"content_types": _content_types(o)},
             want=lambda c: {LOCATION_TYPE: {"content_types": frozenset(LOCATED)}},
             body=lambda k, f, c: {"name": k, "content_types": sorted(f["content_types"]), "nestable": True},
             prunable=False),
        Kind("locations", "dcim/locations/", key=lambda o, c: o["name"],
             fields=lambda o, c: {"location_type": c.name("location_types", o["location_type"]),
                                  "status": c.name("statuses", o["status"]), "tags": _tags(o, c)},
             want=lambda c: {d_site(c): {"location_type": LOCATION_TYPE, "status": PLANNED,
                                         "tags": frozenset({OWNER_TAG})}},
             body=lambda k, f, c: {"name": k, "location_type": c.id("location_types", f["location_type"]),
                                   "status": c.id("statuses", f["status"]), "tags": c.tag_ids(f["tags"])}),
        Kind("rack_groups", "dcim/rack-groups/", key=lambda o, c: (c.name("locations", o["location"]), o["name"]),
             fields=lambda o, c: {},
             want=lambda c: {(d_site(c), row): {} for row in c.desired.rows},
             body=lambda k, f, c: {"name": k[1], "location": c.id("locations", k[0])},
             label=lambda k: k[1], m2m=False),
        Kind("racks", "dcim/racks/", key=lambda o, c: (c.name("locations", o["location"]), o["name"]),
             fields=lambda o, c: {"rack_group": c.name("rack_groups", o["rack_group"]), "u_height": o["u_height"],
                                  "status": c.name("statuses", o["status"]), "tags": _tags(o, c)},
             want=lambda c: {(d_site(c), r.name): {"rack_group": (d_site(c), r.row), "u_height": r.u_height,
                                                   "status": PLANNED, "tags": frozenset(r.tags)}
                             for r in c.desired.racks},
             body=lambda k, f, c: {"name": k[1], "location": c.id("locations", k[0]), "u_height": f["u_height"],
                                   "rack_group": c.id("rack_groups", f["rack_group"]),
                                   "status": c.id("statuses", f["status"]), "tags": c.tag_ids(f["tags"])},
             label=lambda k: k[1]),
        Kind("manufacturers", "dcim/manufacturers/", key=lambda o, c: o["name"], fields=lambda o, c: {},
             want=lambda c: {m: {} for m in c.desired.manufacturers}, body=lambda k, f, c: {"name": k},
             prunable=False, m2m=False),
        Kind("device_types", "dcim/device-types/", key=lambda o, c: o["model"],
             fields=lambda o, c: {"manufacturer": c.name("manufacturers", o["manufacturer"]),
                                  "u_height": o["u_height"], "comments": o.get("comments", "")},
             want=lambda c: {t.model: {"manufacturer": t.manufacturer, "u_height": t.u_height,
                                       "comments": t.description} for t in c.desired.device_types},
             body=lambda k, f, c: {"model": k, "manufacturer": c.id("manufacturers", f["manufacturer"]),
                                   "u_height": f["u_height"], "comments": f["comments"]}, prunable=False, m2m=False),
        *power_template_kinds(),
        Kind("roles", "extras/roles/", key=lambda o, c: o["name"],
             fields=lambda o, c: {"content_types": _content_types(o)},
             want=lambda c: {r: {"content_types": frozenset({"dcim.device"})} for r in c.desired.roles},
             body=lambda k, f, c: {"name": k, "content_types": sorted(f["content_types"]),
                                   "color": ROLE_COLORS.get(k, "607d8b")}, prunable=False),
        Kind("devices", "dcim/devices/", key=lambda o, c: o["name"], fields=_device_fields, want=_want_devices,
             body=_device_body, params=lambda c: _in_site(c)),
        *power_kinds(),
        Kind("interfaces", "dcim/interfaces/", key=lambda o, c: (c.name("devices", o["device"]), o["name"])
             if c.name("devices", o["device"]) else None, params=lambda c: _in_site(c),
             fields=lambda o, c: {"type": _choice(o.get("type")), "speed": o.get("speed"),
                                  "mgmt_only": o["mgmt_only"], "status": c.name("statuses", o["status"]),
                                  "tags": _tags(o, c)},
             want=lambda c: {(i.device, i.name): {"type": i.type, "speed": i.speed_kbps, "mgmt_only": i.mgmt_only,
                                                  "status": PLANNED, "tags": frozenset({OWNER_TAG})}
                             for i in c.desired.interfaces},
             body=lambda k, f, c: {"device": c.id("devices", k[0]), "name": k[1], "type": f["type"],
                                   "speed": f["speed"], "mgmt_only": f["mgmt_only"],
                                   "status": c.id("statuses", f["status"]), "tags": c.tag_ids(f["tags"])},
             label=lambda k: f"{k[0]}:{k[1]}", parallel=True),
        Kind("cables", "dcim/cables/", key=_cable_key, fields=_cable_fields, want=_want_cables, body=_cable_body,
             params=lambda c: _cables_in_site(c, termination_type="dcim.interface"), parallel=True),
        Kind("namespaces", "ipam/namespaces/", key=lambda o, c: o["name"], fields=lambda o, c: {},
             want=lambda c: {d_site(c): {}},
             body=lambda k, f, c: {"name": k, "description": "addresses of the pod, from the superpod plan"},
             prunable=False, m2m=False),
        Kind("prefixes", "ipam/prefixes/", key=lambda o, c: o["prefix"],
             fields=lambda o, c: {"type": _choice(o.get("type")), "description": o.get("description"),
                                  "status": c.name("statuses", o["status"]), "tags": _tags(o, c)},
             want=lambda c: {p.prefix: {"type": p.kind, "description": p.pool, "status": ACTIVE,
                                        "tags": frozenset({OWNER_TAG})} for p in c.desired.prefixes},
             body=lambda k, f, c: {"prefix": k, "namespace": c.id("namespaces", c.desired.site), "type": f["type"],
                                   "description": f["description"], "status": c.id("statuses", f["status"]),
                                   "tags": c.tag_ids(f["tags"])},
             params=lambda c: {"namespace": c.id("namespaces", c.desired.site)} if c.id(
                 "namespaces", c.desired.site) else None),
        Kind("ip_addresses", "ipam/ip-addresses/", key=lambda o, c: o["address"],
             fields=lambda o, c: {"type": _choice(o.get("type")), "description": o.get("description"),
                                  "status": c.name("statuses", o["status"]), "tags": _tags(o, c)},
             want=lambda c: {a.address: {"type": "host", "description": a.pool, "status": ACTIVE,
                                         "tags": frozenset({OWNER_TAG})} for a in c.desired.addresses},
             body=lambda k, f, c: {"address": k, "namespace": c.id("namespaces", c.desired.site), "type": f["type"],
                                   "description": f["description"], "status": c.id("statuses", f["status"]),
                                   "tags": c.tag_ids(f["tags"])},
             params=lambda c: {"namespace": c.id("namespaces", c.desired.site)} if c.id(
                 "namespaces", c.desired.site) else None, parallel=True),
        Kind("ip_assignments", "ipam/ip-address-to-interface/", key=_assignment_key, fields=lambda o, c: {},
             want=lambda c: {(a.address, dev, ifname): {} for a in c.desired.addresses for dev, ifname in a.interfaces},
             body=lambda k, f, c: {"ip_address": c.id("ip_addresses", k[0]), "interface": c.id("interfaces", k[1:])},
             label=lambda k: f"{k[0]} on {k[1]}:{k[2]}", parallel=True, m2m=False),
    ]


def _model_of(c: Ctx) -> dict[str, str]:
    return {d.name: d.device_type for d in c.desired.devices}


def _draws(o) -> dict:
    return {"maximum_draw": o.get("maximum_draw"), "allocated_draw": o.get("allocated_draw")}


def power_template_kinds() -> list[Kind]:
    """PSUs and PDU inputs/outlets on the device types: Nautobot instantiates them on each new device."""
    ports = lambda c: c.desired.power.templates(_model_of(c))[0]  # noqa: E731
    outlets = lambda c: c.desired.power.templates(_model_of(c))[1]  # noqa: E731
    return [
        Kind("power_port_templates", "dcim/power-port-templates/",
             key=lambda o, c: (c.name("device_types", o["device_type"]), o["name"]), fields=lambda o, c: _draws(o),
             want=lambda c: {k: {"maximum_draw": p.maximum_draw_w, "allocated_draw": p.allocated_draw_w}
                             for k, p in ports(c).items()},
             body=lambda k, f, c: {"device_type": c.id("device_types", k[0]), "name": k[1], **f},
             prunable=False, label=lambda k: f"{k[0]}:{k[1]}", m2m=False),
        Kind("power_outlet_templates", "dcim/power-outlet-templates/",
             key=lambda o, c: (c.name("device_types", o["device_type"]), o["name"]),
             fields=lambda o, c: {"power_port_template": c.name("power_port_templates", o.get("power_port_template"))},
             want=lambda c: {k: {"power_port_template": (k[0], o.power_port)} for k, o in outlets(c).items()},
             body=lambda k, f, c: {"device_type": c.id("device_types", k[0]), "name": k[1],
                                   "power_port_template": c.id("power_port_templates", f["power_port_template"])},
             prunable=False, label=lambda k: f"{k[0]}:{k[1]}", m2m=False),
    ]


def _on_device(o, c):
    return (c.name("devices", o["device"]), o["name"]) if c.name("devices", o["device"]) else None


def power_kinds() -> list[Kind]:
    """Panels per row and side, a feed per PDU, the PDU's input cabled to its feed; ports and
    outlets are checked on each device (templates made them; a device older than its templates
    gets them here). Components go with their device, so they are never pruned on their own."""
    site = lambda c: c.desired.site  # noqa: E731
    return [
        Kind("power_panels", "dcim/power-panels/", key=lambda o, c: (c.name("locations", o["location"]), o["name"]),
             fields=lambda o, c: {"rack_group": c.name("rack_groups", o.get("rack_group")), "tags": _tags(o, c)},
             want=lambda c: {(site(c), p.name): {"rack_group": (site(c), p.row), "tags": frozenset({OWNER_TAG})}
                             for p in c.desired.power.panels},
             body=lambda k, f, c: {"name": k[1], "location": c.id("locations", k[0]),
                                   "rack_group": c.id("rack_groups", f["rack_group"]), "tags": c.tag_ids(f["tags"])},
             params=lambda c: _in_site(c), label=lambda k: k[1]),
        Kind("power_feeds", "dcim/power-feeds/", key=lambda o, c: (c.name("power_panels", o["power_panel"]), o["name"])
             if c.name("power_panels", o["power_panel"]) else None, fields=_feed_fields, want=_want_feeds,
             body=_feed_body, params=lambda c: _in_site(c), label=lambda k: k[1]),
        Kind("power_ports", "dcim/power-ports/", key=_on_device, fields=lambda o, c: _draws(o),
             want=lambda c: {(p.device, p.name): {"maximum_draw": p.maximum_draw_w,
                                                  "allocated_draw": p.allocated_draw_w} for p in c.desired.power.ports},
             body=lambda k, f, c: {"device": c.id("devices", k[0]), "name": k[1], **f},
             params=lambda c: _in_site(c), prunable=False, parallel=True, label=lambda k: f"{k[0]}:{k[1]}",
             m2m=False),
        Kind("power_outlets", "dcim/power-outlets/", key=_on_device,
             fields=lambda o, c: {"power_port": c.name("power_ports", o.get("power_port"))},
             want=lambda c: {(o.device, o.name): {"power_port": (o.device, o.power_port)}
                             for o in c.desired.power.outlets},
             body=lambda k, f, c: {"device": c.id("devices", k[0]), "name": k[1],
                                   "power_port": c.id("power_ports", f["power_port"])},
             params=lambda c: _in_site(c), prunable=False, parallel=True, label=lambda k: f"{k[0]}:{k[1]}",
             m2m=False, counted=True),
        Kind("power_cables", "dcim/cables/", key=_power_cable_key, fields=_power_cable_fields,
             want=lambda c: {x.label: {"ends": ((x.device, x.port), (site(c), x.feed)), "status": PLANNED,
                                       "tags": frozenset({OWNER_TAG})} for x in c.desired.power.cables},
             body=_power_cable_body, params=lambda c: _cables_in_site(c, termination_type="dcim.powerfeed")),
    ]


def _feed_panel(c: Ctx, feed) -> tuple:
    return (c.desired.site, feed.panel)


def _feed_fields(o, c) -> dict:
    return {"rack": (c.name("racks", o.get("rack")) or (None, None))[1], "status": c.name("statuses", o["status"]),
            "type": _choice(o.get("type")), "power_path": _choice(o.get("power_path")) or None,
            "supply": _choice(o.get("supply")), "phase": _choice(o.get("phase")), "voltage": o.get("voltage"),
            "amperage": o.get("amperage"), "max_utilization": o.get("max_utilization"), "tags": _tags(o, c)}


def _want_feeds(c: Ctx) -> dict:
    return {
        (_feed_panel(c, f), f.name): {
            "rack": f.rack, "status": PLANNED, "type": "primary" if f.side == "a" else "redundant",
            "power_path": f.side, "supply": "ac", "phase": f.phase, "voltage": f.voltage, "amperage": f.amperage,
            "max_utilization": f.max_utilization, "tags": frozenset({OWNER_TAG})}
        for f in c.desired.power.feeds
    }


def _feed_body(k, f, c) -> dict:
    return {"name": k[1], "power_panel": c.id("power_panels", k[0]), "rack": c.id("racks", (k[0][0], f["rack"])),
            "status": c.id("statuses", f["status"]), "tags": c.tag_ids(f["tags"]),
            **{n: f[n] for n in ("type", "power_path", "supply", "phase", "voltage", "amperage", "max_utilization")}}


def _power_ends(o, c) -> tuple | None:
    if (o.get("termination_a_type"), o.get("termination_b_type")) != ("dcim.powerport", "dcim.powerfeed"):
        return None
    feed = c.keys.get("power_feeds", {}).get(o["termination_b_id"])
    return (c.keys.get("power_ports", {}).get(o["termination_a_id"]), feed and (feed[0][0], feed[1]))


def _power_cable_key(o, c):
    ends = _power_ends(o, c)
    if ends is None or all(e is None for e in ends):
        return None
    return o.get("label") or ("ends", ends)


def _power_cable_fields(o, c) -> dict:
    return {"ends": _power_ends(o, c), "status": c.name("statuses", o["status"]), "tags": _tags(o, c)}


def _power_cable_body(k, f, c) -> dict:
    (port, (site, feed)) = f["ends"]
    return {"termination_a_type": "dcim.powerport", "termination_a_id": c.id("power_ports", port),
            "termination_b_type": "dcim.powerfeed", "termination_b_id": c.id("power_feeds", ((site, _panel_of(c, feed)),
                                                                                              feed)),
            "label": k, "status": c.id("statuses", f["status"]), "tags": c.tag_ids(f["tags"])}


def _panel_of(c: Ctx, feed: str) -> str:
    return next(f.panel for f in c.desired.power.feeds if f.name == feed)


def _cables_in_site(c: Ctx, **more) -> dict | None:
    """Cables with an end on a device of this pod: CableFilterSet's `location` takes a name, `location_id` an id."""
    site = c.id("locations", c.desired.site)
    return {"location_id": site, **more} if site else None


def _in_site(c: Ctx) -> dict | None:
    """This pod's location as a list filter (device names are unique per location, not globally)."""
    site = c.id("locations", c.desired.site)
    return {"location": site} if site else None


def _device_fields(o, c) -> dict:
    return {"device_type": c.name("device_types", o["device_type"]), "role": c.name("roles", o["role"]),
            "location": c.name("locations", o["location"]), "rack": (c.name("racks", o["rack"]) or (None, None))[1],
            "position": o.get("position"), "face": _choice(o.get("face")) or None,
            "status": c.name("statuses", o["status"]), "tags": _tags(o, c),
            "custom_fields": {ASN_FIELD: (o.get("custom_fields") or {}).get(ASN_FIELD)}}


def _want_devices(c: Ctx) -> dict:
    return {
        d.name: {"device_type": d.device_type, "role": d.role, "location": c.desired.site, "rack": d.rack,
                 "position": d.position, "face": "front" if d.position else None, "status": PLANNED,
                 "tags": frozenset(d.tags), "custom_fields": {ASN_FIELD: d.asn}}
        for d in c.desired.devices
    }


def _device_body(k, f, c) -> dict:
    body = {"name": k, "device_type": c.id("device_types", f["device_type"]), "role": c.id("roles", f["role"]),
            "location": c.id("locations", f["location"]), "rack": c.id("racks", (f["location"], f["rack"])),
            "position": f["position"], "face": f["face"] or "", "status": c.id("statuses", f["status"]),
            "tags": c.tag_ids(f["tags"]), "custom_fields": f["custom_fields"]}
    return body


def cable_ends(o, c) -> tuple | None:
    ends = []
    for side in ("a", "b"):
        if o.get(f"termination_{side}_type") != "dcim.interface":
            return None
        ends.append(c.keys.get("interfaces", {}).get(o[f"termination_{side}_id"]))
    return tuple(sorted(ends, key=str))


def _cable_key(o, c):
    """Our cables by their label (a re-cabled one keeps it, so diff names it); others by their ends."""
    labels = c.ids.setdefault("_cable_labels", {lb: True for lb in (x.label for x in c.desired.cables)})
    if o.get("label") in labels:
        return o["label"]
    ends = cable_ends(o, c)
    if ends is None or all(e is None for e in ends):
        return None  # between devices of no concern to this pod
    return ("ends", ends)


def _cable_fields(o, c) -> dict:
    return {"ends": cable_ends(o, c), "type": _choice(o.get("type")) or None, "length": o.get("length"),
            "status": c.name("statuses", o["status"]), "tags": _tags(o, c)}


def _want_cables(c: Ctx) -> dict:
    return {
        x.label: {"ends": tuple(sorted([(x.a_device, x.a_interface), (x.b_device, x.b_interface)], key=str)),
                  "type": x.type, "length": round(x.length_m * 100), "status": PLANNED, "tags": frozenset(x.tags)}
        for x in c.desired.cables
    }


def _cable_body(k, f, c) -> dict:
    (a, b) = f["ends"]
    return {"termination_a_type": "dcim.interface", "termination_a_id": c.id("interfaces", a),
            "termination_b_type": "dcim.interface", "termination_b_id": c.id("interfaces", b),
            "type": f["type"], "length": f["length"], "length_unit": "cm", "label": k,  # lengths are integers
            "status": c.id("statuses", f["status"]), "tags": c.tag_ids(f["tags"])}


def _assignment_key(o, c):
    ip = c.keys.get("ip_addresses", {}).get(ref_id(o.get("ip_address")))
    iface = c.keys.get("interfaces", {}).get(ref_id(o.get("interface")))
    return None if ip is None or iface is None else (ip, *iface)

