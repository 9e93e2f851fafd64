"""superpod fabric telemetry: mlx5 RoCE counters per rail NIC for Prometheus."""

__version__ = "0.1.0"
