"""Command line: ``superpod-cooling-agent [run|check-config|poll-once|rules] --config FILE``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from importlib import resources
from pathlib import Path

from prometheus_client import generate_latest
from pydantic import ValidationError

from .agent import Agent
from .config import ConfigError, load_config
from .credentials import CredentialsError, CredentialStore, field_errors
from .exposition import MetricsServer
from .metrics import make_registry

log = logging.getLogger("cooling_agent")


def rules_text() -> str:
    return (resources.files("cooling_agent") / "rules" / "cooling.yml").read_text()


async def _run(config_path: str) -> int:
    cfg = load_config(config_path)
    agent = Agent(cfg)
    auth = agent.credentials.get(cfg.listen.basic_auth_ref) if cfg.listen.basic_auth_ref else None
    server = await MetricsServer(make_registry(agent.store, cfg), cfg.listen, auth).start()
    log.info("serving metrics on %s:%d (%s%s), %d PDUs, %d CDUs, interval %gs", cfg.listen.address, server.port,
             "https" if cfg.listen.tls_cert_file else "http", ", basic auth" if auth else "",
             len(cfg.pdus), len(cfg.cdus), cfg.interval_s)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await agent.start()
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        t0 = loop.time()
        await server.stop()
        await agent.stop()
        log.info("stopped in %.2fs", loop.time() - t0)
    return 0


async def _poll_once(config_path: str) -> int:
    cfg = load_config(config_path)
    agent = Agent(cfg)
    try:
        oks = await agent.poll_once()
    finally:
        await agent.stop()
    sys.stdout.write(generate_latest(make_registry(agent.store, cfg)).decode())
    return 0 if all(oks.values()) else 1


def run_loop(coro) -> int:
    """``asyncio.run`` without its unbounded last wait: asyncio.run cancels and then waits
    for every task left on the loop, so one task that ignores its cancel (the ones
    Agent.stop() reported and abandoned) would keep the process alive after SIGTERM."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in leftovers:
            task.cancel()
        if leftovers:
            loop.run_until_complete(asyncio.wait(leftovers, timeout=0.2))
        loop.close()


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except CredentialsError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except ConfigError as exc:
        print(f"error: config: {exc}", file=sys.stderr)
    except ValidationError as exc:  # agent.yml (holds no secrets, but errors read the same)
        print(f"error: config: {field_errors(exc)}", file=sys.stderr)
    return 2


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(prog="superpod-cooling-agent", description=__doc__)
    ap.add_argument("command", nargs="?", default="run", choices=["run", "check-config", "poll-once", "rules"])
    ap.add_argument("-c", "--config", default="/etc/superpod-cooling/agent.yml")
    ap.add_argument("-o", "--out", help="rules: write the alert rules file here instead of stdout")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "rules":
        if args.out:
            Path(args.out).write_text(rules_text())
        else:
            sys.stdout.write(rules_text())
        return 0
    if args.command == "check-config":
        cfg = load_config(args.config)
        CredentialStore.load(cfg.credentials_file)  # what `run` reads first: a FIFO, a missing file
        from .modbus import load_register_map
        from .profiles import load_profile
        for p in cfg.pdus:
            if p.protocol == "snmp":
                load_profile(p.profile)
        for c in cfg.cdus:
            if c.protocol == "modbus":
                load_register_map(c.modbus_map)
        print(f"ok: {len(cfg.racks)} racks, {len(cfg.pdus)} PDUs, {len(cfg.cdus)} CDUs")
        return 0
    if args.command == "poll-once":
        return run_loop(_poll_once(args.config))
    rc = run_loop(_run(args.config))
    # Everything is closed and stopped; tearing down the interpreter (thousands of module
    # objects) would only add 0.1-0.7 s of CPU before the exit a service manager waits for.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    sys.exit(main())
