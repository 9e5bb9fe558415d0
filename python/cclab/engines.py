"""The two engines a scenario runs on, by name: `sim`, the deterministic discrete-event
simulator, and `emu`, the real-time emulator (Linux namespaces and TUN devices; needs root).
Both take the same arguments and return the same result dict from `cclab._core`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from cclab import _core

ENGINES = ("sim", "emu")


def engine_runner(engine: str) -> Callable[..., dict[str, Any]]:
    """`cclab._core.run` or `cclab._core.run_emu`; a clear ValueError for anything else."""
    if engine == "sim":
        return _core.run
    if engine == "emu":
        return _core.run_emu
    raise ValueError(f"unknown engine {engine!r}; the engines are {', '.join(ENGINES)}")


def engine_validator(engine: str) -> Callable[..., str]:
    """`cclab._core.validate` or `cclab._core.validate_emu` (which also accepts the
    emulator-only schemes `kernel:<name>` and `wrapper:<file>`)."""
    engine_runner(engine)  # the same check and message for an unknown name
    return _core.validate_emu if engine == "emu" else _core.validate


def add_engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="sim",
        help="sim: the deterministic simulator (default); emu: the real-time emulator with real "
        "Linux TCP and programs (needs root)",
    )
