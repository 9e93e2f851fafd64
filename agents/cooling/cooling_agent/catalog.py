"""The metric catalogue: every reading the agent exports, its unit and its labels.

Pollers (SNMP profiles, Redfish, Modbus maps) may only emit metrics named here; the
catalogue fixes each family's label set so samples from different vendors and
protocols land in one consistent family.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "superpod_"

PDU_LABELS = ("pdu", "rack", "row", "su", "feed")
CDU_LABELS = ("cdu", "rack", "row", "su")


@dataclass(frozen=True)
class MetricDef:
    name: str
    help: str
    kind: str  # "pdu" | "cdu"
    extra: tuple[str, ...] = ()
    agg: str = "sum"  # how samples with identical labels combine: sum | first

    @property
    def labels(self) -> tuple[str, ...]:
        return (PDU_LABELS if self.kind == "pdu" else CDU_LABELS) + self.extra


_DEFS = [
    # rack PDUs
    MetricDef("pdu_power_watts", "PDU total active input power (W)", "pdu"),
    MetricDef("pdu_apparent_power_va", "PDU total apparent input power (VA)", "pdu"),
    MetricDef("pdu_energy_kwh", "PDU cumulative active energy (kWh)", "pdu"),
    MetricDef("pdu_current_amps", "PDU total input current (A)", "pdu"),
    MetricDef("pdu_voltage_volts", "PDU input voltage (V)", "pdu", agg="first"),
    MetricDef("pdu_frequency_hz", "PDU input frequency (Hz)", "pdu", agg="first"),
    MetricDef("pdu_phase_current_amps", "Per-phase (line) input current (A)", "pdu", ("phase",)),
    MetricDef("pdu_phase_voltage_volts", "Per-phase input voltage (V)", "pdu", ("phase",), agg="first"),
    MetricDef("pdu_phase_power_watts", "Per-phase active power (W)", "pdu", ("phase",)),
    MetricDef("pdu_branch_current_amps", "Branch circuit (breaker/bank) current (A)", "pdu", ("branch",)),
    MetricDef("pdu_branch_power_watts", "Branch circuit active power (W)", "pdu", ("branch",)),
    MetricDef("pdu_outlet_current_amps", "Outlet current (A)", "pdu", ("outlet",)),
    MetricDef("pdu_outlet_power_watts", "Outlet active power (W)", "pdu", ("outlet",)),
    MetricDef("pdu_outlet_energy_kwh", "Outlet cumulative active energy (kWh)", "pdu", ("outlet",)),
    MetricDef("pdu_inlet_temperature_celsius", "Rack inlet temperature probe on the PDU (degC)", "pdu",
              ("sensor",), agg="first"),
    MetricDef("pdu_inlet_humidity_percent", "Rack inlet relative humidity probe on the PDU (%RH)", "pdu",
              ("sensor",), agg="first"),
    # CDUs / liquid cooling
    MetricDef("cdu_supply_temperature_celsius", "Coolant supply temperature (degC)", "cdu",
              ("loop", "connector"), agg="first"),
    MetricDef("cdu_return_temperature_celsius", "Coolant return temperature (degC)", "cdu",
              ("loop", "connector"), agg="first"),
    MetricDef("cdu_flow_liters_per_minute", "Coolant flow (l/min)", "cdu", ("loop", "connector"), agg="first"),
    MetricDef("cdu_delta_pressure_kpa", "Coolant differential pressure, return minus supply (kPa)", "cdu",
              ("loop", "connector"), agg="first"),
    MetricDef("cdu_supply_pressure_kpa", "Coolant supply pressure (kPa)", "cdu", ("loop", "connector"),
              agg="first"),
    MetricDef("cdu_return_pressure_kpa", "Coolant return pressure (kPa)", "cdu", ("loop", "connector"),
              agg="first"),
    MetricDef("cdu_heat_removed_kw", "Heat removed by the loop (kW)", "cdu", ("loop", "connector"), agg="first"),
    MetricDef("cdu_pump_speed_percent", "Pump speed (% of maximum)", "cdu", ("pump",), agg="first"),
    MetricDef("cdu_pump_enabled", "1 when the pump reports State=Enabled", "cdu", ("pump",), agg="first"),
    MetricDef("cdu_pump_health", "Pump health: 0 OK, 1 Warning, 2 Critical", "cdu", ("pump",), agg="first"),
    MetricDef("cdu_leak_detector_state", "Leak detector state: 0 OK, 1 Warning, 2 Critical", "cdu",
              ("detector",), agg="first"),
    MetricDef("cdu_health", "CDU overall health: 0 OK, 1 Warning, 2 Critical", "cdu", agg="first"),
    MetricDef("cdu_ambient_temperature_celsius", "Air temperature at the CDU (degC)", "cdu", agg="first"),
    MetricDef("cdu_ambient_humidity_percent", "Relative humidity at the CDU (%RH)", "cdu", agg="first"),
    MetricDef("cdu_reservoir_level_ok", "1 when the reservoir fluid level reports OK", "cdu", ("reservoir",),
              agg="first"),
]

METRICS: dict[str, MetricDef] = {d.name: d for d in _DEFS}

HEALTH_STATES = {"OK": 0, "Warning": 1, "Critical": 2}


def health_value(state: str | None) -> float | None:
    """Redfish Health / DetectorState to 0/1/2; None when absent or unknown."""
    if not isinstance(state, str):  # absent, or a type no state has
        return None
    return float(HEALTH_STATES[state]) if state in HEALTH_STATES else None
