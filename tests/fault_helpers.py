"""Execute functions for the fault-injection tests: pool workers import them by module name
(a spawned worker re-imports what it runs), so they live in a module of their own."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from cclab.batch import RunOutcome, Task, execute_task

#: The run names that misbehave, and how.
CRASH = "crash"
ABORT = "abort"
SLOW = "slow"


def crash_one(task: Task, events: Any) -> RunOutcome:
    """`crash` dies of SIGSEGV, `abort` writes a line and aborts (as Rust's OOM handler does);
    every other run is an ordinary run."""
    name = task.planned.spec.name
    if name == CRASH:
        os.kill(os.getpid(), signal.SIGSEGV)
    if name == ABORT:
        os.write(2, b"memory allocation of 9663676416 bytes failed\n")
        os.abort()
    return execute_task(task, events)


def sleep_long(task: Task, events: Any) -> RunOutcome:
    """Starts, then sleeps far longer than any test waits (for kills mid-run)."""
    events.put(("started", task.planned.order, 0, 0))
    time.sleep(600)
    return execute_task(task, events)
