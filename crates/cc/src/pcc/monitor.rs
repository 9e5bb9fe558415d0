//! Monitor intervals and their queue (PCC-Uspace `pcc_monitor_interval_queue.cpp`, reference §9.3).
//!
//! A monitor interval (MI) is a run of packets sent at one rate. Each packet carries its MI's id as
//! its `CcTag`, so acks and losses find their MI without a sent-packet map. An MI's utility is
//! available once every byte it sent was acked or lost and it collected at least four reliable RTT
//! samples; the controller takes the utilities of all "useful" MIs at once, and they leave the
//! queue together.
//!
//! As in the reference, an ACK's packets are attributed one event late ("pending" packets), with
//! the RTT and ACK spacing of the event that acknowledged them, so that the reliability test can
//! compare that event's ACK spacing with the next one's.

use crate::types::{AckedPacket, LostPacket, Time};
use std::collections::VecDeque;

/// PCC-Uspace `kMinReliableRtt`: an MI needs this many reliable RTT samples.
const MIN_RELIABLE_RTT: usize = 4;
/// A new ACK spacing more than this many times the running average ratio starts a "burst", during
/// which RTT samples are unreliable (PCC-Uspace `OnCongestionEvent`).
const BURST_RATIO: f64 = 50.0;
/// EWMA gain of the average ACK-spacing ratio.
const INTERVAL_RATIO_GAIN: f64 = 0.1;

#[derive(Clone, Copy, Debug)]
pub(super) struct RttSample {
    pub packet_number: u64,
    /// Microseconds, the reference's unit.
    pub rtt_us: f64,
    pub reliable: bool,
    pub reliable_for_gradient: bool,
}

#[derive(Clone, Debug)]
pub(super) struct MonitorInterval {
    pub id: u64,
    /// Bits per second.
    pub sending_rate: f64,
    pub is_useful: bool,
    pub rtt_fluctuation_tolerance_ratio: f64,
    pub first_packet_sent_time: Time,
    pub last_packet_sent_time: Time,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_lost: u64,
    pub rtt_on_monitor_start: Time,
    pub rtt_on_monitor_end: Time,
    pub rtt_samples: Vec<RttSample>,
    pub num_reliable_rtt: usize,
    pub num_reliable_rtt_for_gradient: usize,
    pub has_enough_reliable_rtt: bool,
    pub is_monitor_duration_extended: bool,
}

impl MonitorInterval {
    fn utility_available(&self) -> bool {
        self.has_enough_reliable_rtt && self.bytes_acked + self.bytes_lost == self.bytes_sent
    }

    /// The reference refuses a utility for an MI whose packets all left at one instant.
    fn has_invalid_utility(&self) -> bool {
        self.first_packet_sent_time == self.last_packet_sent_time
    }
}

/// What one ACK (or loss) event did to the useful MIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ready {
    /// Some useful MI is still waiting for acks or RTT samples.
    NotYet,
    /// Every useful MI has its utility: compute them, then call [`MonitorQueue::pop_useful`].
    Available,
    /// An MI cannot have a utility: drop the useful MIs without deciding anything.
    Invalid,
}

/// An acknowledged packet waiting for the next event to be attributed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    id: u64,
    bytes: u64,
    tag: u64,
}

/// The RTT statistics of one event, handed to [`MonitorQueue::on_event`].
#[derive(Clone, Copy, Debug)]
pub(super) struct EventRtt {
    pub avg_rtt: Time,
    pub latest_rtt: Time,
    /// Time since the previous ACK event.
    pub ack_interval: Time,
}

#[derive(Clone, Debug)]
pub(super) struct MonitorQueue {
    intervals: VecDeque<MonitorInterval>,
    next_id: u64,
    pending: Vec<Pending>,
    pending_rtt: Time,
    pending_avg_rtt: Time,
    pending_ack_interval: Time,
    burst: bool,
    /// Running average of the ACK-spacing ratio; negative until the first one.
    avg_interval_ratio: f64,
    num_useful: usize,
    /// Vectors of dropped MIs, kept to avoid allocating for every MI.
    spare: Vec<Vec<RttSample>>,
}

impl MonitorQueue {
    pub fn new() -> MonitorQueue {
        MonitorQueue {
            intervals: VecDeque::new(),
            next_id: 1,
            pending: Vec::new(),
            pending_rtt: 0,
            pending_avg_rtt: 0,
            pending_ack_interval: 0,
            burst: false,
            avg_interval_ratio: -1.0,
            num_useful: 0,
            spare: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    pub fn len(&self) -> usize {
        self.intervals.len()
    }

    pub fn num_useful(&self) -> usize {
        self.num_useful
    }

    pub fn front(&self) -> Option<&MonitorInterval> {
        self.intervals.front()
    }

    /// The newest MI (the one packets are being added to).
    pub fn current(&self) -> Option<&MonitorInterval> {
        self.intervals.back()
    }

    pub fn useful(&self) -> impl Iterator<Item = &MonitorInterval> {
        self.intervals.iter().filter(|m| m.is_useful)
    }

    pub fn enqueue(&mut self, sending_rate: f64, is_useful: bool, tolerance: f64, rtt: Time) {
        if is_useful {
            self.num_useful += 1;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.intervals.push_back(MonitorInterval {
            id,
            sending_rate,
            is_useful,
            rtt_fluctuation_tolerance_ratio: tolerance,
            first_packet_sent_time: 0,
            last_packet_sent_time: 0,
            bytes_sent: 0,
            bytes_acked: 0,
            bytes_lost: 0,
            rtt_on_monitor_start: rtt,
            rtt_on_monitor_end: rtt,
            rtt_samples: self.spare.pop().unwrap_or_default(),
            num_reliable_rtt: 0,
            num_reliable_rtt_for_gradient: 0,
            has_enough_reliable_rtt: false,
            is_monitor_duration_extended: false,
        });
    }

    pub fn extend_current(&mut self) {
        if let Some(m) = self.intervals.back_mut() {
            m.is_monitor_duration_extended = true;
        }
    }

    /// Adds a sent packet to the current MI and returns the MI's id (the packet's tag).
    pub fn on_packet_sent(&mut self, now: Time, bytes: u64) -> u64 {
        let Some(m) = self.intervals.back_mut() else { return 0 };
        if m.bytes_sent == 0 {
            m.first_packet_sent_time = now;
        }
        m.last_packet_sent_time = now;
        m.bytes_sent += bytes;
        m.id
    }

    /// PCC-Uspace `OnRttInflationInStarting`: forget every MI.
    pub fn clear(&mut self) {
        while let Some(m) = self.intervals.pop_front() {
            self.recycle(m);
        }
        self.num_useful = 0;
    }

    fn recycle(&mut self, mut m: MonitorInterval) {
        m.rtt_samples.clear();
        self.spare.push(m.rtt_samples);
    }

    /// Removes MIs from the front until no useful one is left.
    pub fn pop_useful(&mut self) {
        while self.num_useful > 0 {
            let Some(m) = self.intervals.pop_front() else { break };
            if m.is_useful {
                self.num_useful -= 1;
            }
            self.recycle(m);
        }
        self.num_useful = 0;
    }

    /// PCC-Uspace `PccMonitorIntervalQueue::OnCongestionEvent`: attributes this event's losses
    /// and the previous ACK's packets to their MIs, and says whether the utilities are ready.
    /// `rtt.avg_rtt` becomes the `rtt_on_monitor_end` of an MI that completes now.
    ///
    /// `rtt` is `None` for losses found without an ACK (the loss timer, the RTO). Those attribute
    /// their losses only: the pending packets wait for the next ACK. The reference's UDT glue
    /// reports every loss this way with a zero ACK spacing, which makes the spacing ratio
    /// infinite and starts a "burst" that ends only when the RTT turns upward from below its
    /// average — on a path without RTT jitter, never, and then no MI ever completes.
    pub fn on_event(&mut self, acked: &[AckedPacket], lost: &[LostPacket], rtt: Option<EventRtt>) -> Ready {
        let mut ready = Ready::NotYet;
        let avg_rtt = rtt.map_or(self.pending_avg_rtt, |r| r.avg_rtt);
        if self.num_useful > 0 {
            let mut num_available = 0;
            let mut invalid = false;
            for i in 0..self.intervals.len() {
                let m = &self.intervals[i];
                if !m.is_useful {
                    continue;
                }
                if m.utility_available() {
                    num_available += 1;
                    continue;
                }
                let id = m.id;
                for l in lost.iter().filter(|l| l.tag == id) {
                    self.intervals[i].bytes_lost += l.bytes;
                }
                if let Some(rtt) = rtt {
                    for k in 0..self.pending.len() {
                        let p = self.pending[k];
                        if p.tag == id {
                            self.attribute_ack(i, p, rtt);
                        }
                    }
                }
                let m = &mut self.intervals[i];
                if m.utility_available() {
                    m.rtt_on_monitor_end = avg_rtt;
                    if m.has_invalid_utility() {
                        invalid = true;
                        break;
                    }
                    num_available += 1;
                }
            }
            ready = if invalid {
                Ready::Invalid
            } else if num_available == self.num_useful {
                Ready::Available
            } else {
                Ready::NotYet
            };
        }
        if let Some(rtt) = rtt {
            self.pending.clear();
            self.pending.extend(acked.iter().map(|a| Pending { id: a.id, bytes: a.bytes, tag: a.tag }));
            self.pending_rtt = rtt.latest_rtt;
            self.pending_avg_rtt = rtt.avg_rtt;
            self.pending_ack_interval = rtt.ack_interval;
        }
        ready
    }

    /// Counts one acknowledged packet (from the previous event) in MI `i` and judges whether its
    /// RTT sample is reliable: an ACK spacing that jumps to more than 50 times the usual ratio
    /// starts a burst (ACK compression), and samples stay unreliable until the RTT turns upward
    /// from below its average.
    fn attribute_ack(&mut self, i: usize, p: Pending, rtt: EventRtt) {
        let mut reliable = false;
        if self.pending_ack_interval != 0 {
            // IEEE division as in the reference: a zero spacing gives an infinite ratio.
            let mut ratio = self.pending_ack_interval as f64 / rtt.ack_interval as f64;
            if ratio < 1.0 {
                ratio = 1.0 / ratio;
            }
            if self.avg_interval_ratio < 0.0 {
                self.avg_interval_ratio = ratio;
            }
            if ratio > BURST_RATIO * self.avg_interval_ratio {
                self.burst = true;
            } else if self.burst {
                if rtt.latest_rtt > self.pending_rtt && self.pending_rtt < self.pending_avg_rtt {
                    self.burst = false;
                }
            } else {
                reliable = true;
            }
            self.avg_interval_ratio =
                self.avg_interval_ratio * (1.0 - INTERVAL_RATIO_GAIN) + ratio * INTERVAL_RATIO_GAIN;
        }
        let m = &mut self.intervals[i];
        if m.bytes_acked == 0 {
            // The RTT before the MI's rate took effect.
            m.rtt_on_monitor_start = self.pending_avg_rtt;
        }
        m.bytes_acked += p.bytes;
        if reliable {
            m.num_reliable_rtt += 1;
            m.num_reliable_rtt_for_gradient += 1;
        }
        m.rtt_samples.push(RttSample {
            packet_number: p.id,
            rtt_us: self.pending_rtt as f64 / 1e3,
            reliable,
            reliable_for_gradient: reliable,
        });
        if m.num_reliable_rtt >= MIN_RELIABLE_RTT {
            m.has_enough_reliable_rtt = true;
        }
    }
}
