//! When a packet can leave the bottleneck: serialisation at a constant rate, or delivery
//! opportunities (a Poisson process, or a mahimahi trace) that each carry up to one MTU of bytes.
//!
//! The delivery process knows nothing of which packet it serves or which are dropped: that is
//! the queue discipline's business ([`crate::qdisc`]). It sees the packet in service only as a
//! size, and hands it back through [`Server::complete`] when its last byte has left; so a new
//! discipline never touches this code.

mod trace;

pub use trace::Trace;

use cclab_core::rng::Rng;
use cclab_core::scenario::{Delivery, Link, PACKET_BYTES};
use cclab_core::time::Time;
use cclab_core::units::Rate;
use std::sync::Arc;

/// Bytes one delivery opportunity carries (mahimahi's MTU-sized opportunity).
pub const OPPORTUNITY_BYTES: u64 = PACKET_BYTES;

/// When packets can leave the bottleneck: the delivery process as the scenario describes it.
#[derive(Clone, Debug)]
pub enum Service {
    /// Serialisation at a fixed rate.
    Constant(Rate),
    /// Opportunities of one 1500-byte packet as a Poisson process at the given mean rate.
    Poisson(Rate),
    Trace(Arc<Trace>),
}

impl Service {
    pub fn from_link(link: &Link, trace: Option<Arc<Trace>>) -> Service {
        match (trace, link.rate, link.delivery) {
            (Some(t), _, _) => Service::Trace(t),
            (None, Some(r), Delivery::Poisson) => Service::Poisson(r),
            (None, Some(r), Delivery::Constant) => Service::Constant(r),
            (None, None, _) => unreachable!("a validated link has a rate or a trace"),
        }
    }

    pub fn mean_rate(&self) -> Rate {
        match self {
            Service::Constant(r) | Service::Poisson(r) => *r,
            Service::Trace(t) => t.mean_rate(),
        }
    }

    /// Bits the link could deliver in [t0, t1): exact for traces, the mean otherwise.
    pub fn capacity_bits(&self, t0: Time, t1: Time) -> f64 {
        match self {
            Service::Trace(t) => t.capacity_bits(t0, t1),
            _ => self.mean_rate().bits_per_sec() as f64 * (t1.saturating_sub(t0)) as f64 / 1e9,
        }
    }
}

/// The side of the bottleneck that holds packets, as the delivery process sees it.
pub trait Server {
    /// The packet in service has left at `t`: release it and put the next one in service,
    /// returning its size, or None if nothing is left to serve.
    fn complete(&mut self, t: Time) -> Option<u64>;
}

/// The state of a delivery process: what is left of the packet in service and when the next
/// departure or opportunity is.
#[derive(Clone, Debug)]
pub struct DeliveryProcess {
    service: Service,
    /// Whether a packet is in service.
    busy: bool,
    /// Bytes of the packet in service not yet carried by an opportunity (opportunity links).
    remaining: u64,
    /// When the packet in service finishes serialising (constant links).
    done: Option<Time>,
    next_opportunity: Option<Time>,
    last_opportunity: Option<Time>,
    rng: Rng,
}

impl DeliveryProcess {
    /// `rng` draws the Poisson opportunities (the stream `rng::stream::LINK`).
    pub fn new(service: Service, rng: Rng) -> DeliveryProcess {
        DeliveryProcess {
            service,
            busy: false,
            remaining: 0,
            done: None,
            next_opportunity: None,
            last_opportunity: None,
            rng,
        }
    }

    pub fn service(&self) -> &Service {
        &self.service
    }

    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Mean gap between Poisson opportunities, ns.
    fn poisson_mean(rate: Rate) -> f64 {
        OPPORTUNITY_BYTES as f64 * 8.0 / rate.bits_per_sec() as f64 * 1e9
    }

    /// An idle process takes a packet of `size` bytes into service at `now`.
    pub fn start(&mut self, now: Time, size: u64) {
        self.busy = true;
        match &self.service {
            Service::Constant(rate) => self.done = Some(now + rate.serialisation_ns(size)),
            Service::Poisson(rate) => {
                self.remaining = size;
                if self.next_opportunity.is_none_or(|t| t < now) {
                    // Memoryless: a fresh draw from now is distributed as the lapsed process.
                    let mean = Self::poisson_mean(*rate);
                    self.next_opportunity = Some(now + self.rng.exponential(mean).round() as Time);
                }
            }
            Service::Trace(trace) => {
                self.remaining = size;
                let from = self.last_opportunity.map_or(now, |l| now.max(l + 1));
                if self.next_opportunity.is_none_or(|t| t < from) {
                    self.next_opportunity = Some(trace.next_at_or_after(from).0);
                }
            }
        }
    }

    /// When the packet in service can leave (or the next opportunity for it), if one is.
    #[inline]
    pub fn next_event(&self) -> Option<Time> {
        if !self.busy {
            return None;
        }
        match self.service {
            Service::Constant(_) => self.done,
            _ => self.next_opportunity,
        }
    }

    /// Lets out every packet due at or before `now`, in order, through `server`.
    pub fn serve(&mut self, now: Time, server: &mut impl Server) {
        match &self.service {
            Service::Constant(_) => {
                while let Some(done) = self.done.filter(|&t| t <= now) {
                    self.done = None;
                    self.busy = false;
                    // The next packet starts serialising the instant the previous one is out.
                    if let Some(size) = server.complete(done) {
                        self.start(done, size);
                    }
                }
            }
            Service::Poisson(rate) => {
                let mean = Self::poisson_mean(*rate);
                while let Some(t) = self.next_opportunity.filter(|&t| t <= now && self.busy) {
                    self.spend_opportunity(t, OPPORTUNITY_BYTES, server);
                    self.next_opportunity = Some(t + self.rng.exponential(mean).round() as Time);
                }
            }
            Service::Trace(trace) => {
                let trace = Arc::clone(trace);
                while let Some(t) = self.next_opportunity.filter(|&t| t <= now && self.busy) {
                    let (_, count) = trace.next_at_or_after(t);
                    self.spend_opportunity(t, count as u64 * OPPORTUNITY_BYTES, server);
                    self.last_opportunity = Some(t);
                    self.next_opportunity = Some(trace.next_at_or_after(t + 1).0);
                }
            }
        }
    }

    /// mahimahi's byte accounting: an opportunity's bytes may carry several small packets,
    /// and a large packet may need several opportunities. Unused bytes are lost.
    fn spend_opportunity(&mut self, t: Time, mut budget: u64, server: &mut impl Server) {
        while budget > 0 && self.busy {
            let take = budget.min(self.remaining);
            budget -= take;
            self.remaining -= take;
            if self.remaining == 0 {
                match server.complete(t) {
                    // The next packet is carried by what is left of this opportunity.
                    Some(size) => self.remaining = size,
                    None => self.busy = false,
                }
            }
        }
    }
}
