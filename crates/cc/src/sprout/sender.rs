//! Sprout's sending end: the window that forecast minus queue allows, and the fallback packet.

use super::feedback::decode;
use super::forecast::Model;
use super::*;
use crate::controller::CongestionControl;

/// Sprout's sender (`SproutConnection` with `sproutbt2`'s loop), in packets.
#[derive(Clone, Debug)]
pub struct Sprout {
    mss: u64,
    /// The operative forecast: cumulative packets deliverable over 1…8 ticks.
    counts: [u8; NUM_TICKS],
    /// When that forecast arrived (`remote_forecast_time`).
    forecast_time: Time,
    /// Packets estimated to be queued in the link (`current_queue_bytes_estimate`).
    pub(super) queue: i64,
    /// Ticks of the forecast already drained from `queue` (`current_forecast_tick`).
    pub(super) tick: usize,
    /// Packets sent so far (the transport's next packet id).
    sent: u64,
    /// Packets the window allows now.
    pub(super) window: i64,
    last_send: Option<Time>,
    /// No packet for a fallback interval: one may go regardless of the window.
    fallback_due: bool,
}

impl Sprout {
    pub fn new(mss: u64) -> Sprout {
        // "Something reasonable" before the first feedback: the forecast of a receiver that has
        // seen nothing (keithw/sprout starts from its own receiver's forecast the same way).
        let model = Model::get();
        let prior = vec![1.0 / model.bins() as f64; model.bins()];
        Sprout {
            mss,
            counts: model.forecast(&prior),
            forecast_time: 0,
            queue: 0,
            tick: 0,
            sent: 0,
            window: 0,
            last_send: None,
            fallback_due: false,
        }
    }

    /// `update_queue_estimate`: drain the queue estimate as forecast ticks pass. The reference
    /// subtracts the forecast's *cumulative* count for each tick passed; it is kept. (A fresh
    /// forecast normally arrives every tick, so rarely more than the first is subtracted.)
    fn update_queue_estimate(&mut self, now: Time) {
        let elapsed_ticks = (now.saturating_sub(self.forecast_time) / TICK) as usize;
        let new_tick = elapsed_ticks.min(NUM_TICKS - 1);
        while self.tick < new_tick {
            self.queue = (self.queue - self.counts[self.tick] as i64).max(0);
            self.tick += 1;
        }
    }

    /// `window_size`, in packets, and whether the fallback packet is due.
    fn refresh(&mut self, now: Time) {
        self.update_queue_estimate(now);
        let horizon = (self.tick + TARGET_DELAY_TICKS).min(NUM_TICKS - 1);
        let deliverable = self.counts[horizon] as i64 - self.counts[self.tick] as i64;
        self.window = (deliverable - self.queue).max(0);
        self.fallback_due = self.last_send.is_none_or(|t| now >= t + FALLBACK_INTERVAL);
    }
}

impl CongestionControl for Sprout {
    fn name(&self) -> &'static str {
        "sprout"
    }

    fn on_init(&mut self, now: Time, _rtt: &RttStats, _ctx: &mut CcContext) {
        self.forecast_time = now;
        self.last_send = Some(now);
        self.refresh(now);
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        self.sent = self.sent.max(pkt.id + 1);
        self.queue += 1;
        self.last_send = Some(pkt.send_time);
        self.refresh(pkt.send_time);
        0
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        self.refresh(ev.now);
    }

    fn on_feedback(&mut self, now: Time, fb: &Feedback, _ctx: &mut CcContext) {
        // keithw/sprout: queue estimate = bytes sent − bytes received or lost. With FIFO paths,
        // everything up to the ACK's largest received id was received or lost.
        let received_or_lost = fb.largest_received + 1;
        self.counts = decode(&fb.payload);
        self.forecast_time = now;
        self.queue = self.sent.saturating_sub(received_or_lost) as i64;
        self.tick = 0;
        self.refresh(now);
    }

    fn next_timer(&self) -> Option<Time> {
        // The next forecast tick (the window may open as the queue estimate drains) and the
        // fallback deadline.
        let tick = (self.tick < NUM_TICKS - 1).then(|| self.forecast_time + (self.tick as Time + 1) * TICK);
        let fallback = match (self.fallback_due, self.last_send) {
            (false, Some(t)) => Some(t + FALLBACK_INTERVAL),
            _ => None,
        };
        cclab_core::time::earlier(tick, fallback)
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut CcContext) {
        self.refresh(now);
    }

    fn can_send(&self, _in_flight: u64, _mss: u64) -> bool {
        self.window >= 1 || self.fallback_due
    }

    fn cwnd(&self) -> u64 {
        // What Sprout allows outstanding (queued + sendable), at least two packets; informational,
        // `can_send` decides.
        (self.queue + self.window).max(2) as u64 * self.mss
    }

    fn snapshot(&self) -> CcSnapshot {
        CcSnapshot {
            mode: "sprout",
            vars: vec![
                ("window_pkts", self.window as f64),
                ("queue_estimate_pkts", self.queue as f64),
                ("forecast_100ms_pkts", self.counts[TARGET_DELAY_TICKS - 1] as f64),
            ],
        }
    }
}
