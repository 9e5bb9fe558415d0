//! The congestion-control interface shared by the simulator and the emulator's UDP transport.
//!
//! The transport owns RTT estimation, loss detection, delivery-rate sampling, app-limited
//! tracking, round counting and pacing mechanics (reference §0); a controller owns only its
//! decision: a congestion window and, optionally, a pacing rate. Bytes at the interface.

use crate::types::*;

pub trait CongestionControl: Send {
    /// The scheme name, as `cclab schemes` lists it.
    fn name(&self) -> &'static str;

    /// Called once before the first packet is sent. `rtt` is the transport's RTT state then:
    /// the handshake's sample when the connection opened with one (`[transport] handshake`), as
    /// Linux's tcp_init_congestion_control runs after the SYN-ACK set srtt and min-RTT;
    /// `has_sample` false otherwise.
    fn on_init(&mut self, _now: Time, _rtt: &RttStats, _ctx: &mut CcContext) {}

    /// Called for every transmission; the returned tag comes back with the packet's ack or loss.
    fn on_packet_sent(&mut self, _pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        0
    }

    /// The main entry: one ACK with everything it acknowledged and every loss it revealed.
    fn on_ack(&mut self, ev: &AckEvent, ctx: &mut CcContext);

    /// At most once per recovery epoch: where classic controllers cut their window.
    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _ctx: &mut CcContext) {}

    /// The retransmission timer expired (all outstanding packets are being declared lost).
    fn on_rto(&mut self, _now: Time, _ctx: &mut CcContext) {}

    /// The current loss episode's retransmission timeout was spurious (an ACK acknowledged a
    /// transmission sent before it): restore the window and ssthresh saved when the episode
    /// began, as Linux's tcp_undo_cwnd_reduction does with the scheme's `undo_cwnd`
    /// (net/ipv4/tcp_input.c). The transport is back in `CaState::Open` when this is called.
    /// `restored` are packets the timeout reported lost that are in flight again (their ack
    /// or loss will be reported once more); the default keeps the reduction (no undo).
    fn undo_cwnd(&mut self, _now: Time, _restored: &[LostPacket], _ctx: &mut CcContext) {}

    /// Fast recovery ended: every packet outstanding at its start has been acked or lost.
    fn on_recovery_exit(&mut self, _now: Time, _ctx: &mut CcContext) {}

    /// The sender was idle (nothing in flight, nothing to send) for `idle_for` before `now`
    /// and sends again (Linux's CA_EVENT_TX_START). `rto` is the sender's current
    /// retransmission timeout (Linux's `icsk_rto`): a window-based module restarts its window
    /// when `idle_for` exceeds it ([`crate::linux::cwnd_restart`]).
    fn on_idle_restart(&mut self, _now: Time, _idle_for: Time, _rto: Time, _ctx: &mut CcContext) {}

    /// Packets declared lost outside ACK processing: by the loss timer (RACK's time threshold
    /// with no ACK arriving) or by the retransmission timer (then just before `on_rto`). Losses
    /// found while processing an ACK come in `AckEvent::lost` instead; controllers that account
    /// for every packet (PCC's monitor intervals) need both.
    fn on_packets_lost(&mut self, _now: Time, _lost: &[LostPacket], _ctx: &mut CcContext) {}

    /// Receiver feedback carried on an ACK (see [`crate::agent::ReceiverAgent`]), delivered
    /// before the ACK's acknowledgements are processed.
    fn on_feedback(&mut self, _now: Time, _fb: &Feedback, _ctx: &mut CcContext) {}

    /// The next time the controller wants `on_timer`, if any.
    fn next_timer(&self) -> Option<Time> {
        None
    }
    fn on_timer(&mut self, _now: Time, _ctx: &mut CcContext) {}

    /// Congestion window in bytes; `u64::MAX` for none.
    fn cwnd(&self) -> u64;

    /// Pacing rate in bytes per second, or `None` to let the transport decide.
    fn pacing_rate(&self) -> Option<f64> {
        None
    }

    /// Whether another packet may be sent with `in_flight` bytes outstanding.
    fn can_send(&self, in_flight: u64, mss: u64) -> bool {
        in_flight + mss <= self.cwnd().max(mss)
    }

    fn ssthresh(&self) -> Option<u64> {
        None
    }
    fn in_slow_start(&self) -> bool {
        false
    }

    /// For a controller that models a Linux TCP congestion module: the fewest segments of one
    /// TSO/GSO burst (Linux's `ca_ops->min_tso_segs`, else `sysctl_tcp_min_tso_segs`, 2). The
    /// transport then sends a paced flow in Linux's bursts (`[transport] tso`). None, the
    /// default, for schemes whose implementations are not kernel TCP: one packet per pacing slot.
    fn min_tso_segs(&self) -> Option<u64> {
        None
    }

    /// Whether Linux runs Proportional Rate Reduction (tcp_cwnd_reduction, RFC 6937) for this
    /// module during fast recovery: true for a module without its own `cong_control` hook
    /// (cubic, reno, vegas), whose window the transport then meters out by PRR until recovery
    /// ends (`[transport] prr`). False, the default, for BBR (it has cong_control) and for
    /// schemes that are not kernel TCP: the controller's window alone governs.
    fn uses_prr(&self) -> bool {
        false
    }

    /// Whether the transport detects this controller's losses as Linux's RACK does
    /// (`[transport] rack`): true for a controller that models a Linux TCP module (the default
    /// follows `min_tso_segs`); false for schemes whose implementations are not kernel TCP,
    /// which get RFC 9002's thresholds.
    fn uses_rack(&self) -> bool {
        self.min_tso_segs().is_some()
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot { mode: "", vars: vec![("cwnd", self.cwnd() as f64)] }
    }
}
