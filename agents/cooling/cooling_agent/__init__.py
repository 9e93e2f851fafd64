"""superpod cooling agent: rack PDU and CDU telemetry for Prometheus."""

__version__ = "0.1.0"
