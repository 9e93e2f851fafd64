"""Cancellation-safe asyncio helpers.

``asyncio.wait_for`` on Python 3.10/3.11 runs the awaitable in a second task and can
swallow a cancel that arrives just as that task finishes (it returns the result instead;
fixed by 3.12's rewrite on top of ``asyncio.timeout``).  A polling loop that loses its
cancel polls on forever and ``Agent.stop()`` hangs, so the agent never uses wait_for:
``deadline`` runs the awaitable in the caller's own task."""

from __future__ import annotations

import asyncio
import sys

if sys.version_info >= (3, 11):
    from asyncio import timeout as deadline
else:  # pragma: no cover - 3.10: aiohttp's own dependency, same semantics
    from async_timeout import timeout as deadline

__all__ = ["deadline", "cancel_and_wait"]


async def cancel_and_wait(tasks: list[asyncio.Task], grace_s: float, recancel_s: float = 0.05) -> list[asyncio.Task]:
    """Cancel ``tasks`` and wait at most ``grace_s`` for them to end, cancelling again every
    ``recancel_s`` (a cancel some library swallowed is simply repeated).  Returns the tasks
    still running at the deadline; the caller reports and abandons them."""
    loop = asyncio.get_running_loop()
    end = loop.time() + grace_s
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        left = end - loop.time()
        if left <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=min(recancel_s, left))
    return sorted(pending, key=lambda t: t.get_name())
