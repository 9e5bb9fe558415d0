"""Congestion controllers written in Python.

    class MyCC(cclab.Controller):
        def on_ack(self, ack):
            self.cwnd += ack.newly_acked_bytes * self.mss // self.cwnd

    cclab.register_scheme("mycc", MyCC, beta=0.5)     # options typed by their defaults
    cclab.run("scenarios/pantheon-1flow.toml", **{"flows.0.scheme": "mycc"})

The hooks are the Rust `CongestionControl` trait's (crates/cc/src/controller.rs): the simulator
calls them through the same transport as every built-in scheme (loss detection, RTT, rate
samples, pacing and recovery stay the transport's), once per ACK, congestion event, timer or
RTO, never once per packet sent. A controller never reads a clock: times are integer ns of
simulated time, so runs are deterministic. Its decisions are attributes, read back after
every hook: `cwnd` (bytes), `pacing_rate` (bytes/s, or None to let the transport pace from
cwnd and RTT), `ssthresh` (bytes or None), `slow_start` (whether it is in slow start: the
transport paces faster then) and `next_timer` (ns when `on_timer` should run, or None).

Workers of a process pool (experiments, reproductions) re-register every scheme registered
here before they run, by importing its class from `module:qualname`; a class defined in a
script run as `__main__` cannot be imported there, so batches that use one run in this process.

Owns: the Python side of controllers and their registration. Must not import the runner or
the CLI (they import this).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cclab import _core

#: What `cclab._core` hands to `on_ack` and `on_congestion_event` (see their docstrings).
Ack = _core.Ack
Congestion = _core.Congestion

#: Modules (`pkg.mod`) or files (`examples/aimd.py`) the `cclab` command imports at start,
#: separated by commas, so the schemes they register are known to every command.
CONTROLLERS_ENV = "CCLAB_CONTROLLERS"

#: The module a class defined in a script has; such a class cannot be imported by a worker.
MAIN_MODULE = "__main__"


class Controller:
    """Base class of a Python congestion controller. Subclasses override `on_ack` and any other
    hook; `__init__` receives the MSS and the scheme's options as keywords."""

    #: Congestion window, bytes.
    cwnd: int
    #: Pacing rate in bytes/s, or None to let the transport decide.
    pacing_rate: float | None = None
    #: Slow-start threshold in bytes, or None (none yet).
    ssthresh: int | None = None
    #: Whether the controller is in slow start (the transport then paces at 2x, not 1.2x).
    slow_start: bool = False
    #: When `on_timer` should next run (ns of simulated time), or None.
    next_timer: int | None = None
    #: Whether the transport meters the window out by Proportional Rate Reduction during fast
    #: recovery (`[transport] prr`), as Linux does for modules without their own `cong_control`
    #: (reno, cubic). Set it to True in a twin of such a module; read once, when the flow starts.
    prr: bool = False
    #: Whether the transport detects the controller's losses as Linux's RACK does
    #: (`[transport] rack`) rather than by RFC 9002's thresholds. Set it to True in a twin of a
    #: Linux module; read once, when the flow starts.
    rack: bool = False

    def __init__(self, mss: int, **options: Any) -> None:
        self.mss = mss
        self.cwnd = 10 * mss
        self.options = options

    def on_init(self, now: int) -> None:
        """Before the first packet is sent."""

    def on_ack(self, ack: Ack) -> None:
        """One ACK: `ack.now`, `newly_acked_bytes`, `newly_lost_bytes`, `in_flight`,
        `prior_in_flight`, the RTT estimator (`rtt_latest`, `srtt`, `rttvar`, `min_rtt`,
        `has_rtt`, ns), the rate sample (`delivery_rate` bytes/s or None, `rate_app_limited`),
        `delivered`, `round`, `round_start`, `ca_state` ("open", "recovery", "loss"),
        `app_limited`, and the packets it acknowledged (`acked`: (id, bytes, send_time, rtt))
        and revealed as lost (`lost`: (id, bytes, send_time))."""
        raise NotImplementedError(f"{type(self).__name__} must define on_ack")

    def on_congestion_event(self, event: Congestion) -> None:
        """At most once per recovery epoch (`now`, `lost_bytes`, `in_flight`,
        `prior_in_flight`, `largest_lost_send_time`): where classic controllers cut."""

    def on_rto(self, now: int, in_flight: int) -> None:
        """The retransmission timer expired; `in_flight` is the flight before it (FlightSize)."""

    def on_recovery_exit(self, now: int) -> None:
        """Fast recovery ended."""

    def on_idle_restart(self, now: int, idle_for: int, rto: int) -> None:
        """The sender was idle for `idle_for` ns before `now` and sends again; `rto` is its
        retransmission timeout (ns), which Linux compares the silence with to restart a
        window (tcp_cwnd_restart)."""

    def on_packets_lost(self, now: int, lost: list[tuple[int, int, int]]) -> None:
        """Losses found outside ACK processing (loss timer, RTO): (id, bytes, send_time)."""

    def on_timer(self, now: int) -> None:
        """`next_timer` has come."""


@dataclass(frozen=True)
class Registration:
    """How a scheme was registered, enough to register it again in another process."""

    name: str
    target: str  # module:qualname of the class
    summary: str
    options: tuple[tuple[str, Any], ...]

    @property
    def importable(self) -> bool:
        return not self.target.startswith(MAIN_MODULE + ":")


#: Every scheme registered from Python in this process, by name.
REGISTERED: dict[str, Registration] = {}


def register_scheme(
    name: str, cls: type[Controller] | str, *, summary: str = "", **options: Any
) -> None:
    """Registers a `Controller` subclass (or its `"module:Class"` path) as scheme `name`, with
    options and their defaults (bool, int or float: the default's type is the option's type).
    A scenario then names it like any scheme: `scheme = "name"`, options as keys of the flow."""
    if isinstance(cls, str):
        cls = _import_class(cls)
    if not (isinstance(cls, type) and issubclass(cls, Controller)):
        raise TypeError(f"register_scheme({name!r}, ...): {cls!r} is not a cclab.Controller class")
    target = f"{cls.__module__}:{cls.__qualname__}"
    doc = (cls.__doc__ or "").strip().splitlines()
    summary = summary or (doc[0] if doc else f"Python controller {target}")

    def factory(mss: int, values: dict[str, Any]) -> Controller:
        return cls(mss, **values)

    _core.register_python_scheme(
        name,
        summary,
        [(key, value, f"keyword argument of {cls.__qualname__}") for key, value in options.items()],
        factory,
    )
    REGISTERED[name] = Registration(name, target, summary, tuple(options.items()))


def unregister_scheme(name: str) -> None:
    """Removes a scheme registered with `register_scheme`."""
    REGISTERED.pop(name, None)
    _core.unregister_python_scheme(name)


def _import_class(target: str) -> type[Controller]:
    module, _, qualname = target.partition(":")
    if not qualname:
        raise ValueError(f"{target!r}: expected module:Class")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def restore(registrations: tuple[Registration, ...]) -> None:
    """In a worker process: registers again what the parent had registered."""
    for r in registrations:
        if r.name not in REGISTERED:
            register_scheme(r.name, r.target, summary=r.summary, **dict(r.options))


def all_importable() -> bool:
    """Whether a worker process could register every scheme registered here."""
    return all(r.importable for r in REGISTERED.values())


def load_controllers(spec: str) -> None:
    """Imports every module or `.py` file of a comma-separated list (`$CCLAB_CONTROLLERS`).
    A file is imported as a module named after it, from its folder (which joins `sys.path`, so
    worker processes can import it again)."""
    for item in filter(None, (part.strip() for part in spec.split(","))):
        if item.endswith(".py"):
            path = Path(item).resolve()
            if not path.is_file():
                raise FileNotFoundError(2, f"${CONTROLLERS_ENV}: no such file", item)
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            importlib.import_module(path.stem)
        else:
            importlib.import_module(item)
