"""A congestion controller in Python: AIMD (additive increase, multiplicative decrease).

    python examples/aimd.py            # registers `aimd`, runs it against Cubic, prints the summary

Run by the simulator through cclab's transport, one Python call per ACK; `cclab.Controller`
documents the hooks and the attributes the transport reads back."""

from __future__ import annotations

import cclab


class AIMD(cclab.Controller):
    """AIMD: +`increase` MSS per RTT, times `decrease` on each loss episode."""

    def __init__(self, mss: int, increase: float = 1.0, decrease: float = 0.5) -> None:
        super().__init__(mss)
        self.increase, self.decrease = increase, decrease
        self.credit = 0.0  # bytes acked since the window last grew by one step

    def on_ack(self, ack: cclab.controller.Ack) -> None:
        if ack.ca_state == "recovery":
            return  # no growth while recovering, as TCP
        self.credit += ack.newly_acked_bytes * self.increase
        while self.credit >= self.cwnd:  # cwnd bytes acked ≈ one RTT
            self.credit -= self.cwnd
            self.cwnd += self.mss

    def on_congestion_event(self, event: cclab.controller.Congestion) -> None:
        self.cwnd = max(int(self.cwnd * self.decrease), 2 * self.mss)


cclab.register_scheme("aimd", AIMD, increase=1.0, decrease=0.5)

if __name__ == "__main__":
    result = cclab.run("pantheon-1flow", duration="10s", **{"flows.0.scheme": "aimd"})
    print(result.summary[["scheme", "throughput_mbps", "delay_p95_ms", "loss_pct"]])
