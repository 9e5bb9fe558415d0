"""The engines a scenario runs on, one descriptor each, in one registry (`ENGINES`): `sim`, the
deterministic discrete-event simulator, and `emu`, the real-time emulator (Linux namespaces and
TUN devices; needs root). Every engine takes the same arguments and returns the same result
dict from `cclab._core`.

Code that must treat engines differently reads a property of the descriptor (`serial`,
`real_time`, `needs_root`, ...) instead of comparing names. Adding an engine: one `Engine` in
`ENGINES` here, and its entry points in `cclab._core`.

Owns: the engine names and their properties. Must not import the runner, the CLI or the
archive (they import this)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cclab import _core
from cclab.errors import SimulationError

#: `_core.run`'s shape: (text, is_path, overrides JSON, log_packets, progress, trace_ns=) →
#: result dict.
CoreRun = Callable[..., dict[str, Any]]
#: `_core.validate`'s shape: (text, is_path, overrides JSON) → the filled scenario as TOML.
CoreValidate = Callable[..., str]


class UnknownEngineError(ValueError):
    """A name that is not in `ENGINES`."""


@dataclass(frozen=True)
class Engine:
    """One engine: what it is called, how it runs and validates a scenario, and the facts about
    it that the runner, the CLI and the summaries need."""

    name: str
    #: What it is, in a word ("simulator"), for messages such as "this build has no emulator".
    noun: str
    #: One line for `--engine` help.
    help: str
    #: How a finished run is described in a summary title ("simulated").
    verb: str
    #: The `_core` entry points, by name (a build may lack an engine; see `available`).
    core_run: str
    core_validate: str
    #: Runs must not overlap (a real-time engine shares the host's clock and network).
    serial: bool
    #: It paces packets in wall-clock time, so its summary reports its timing error, and its
    #: run function takes the error it may allow itself (`tolerance_us=`).
    real_time: bool
    #: It needs root (namespaces, TUN devices).
    needs_root: bool
    #: It captures the real packets itself while it runs (its run function takes `pcap=`);
    #: otherwise `--pcap` writes synthetic headers from the packet log afterwards.
    captures_packets: bool

    def available(self) -> bool:
        """Whether this build of `cclab._core` has the engine."""
        return hasattr(_core, self.core_run) and hasattr(_core, self.core_validate)

    def unavailable(self) -> str:
        """Why this build lacks the engine, as a sentence for error messages ("" if it has
        it). The core says why when it knows (`_core.UNAVAILABLE_ENGINES`: built without the
        Cargo feature, or for an operating system the engine does not support)."""
        if self.available():
            return ""
        why = getattr(_core, "UNAVAILABLE_ENGINES", {}).get(self.name)
        message = f"this cclab build has no {self.noun} engine ({self.name})"
        return f"{message}: {why}" if why else message

    @property
    def run(self) -> CoreRun:
        return self._entry(self.core_run)

    @property
    def validate(self) -> CoreValidate:
        return self._entry(self.core_validate)

    def _entry(self, attribute: str) -> Callable[..., Any]:
        entry = getattr(_core, attribute, None)
        if entry is None:
            raise SimulationError(self.unavailable())
        return entry


SIM = Engine(
    name="sim",
    noun="simulator",
    help="the deterministic simulator",
    verb="simulated",
    core_run="run",
    core_validate="validate",
    serial=False,
    real_time=False,
    needs_root=False,
    captures_packets=False,
)
#: The emulator also validates its own schemes (`kernel:<name>`, `wrapper:<file>`).
EMU = Engine(
    name="emu",
    noun="emulator",
    help="the real-time emulator with real Linux TCP and programs",
    verb="emulated in real time",
    core_run="run_emu",
    core_validate="validate_emu",
    serial=True,
    real_time=True,
    needs_root=True,
    captures_packets=True,
)

#: Every engine, by name, in the order help texts list them.
ENGINES: dict[str, Engine] = {e.name: e for e in (SIM, EMU)}
DEFAULT_ENGINE = SIM.name


def engine_named(name: str) -> Engine:
    """The descriptor of `name`; an UnknownEngineError naming the engines for anything else."""
    try:
        return ENGINES[name]
    except KeyError:
        raise UnknownEngineError(
            f"unknown engine {name!r}; the engines are {', '.join(ENGINES)}"
        ) from None


def engine_runner(engine: str) -> CoreRun:
    """The engine's `_core` run function (`cclab._core.run`, `cclab._core.run_emu`, ...)."""
    return engine_named(engine).run


def engine_validator(engine: str) -> CoreValidate:
    """The engine's `_core` validate function."""
    return engine_named(engine).validate


def engine_help() -> str:
    """`--engine`'s help, from the descriptors."""
    parts = []
    for e in ENGINES.values():
        notes = [
            note
            for note, on in (("default", e.name == DEFAULT_ENGINE), ("needs root", e.needs_root))
            if on
        ]
        parts.append(f"{e.name}: {e.help}" + (f" ({', '.join(notes)})" if notes else ""))
    return "; ".join(parts)


def add_engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine", choices=list(ENGINES), default=DEFAULT_ENGINE, help=engine_help()
    )


def add_tolerance_argument(
    parser: argparse.ArgumentParser,
    default: int | None = None,
    default_text: str = "5/8 of a packet time at the link's rate, at most 80",
) -> None:
    """`--tolerance-us`: the timing error a real-time engine may allow itself (`cclab.run`'s
    `tolerance_us`; None: the engine's own default, which `default_text` describes)."""
    parser.add_argument(
        "--tolerance-us",
        type=_non_negative_int,
        default=default,
        metavar="US",
        help="the emulator's: how far before or after its model time a packet may leave, so "
        f"one wake-up serves several (default: {default_text}; 0: every packet on time, more "
        "CPU)",
    )


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of µs ≥ 0, not {text!r}")
    return value
