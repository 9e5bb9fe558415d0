"""TCP NewReno in Python: a line-by-line twin of the Rust controller (crates/cc/src/newreno.rs),
used by the test that checks a Python controller gives bit-identical results to its Rust twin,
and by the benchmark of the cost per ACK (benches/py_controller.py)."""

from __future__ import annotations

import cclab
from cclab.controller import Ack, Congestion


class NewReno(cclab.Controller):
    """TCP NewReno (RFC 5681/6582), in Python."""

    # Linux's reno has no cong_control hook, so the transport runs PRR in recovery (as for Rust's),
    # and its losses are found by Linux's RACK.
    prr = True
    rack = True

    def __init__(self, mss: int, init_cwnd: int = 0) -> None:
        super().__init__(mss)
        # 0: RFC 6928's min(10·MSS, max(2·MSS, 14600 B)), as the Rust scheme's default.
        self.init = init_cwnd * mss if init_cwnd else min(10 * mss, max(2 * mss, 14_600))
        self.cwnd = self.init
        self.ssthresh = None  # "arbitrarily high" until the first congestion event
        self.slow_start = True
        self.bytes_acked = 0
        self.rto_pending = False

    def _half_flight(self, flight: int) -> int:
        return max(flight // 2, 2 * self.mss)

    def _update(self) -> None:
        self.slow_start = self.ssthresh is None or self.cwnd < self.ssthresh

    def on_ack(self, ack: Ack) -> None:
        if ack.newly_acked_bytes > 0:
            self.rto_pending = False
        if ack.ca_state == "recovery" or ack.app_limited:
            return
        acked = ack.newly_acked_bytes
        if self.slow_start:
            grown = self.cwnd + acked
            if self.ssthresh is not None:
                grown = min(grown, self.ssthresh)
            acked -= grown - self.cwnd
            self.cwnd = grown
        if acked > 0 and self.ssthresh is not None and self.cwnd >= self.ssthresh:
            self.bytes_acked += acked
            if self.bytes_acked >= self.cwnd:
                self.bytes_acked -= self.cwnd
                self.cwnd += self.mss
        self._update()

    def on_congestion_event(self, event: Congestion) -> None:
        self.ssthresh = self._half_flight(event.prior_in_flight)
        self.cwnd = self.ssthresh
        self.bytes_acked = 0
        self._update()

    def on_rto(self, now: int, in_flight: int) -> None:
        if not self.rto_pending:
            self.ssthresh = self._half_flight(in_flight)
        self.rto_pending = True
        self.cwnd = self.mss
        self.bytes_acked = 0
        self._update()

    def on_idle_restart(self, now: int, idle_for: int, rto: int) -> None:
        # Linux's tcp_cwnd_restart (crates/cc/src/linux.rs): after more than the sender's RTO of
        # silence, halve per RTO down to min(IW, cwnd); ssthresh keeps 3/4 of the old window.
        if rto > 0 and idle_for > rto:
            if self.ssthresh is not None:
                self.ssthresh = max(self.ssthresh, (self.cwnd >> 1) + (self.cwnd >> 2))
            restart = min(self.init, self.cwnd)
            left = idle_for
            while left > rto and self.cwnd > restart:
                left -= rto
                self.cwnd >>= 1
            self.cwnd = max(self.cwnd, restart)
        self._update()


cclab.register_scheme("py-newreno", NewReno, init_cwnd=0)
