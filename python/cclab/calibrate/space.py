"""What a calibration searches: the Pantheon's five-parameter link model (bottleneck rate,
one-way propagation delay, droptail queue, i.i.d. loss; constant or Poisson deliveries, one
study each), with ranges read off the target.

Ranges, and why (each is a bound the target's own figures imply, with a margin):

- rate: log-uniform in [0.9, 4] x the highest mean throughput of any scheme. No scheme's mean
  throughput exceeds the bottleneck's mean rate; 0.9 leaves room for measurement conventions
  (an imported log counts tunnel headers). 4 x covers paths where every scheme stays well
  under capacity (loss-limited, as on the Pantheon's Nepal path); log-uniform because the
  error is relative.
- one-way delay: log-uniform in [0.1, 1] x the lowest mean p95 one-way delay of any scheme:
  every packet waits at least the propagation delay, so no scheme's p95 is below it.
- queue: searched as the time the full buffer takes to drain at the trial's rate, log-uniform
  in [0.02, 2] x the highest mean p95 delay, then turned into packets (at least 2). A
  buffer-filling scheme's p95 delay is about propagation + that drain time, so the drain time
  is the parameter the delays see, independent of the rate; searching packets instead would
  couple queue and rate (the same packets mean another delay at another rate).
- loss: log10(loss) uniform in [-5, -1]; below -4 the link has no loss at all. So "no loss"
  keeps a quarter of the prior, and rates from 0.01% to 10% (the Pantheon's paths: 0, 0.06%,
  4.77%) are resolved on a log scale, which a linear range near 0 cannot.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass
from typing import Any, Literal

import optuna

from cclab import _core
from cclab.calibrate.target import Target

Delivery = Literal["constant", "poisson"]
DELIVERIES: tuple[Delivery, ...] = ("constant", "poisson")

#: log10 of the loss below which the link loses nothing.
LOSS_OFF_LOG10 = -4.0


@dataclass(frozen=True)
class LinkParams:
    """One candidate emulator."""

    delivery: str
    rate_mbps: float
    delay_ms: float
    queue_packets: int
    loss: float

    @property
    def random(self) -> bool:
        """Whether two seeds see different paths (Poisson deliveries or loss)."""
        return self.delivery == "poisson" or self.loss > 0

    def link_table(self) -> dict[str, Any]:
        """The scenario's `[link]` table."""
        return {
            "rate": f"{self.rate_mbps:.6g}Mbps",
            "delivery": self.delivery,
            "delay": f"{self.delay_ms:.4f}ms",
            "queue": self.queue_packets,
            "loss": float(f"{self.loss:.6g}"),
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SearchSpace:
    rate_mbps: tuple[float, float]
    delay_ms: tuple[float, float]
    queue_ms: tuple[float, float]
    loss_log10: tuple[float, float] = (-5.0, -1.0)

    @classmethod
    def from_target(cls, target: Target) -> SearchSpace:
        """The ranges of the module comment."""
        return cls(
            rate_mbps=(0.9 * target.max_throughput, 4.0 * target.max_throughput),
            delay_ms=(0.1 * target.min_delay, target.min_delay),
            queue_ms=(0.02 * target.max_delay, 2.0 * target.max_delay),
        )

    def suggest(self, trial: optuna.trial.BaseTrial, delivery: str) -> LinkParams:
        rate = trial.suggest_float("rate_mbps", *self.rate_mbps, log=True)
        delay = trial.suggest_float("delay_ms", *self.delay_ms, log=True)
        queue_ms = trial.suggest_float("queue_ms", *self.queue_ms, log=True)
        loss_log10 = trial.suggest_float("loss_log10", *self.loss_log10)
        return self.params(delivery, rate, delay, queue_ms, loss_log10)

    @staticmethod
    def params(
        delivery: str, rate_mbps: float, delay_ms: float, queue_ms: float, loss_log10: float
    ) -> LinkParams:
        """The link of a point of the search space."""
        packets = queue_ms * 1e-3 * rate_mbps * 1e6 / (8 * _core.PACKET_BYTES)
        return LinkParams(
            delivery=delivery,
            rate_mbps=rate_mbps,
            delay_ms=delay_ms,
            queue_packets=max(2, round(packets)),
            loss=0.0 if loss_log10 < LOSS_OFF_LOG10 else 10.0**loss_log10,
        )

    def perturb(
        self, point: dict[str, float], scale: float, rng: random.Random
    ) -> dict[str, float]:
        """A point near `point` (a trial's `params`): each coordinate moved by a normal draw of
        `scale` x its range (in log space where it is searched on a log scale), kept inside."""
        moved = {}
        for name, (low, high) in asdict(self).items():
            logged = name in _LOG_SCALED
            to = math.log if logged else float
            back = math.exp if logged else float
            lo, hi = to(low), to(high)
            x = to(point[name]) + rng.gauss(0.0, scale * (hi - lo))
            moved[name] = min(high, max(low, back(min(hi, max(lo, x)))))
        return moved

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) for k, v in asdict(self).items()}


#: The coordinates searched on a log scale (the others, loss's exponent, linearly).
_LOG_SCALED = ("rate_mbps", "delay_ms", "queue_ms")
