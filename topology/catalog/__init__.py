"""Hardware catalog: node, switch, appliance, PDU and CDU models, loaded from data."""

from __future__ import annotations

import difflib
from functools import cache, cached_property
from math import sqrt
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Gpu(_Entry):
    architecture: str
    memory_gb: int
    memory_type: str
    compute_capability: str
    fp16_tflops: float
    nvlink: bool


class ComputeNic(_Entry):
    gpu: int
    hca: str
    pci_bus: int
    numa: int

    def netdev(self, fabric_kind: str) -> str:
        # Predictable names from the PCI bus, as udev names them on DGX OS / Ubuntu.
        return f"ibp{self.pci_bus}s0" if fabric_kind == "infiniband" else f"enp{self.pci_bus}s0np0"


class HostNic(_Entry):
    """One port of a dual-port storage/in-band card; its name depends on the link mode."""

    adapter: str  # the card: ConnectX-7, or BlueField-3 (DGX B200) run as a NIC
    hca: str
    pci_bus: int
    function: int
    numa: int

    def netdev(self, fabric_kind: str) -> str:
        if fabric_kind == "infiniband":
            return f"ibp{self.pci_bus}s0f{self.function}"
        return f"enp{self.pci_bus}s0f{self.function}np{self.function}"


class NodeHost(_Entry):
    """CPUs, memory and the GPU<->NUMA map of a node model (Slurm's node lines and gres.conf)."""

    cpu: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_gb: int
    gpu_numa: tuple[int, ...]  # NUMA node of GPU i (one NUMA node per socket)
    source: str

    def numa_cores(self, numa: int) -> str:
        """Slurm's core ids (socket-major, 0-based, threads not counted) of one NUMA node."""
        first = numa * self.cores_per_socket
        return f"{first}-{first + self.cores_per_socket - 1}"


class NodeModel(_Entry):
    description: str
    gpu: str
    gpu_count: int
    nvswitch: bool
    numa_nodes: int
    compute_nic_speed_gbps: int
    compute_nics: tuple[ComputeNic, ...]
    storage_nic_speed_gbps: int
    storage_nics: tuple[HostNic, ...]
    inband_nic_speed_gbps: int
    inband_nics: tuple[HostNic, ...]
    host: NodeHost
    nic_source: str  # where the NIC map (cards, PCI buses, HCA names) comes from, or what is assumed
    bmc_port: str
    power_kw: float
    rack_units: int
    cooling: Literal["air", "liquid"]
    liquid_capture: float  # share of the heat cold plates take (0 for air-cooled models)
    compute_nic_form: str = "OSFP"  # the rail NICs' cages (ConnectX-7 OSFP)
    compute_nics_per_cage: Literal[1, 2] = 1  # 2: twin-port cages, one module for two NICs (DGX)
    psus: int  # split evenly over the rack's A and B feeds
    psus_required: int  # PSUs needed at full load
    psu_kw: float

    def kw_on_one_feed(self) -> float:
        """What the node draws from the surviving feed when the other fails: its PSUs on that
        feed cap it when fewer remain than it needs."""
        left = self.psus // 2
        return self.power_kw if left >= self.psus_required else min(self.power_kw, left * self.psu_kw)

    @property
    def rails(self) -> int:
        return len(self.compute_nics)

    @model_validator(mode="after")
    def _one_numa_node_per_gpu(self) -> NodeModel:
        if len(self.host.gpu_numa) != self.gpu_count:
            raise ValueError(f"host.gpu_numa: {len(self.host.gpu_numa)} entries for gpu_count {self.gpu_count}")
        if any(not 0 <= n < self.host.sockets for n in self.host.gpu_numa):
            raise ValueError(f"host.gpu_numa: NUMA nodes must be below sockets ({self.host.sockets})")
        return self


class SwitchModel(_Entry):
    description: str
    kind: str  # ethernet | infiniband
    cages: int
    cage_speed_gbps: int
    lanes: dict[int, int]  # port speed -> ports per cage
    port_name: str
    breakout_name: str | None = None  # a cage split into sub-ports (swp1s0..)
    ports_per_cage: int = 1  # physical ports a cage carries unsplit (Quantum-2 twin-port OSFP: 2)
    split_name: str | None = None  # a twin-port cage's ports split again (1/<cage>/<port>/<split>)
    max_ports: int | None = None  # the switch's own limit on logical ports, whatever the lanes allow
    sub_base: int = 0
    uplink_cages: int = 0
    uplink_speed_gbps: int = 0
    mgmt_port: str
    power_kw: float
    rack_units: int
    source: str  # where these facts come from
    form: str  # cage form factor: OSFP, QSFP112, QSFP28, RJ45
    lane_gbps: int  # electrical lane rate of its cages (what a cable's ends must share)
    uplink_form: str | None = None
    uplink_lane_gbps: int | None = None
    optical_lane_gbps: int | None = None  # its optics' lane rate where a gearbox changes it (SN5400: 100)
    sonic_platform: str | None = None  # SONiC's platform name (its platform.json: testdata/sonic-platforms/)

    @property
    def native_gbps(self) -> int:
        """A port's speed with its cage unsplit (a twin-port OSFP carries two ports)."""
        return self.cage_speed_gbps // self.ports_per_cage

    def radix(self, speed_gbps: int) -> int:
        """Ports at `speed_gbps` (breakout included); 0 when the speed is not supported."""
        ports = self.cages * self.lanes.get(speed_gbps, 0)
        return min(ports, self.max_ports) if self.max_ports else ports

    @cached_property
    def port_names(self) -> dict[tuple[int, int], str]:
        """port()'s answers so far: the layout names each port of a model again on every switch
        of it (53k names at 8k GPUs, a str.format each). A copy starts without them (a copy may
        change the fields the names come from: model_copy(update=...))."""
        return {}

    def __copy__(self) -> SwitchModel:
        copied = super().__copy__()
        copied.__dict__.pop("port_names", None)
        return copied

    def __deepcopy__(self, memo: dict | None = None) -> SwitchModel:
        copied = super().__deepcopy__(memo)
        copied.__dict__.pop("port_names", None)
        return copied

    def port(self, index: int, speed_gbps: int) -> str:
        """Name of logical port `index` (0-based) at `speed_gbps`."""
        name = self.port_names.get((index, speed_gbps))
        if name is None:
            name = self.port_names[(index, speed_gbps)] = self._port(index, speed_gbps)
        return name

    def _port(self, index: int, speed_gbps: int) -> str:
        per_cage = self.lanes[speed_gbps]
        cage, sub = divmod(index, per_cage)
        if per_cage <= self.ports_per_cage or (self.breakout_name is None and self.split_name is None):
            return self.port_name.format(cage=cage + 1, sub=sub + self.sub_base)
        if self.split_name:
            port, split = divmod(sub, per_cage // self.ports_per_cage)
            return self.split_name.format(cage=cage + 1, port=port + self.sub_base, split=split + 1)
        return self.breakout_name.format(cage=cage + 1, sub=sub + self.sub_base)

    def uplink_port(self, index: int) -> str:
        """Dedicated uplink cages that follow the access ports (e.g. SN2201 swp49-52)."""
        return self.port_name.format(cage=self.cages + index + 1, sub=self.sub_base)


class Appliance(_Entry):
    description: str
    port_name: str
    bmc_port: str
    power_kw: float
    rack_units: int
    fabric_links: int = 0
    storage_ports: int = 0
    storage_speed_gbps: int = 0
    inband_ports: int = 0
    inband_speed_gbps: int = 0
    ib_port_name: str | None = None  # its data ports' names when cabled to InfiniBand (IPoIB)
    inband_port_name: str | None = None  # its in-band Ethernet ports' names (default: port_name)

    def inband_port(self, index: int) -> str:
        return (self.inband_port_name or self.port_name).format(index=index)

    def port(self, index: int, fabric_kind: str = "ethernet") -> str:
        name = self.ib_port_name if fabric_kind == "infiniband" and self.ib_port_name else self.port_name
        return name.format(index=index)


class PduModel(_Entry):
    vendor: str
    protocol: str
    volts: int  # line-to-line for three-phase
    amps: int  # the circuit breaker's rating
    phases: Literal[1, 3]
    outlets: int
    mgmt_port: str

    @property
    def nameplate_kw(self) -> float:
        return self.volts * self.amps * (sqrt(3) if self.phases == 3 else 1) / 1000

    @property
    def continuous_kw(self) -> float:
        """What it may carry continuously: 80% of the circuit (NEC 210.19/210.20)."""
        return round(0.8 * self.nameplate_kw, 1)



class CduModel(_Entry):
    vendor: str
    protocol: str
    capacity_kw: float
    mgmt_port: str
    rack_units: int


class MediaOption(_Entry):
    media: str
    lane_gbps: int
    reach_m: float
    switches_only: bool = False  # this reach only between two switch cages (FR4: no adapter part)


class Optic(_Entry):
    form: str  # the cage it plugs into
    speed_gbps: int  # the module's speed (a switch's: the whole cage)
    media: str
    use: Literal["switch", "host", "any"]  # NVIDIA's adapter optics are not for switch cages
    connector: str  # its optical connector (MPO-12/APC, MPO-12, LC-duplex)
    connectors: int = 1  # a twin-port module has two, one per port
    connector_gbps: int  # what one connector carries; a slower link rides a splitter fibre
    also_gbps: tuple[int, ...] = ()  # slower speeds it runs on a splitter leg
    splitter: bool = True  # a slower link may ride a splitter fibre (not CWDM4: one fibre carries all lanes)
    reach_m: float | None = None  # its own reach where shorter than its media's
    part: str
    description: str


def length_code(length_m: float) -> str:
    """NVIDIA's length code in a cable part number: 003 = 3 m, 01A = 1.5 m."""
    whole = int(length_m)
    return f"{whole:03d}" if length_m == whole else f"{whole:02d}A"


class Fibre(_Entry):
    media: str
    connector: str
    split: int  # 1: straight; n: a 1:n splitter serving n links
    part: str  # with {len}: the vendor's length code
    description: str

    def part_for(self, length_m: float) -> str:
        return self.part.format(len=length_code(length_m))


class Assembly(_Entry):
    """A splitter cable from a switch cage to adapter ports (DAC/ACC), one part filling the cage."""

    media: str
    form: str  # the switch cage's plug
    legs: int
    leg_gbps: int
    leg_form: str
    part: str  # with {len}: the vendor's length code
    description: str

    def part_for(self, length_m: float) -> str:
        return self.part.format(len=length_code(length_m))


class Figure(_Entry):
    """A number and where it comes from (a datasheet, a standard, or a stated assumption)."""

    value: float
    source: str


class GpuFigures(_Entry):
    hbm_gbs: Figure  # memory bandwidth
    nvlink_gbs: Figure | None = None  # NVLink per GPU, each direction
    pcie_gbs: Figure  # host link, each direction


class Acceptance(_Entry):
    """Peaks and pass efficiencies `superpod accept` checks against (topology/operate/accept)."""

    gpus: dict[str, GpuFigures]
    efficiency: dict[Literal["hbm_copy", "pcie_copy", "nvlink_all_reduce", "rail_write_bw",
                             "network_all_reduce"], Figure]


class Catalog(_Entry):
    gpus: dict[str, Gpu]
    nodes: dict[str, NodeModel]
    switches: dict[str, SwitchModel]
    appliances: dict[str, Appliance]
    pdus: dict[str, PduModel]
    cdus: dict[str, CduModel]
    media: tuple[MediaOption, ...]
    optics: tuple[Optic, ...]
    fibres: tuple[Fibre, ...] = ()
    assemblies: tuple[Assembly, ...] = ()
    acceptance: Acceptance


# Catalog files layered over the packaged one (`--catalog FILE`, a stack's `superpod:catalog`):
# a site adds or overrides node and switch models without editing the installed package.
_overlays: tuple[str, ...] = ()
TABLES = ("gpus", "nodes", "switches", "appliances", "pdus", "cdus")  # by model key: an overlay entry replaces
LISTS = ("media", "optics", "fibres", "assemblies")  # rows: an overlay's rows are added


def use_overlays(paths) -> None:
    """Every catalog load after this (the spec's checks, builders, renderers) sees the packaged
    catalog with these files layered over it, in order; an empty list restores the packaged one."""
    global _overlays
    _overlays = tuple(str(p) for p in paths)
    load.cache_clear()


def overlays() -> tuple[str, ...]:
    return _overlays


def layer(data: dict, overlay: object, source: str) -> dict:
    """`data` with one overlay file's tables layered on: a model key replaces the packaged entry
    whole (every fact and its source given again), list rows are added."""
    from topology.errors import SpecError

    if not isinstance(overlay, dict):
        raise SpecError(source, f"a catalog overlay is a mapping of tables ({', '.join(TABLES + LISTS)})")
    out = dict(data)
    for key, value in overlay.items():
        if key.startswith("_"):  # YAML anchors' holders, as in the packaged catalog
            continue
        if key in TABLES:
            if not isinstance(value, dict):
                raise SpecError(f"{source}: {key}", "must be a mapping of model name to its facts")
            out[key] = {**out.get(key, {}), **value}
        elif key in LISTS:
            if not isinstance(value, list):
                raise SpecError(f"{source}: {key}", "must be a list of rows")
            out[key] = [*out.get(key, []), *value]
        else:
            close = difflib.get_close_matches(str(key), TABLES + LISTS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(TABLES + LISTS)})"
            raise SpecError(f"{source}: {key}", "unknown catalog table" + hint)
    return out


@cache
def load() -> Catalog:
    text = (Path(__file__).parents[1] / "data" / "catalog.yaml").read_text(encoding="utf-8")
    data = {k: v for k, v in yaml.safe_load(text).items() if not k.startswith("_")}
    if not _overlays:
        return Catalog.model_validate(data)
    from topology.errors import SpecError, SpecErrors
    from topology.spec import strict_yaml

    for path in _overlays:
        data = layer(data, strict_yaml.load_file(path, "--catalog"), path)
    try:  # the same models, so an overlay entry is held to every rule a packaged one is
        return Catalog.model_validate(data)
    except ValidationError as e:
        where = ", ".join(_overlays)
        raise SpecErrors([SpecError(f"{where}: " + ".".join(str(p) for p in err["loc"]),
                                    err["msg"].removeprefix("Value error, ")) for err in e.errors()]) from None
