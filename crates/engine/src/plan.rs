//! The path of a scenario, resolved once: every delay, the loss, the queue and the delivery
//! process, each flow's delays and base RTT, and the random streams, so that every engine builds
//! the same dumbbell from the same numbers.
//!
//! Data: sender → host jitter (`[hosts]`) → access delay (half the flow's extra RTT) → i.i.d.
//! loss → bottleneck (queue discipline + delivery process) → propagation delay (plus jitter, if
//! any) → receiver. ACKs: receiver → host jitter → reverse delay (plus the other half of the
//! extra RTT) → the reverse bottleneck if the ACK direction has a delivery process
//! (`link.reverse_trace`, as mahimahi's `mm-link UP DOWN`, or `reverse.rate`): a drop-tail
//! queue, unbounded unless `reverse.queue`, drained by it → sender; without one the reverse path
//! is uncongested.

use crate::bottleneck::Bottleneck;
use crate::delivery::{Service, Trace};
use crate::middlebox::Inbox;
use crate::qdisc::{Limit, Qdisc, QdiscSpec};
use crate::scheduled_fifo::ScheduledFifo;
use crate::stage::{DelayLine, Jitter, Loss, WirePacket};
use crate::workload::{RequestPlan, RequestSource};
use crate::FlowInfo;
use cclab_core::metrics::{MetricsConfig, Schedule};
use cclab_core::rng::{stream, Rng};
use cclab_core::scenario::hosts::Stalls;
use cclab_core::scenario::{Link, Middlebox, Scenario, Traffic, PACKET_BYTES};
use cclab_core::time::{Time, MS};
use std::sync::Arc;

/// One flow's share of the path.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowPath {
    pub info: FlowInfo,
    /// Index of the `[[flows]]` entry the flow came from.
    pub spec: usize,
    /// Delay before the bottleneck, ns: half the flow's extra RTT; None without one.
    pub access_delay: Option<Time>,
    /// Delay of the flow's ACK path, ns: the reverse delay plus the other half of its extra RTT.
    pub reverse_delay: Time,
    /// Whether its data passes the `[middlebox]`, if there is one (`flows.bundle`).
    pub bundled: bool,
}

/// The scenario's path, ready for an engine to build its stages from.
#[derive(Clone, Debug)]
pub struct PathPlan {
    pub seed: u64,
    pub service: Service,
    pub limit: Limit,
    /// The queue discipline and its parameters.
    pub qdisc: QdiscSpec,
    /// i.i.d. loss probability before the bottleneck.
    pub loss: f64,
    /// Delay from the bottleneck to the receivers, ns.
    pub prop_delay: Time,
    /// Largest per-packet processing delay at each sending host (data) and receiving host
    /// (ACKs), ns: `[hosts] jitter` resolved against the bottleneck rate; 0 without jitter.
    pub host_jitter: Time,
    /// The hosts' stalls on top of that jitter (`[hosts] stalls` resolved; None: none).
    pub host_stalls: Option<Stalls>,
    /// Largest extra delay drawn per packet on that line, ns (0: a constant delay).
    pub prop_jitter: Time,
    /// The ACK direction's delivery process, when it has one (a reverse trace or rate).
    pub reverse_service: Option<Service>,
    /// The drop-tail limit of the ACK direction's queue (`reverse.queue`).
    pub reverse_limit: Limit,
    /// Delay of the ACK path shared by every flow, ns (before any flow's extra RTT).
    pub reverse_delay: Time,
    /// Round-trip propagation delay of a flow without extra RTT, ns.
    pub base_rtt: Time,
    pub flows: Vec<FlowPath>,
    pub metrics: MetricsConfig,
    /// The request workloads (`traffic = "requests"` entries), in entry order.
    pub requests: Vec<RequestPlan>,
    /// The `[middlebox]`, with its buffer resolved against the link.
    pub middlebox: Option<(Middlebox, Limit, QdiscSpec)>,
}

impl PathPlan {
    /// Resolves a validated scenario; fails only if its trace file cannot be read.
    pub fn resolve(scenario: &Scenario) -> Result<PathPlan, String> {
        let link = &scenario.link;
        let trace = match &link.trace {
            Some(path) => Some(Arc::new(Trace::load(path)?)),
            None => None,
        };
        let service = Service::from_link(link, trace);
        let reverse_service = match (&link.reverse_trace, scenario.reverse.rate) {
            (Some(path), _) => {
                Some(Service::Trace(Arc::new(Trace::load(path).map_err(|e| format!("link.reverse_trace: {e}"))?)))
            }
            (None, Some(rate)) => Some(Service::Constant(rate)),
            (None, None) => None,
        };
        let reverse_delay = scenario.reverse_delay().ns();
        let base_rtt = link.delay.ns() + reverse_delay;
        let reverse_limit = match (scenario.reverse.queue, &reverse_service) {
            // Validation refuses a BDP multiple here; packets, bytes and infinite need no rate.
            (Some(q), Some(service)) => Limit::resolve(q, service.mean_rate(), base_rtt),
            _ => Limit::None,
        };
        let limit = Limit::resolve(link.queue, service.mean_rate(), base_rtt);
        let service_rate = service.mean_rate();
        let flows: Vec<FlowPath> = scenario
            .flow_instances()
            .iter()
            .map(|inst| {
                let spec = &scenario.flows[inst.spec];
                let extra = spec.extra_rtt.ns();
                FlowPath {
                    info: FlowInfo {
                        id: inst.id,
                        scheme: spec.scheme.clone(),
                        start: inst.start.ns(),
                        stop: inst.stop.ns(),
                        base_rtt: base_rtt + extra,
                    },
                    spec: inst.spec,
                    access_delay: (extra > 0).then_some(extra / 2),
                    reverse_delay: reverse_delay + (extra - extra / 2),
                    bundled: spec.bundle,
                }
            })
            .collect();
        // A flow's data is due at the receiver one forward propagation delay after its sender
        // starts, and stops arriving (queueing aside) that long after it stops: Jain's index
        // counts the flow from then on, as zero if it delivers nothing.
        let schedule = flows
            .iter()
            .map(|f| {
                let forward = f.access_delay.unwrap_or(0) + link.delay.ns();
                Schedule { start: f.info.start + forward, stop: f.info.stop + forward }
            })
            .collect();
        let entries: Vec<usize> = flows.iter().map(|f| f.spec).collect();
        let metrics = MetricsConfig {
            n_flows: flows.len(),
            bin: scenario.output.bin.ns(),
            jain_bucket: scenario.output.jain_bucket.ns(),
            origin: 0,
            schedule,
            // An engine that promises arrival order says so (the simulator does).
            arrivals_ordered: false,
        };
        let mut requests = Vec::new();
        for (spec, f) in scenario.flows.iter().enumerate() {
            let Some(r) = f.requests.as_ref().filter(|_| f.traffic == Traffic::Requests) else { continue };
            let cdf = Arc::new(r.load_cdf().map_err(|e| format!("flows[{spec}].requests.cdf: {e}"))?);
            let mine: Vec<&FlowPath> = flows.iter().filter(|p| p.spec == spec).collect();
            requests.push(RequestPlan {
                spec,
                mean_gap_ns: r.mean_gap_ns(&cdf),
                cdf,
                connections: mine.iter().map(|p| p.info.id).collect(),
                start: mine.iter().map(|p| p.info.start).min().unwrap_or(0),
                stop: mine.iter().map(|p| p.info.stop).max().unwrap_or(0),
                max_requests: r.max_requests,
            });
        }
        let middlebox = scenario.middlebox.clone().map(|m| {
            let limit = Limit::resolve(m.queue, service.mean_rate(), base_rtt);
            // The scheduler is the discipline of that name, as `link.aqm` would build it.
            let named = Link { aqm: m.scheduler, ..link.clone() };
            let spec = QdiscSpec::from_link(&named, &entries, service.mean_rate());
            (m, limit, spec)
        });
        let host_jitter = scenario.hosts.jitter.resolve(service_rate, PACKET_BYTES);
        Ok(PathPlan {
            requests,
            middlebox,
            seed: scenario.seed,
            service,
            limit,
            qdisc: QdiscSpec::from_link(link, &entries, service_rate),
            loss: link.loss,
            prop_delay: link.delay.ns(),
            host_jitter,
            host_stalls: scenario.hosts.stalls.resolve(host_jitter),
            prop_jitter: link.delay_jitter.ns(),
            reverse_service,
            reverse_limit,
            reverse_delay,
            base_rtt,
            flows,
            metrics,
        })
    }

    /// Every flow's description, in flow order.
    pub fn infos(&self) -> Vec<FlowInfo> {
        self.flows.iter().map(|f| f.info.clone()).collect()
    }

    /// The loss stage before the bottleneck, on its own random stream.
    pub fn loss_stage(&self) -> Loss {
        Loss::new(self.loss, self.loss_rng())
    }

    /// The random stream of the loss stage.
    pub fn loss_rng(&self) -> Rng {
        Rng::derive(self.seed, stream::LOSS)
    }

    /// The bottleneck, its delivery process on its own random stream.
    pub fn bottleneck<P: WirePacket>(&self) -> Bottleneck<P> {
        Bottleneck::new(
            self.service.clone(),
            self.limit,
            &self.qdisc,
            Rng::derive(self.seed, stream::LINK),
            Rng::derive(self.seed, stream::QUEUE),
        )
    }

    /// The bottleneck as a [`ScheduledFifo`] when it is one (drop-tail at a constant rate):
    /// an engine that can hand packets on ahead of time saves an event per departure.
    pub fn scheduled_fifo(&self) -> Option<ScheduledFifo> {
        match (&self.service, &self.qdisc) {
            (Service::Constant(rate), QdiscSpec::DropTail) => Some(ScheduledFifo::new(*rate, self.limit)),
            _ => None,
        }
    }

    /// The line from the bottleneck to the receivers: the propagation delay and its jitter, on
    /// the jitter's own random stream.
    pub fn prop_line<P>(&self) -> DelayLine<P> {
        DelayLine::with_jitter(self.prop_delay, Jitter::new(self.prop_jitter, Rng::derive(self.seed, stream::JITTER)))
    }

    /// The ACK direction's bottleneck, when it has a delivery process: ACKs of every flow
    /// share one drop-tail queue (unbounded unless `reverse.queue`) drained by it.
    pub fn reverse_bottleneck<P: WirePacket>(&self) -> Option<Bottleneck<P>> {
        self.reverse_service.clone().map(|service| {
            // Droptail draws nothing; the queue stream is named only for the signature.
            Bottleneck::new(
                service,
                self.reverse_limit,
                &QdiscSpec::DropTail,
                Rng::derive(self.seed, stream::REVERSE_LINK),
                Rng::derive(self.seed, stream::QUEUE),
            )
        })
    }

    /// The arrival process of request workload `i` (of [`PathPlan::requests`]), on its entry's
    /// own random streams (arrivals and sizes; the connection when all are busy).
    pub fn request_source(&self, i: usize) -> RequestSource {
        let plan = self.requests[i].clone();
        let rng = Rng::derive(self.seed, stream::REQUESTS + plan.spec as u64);
        let busy_rng = Rng::derive(self.seed, stream::REQUEST_CONNECTIONS + plan.spec as u64);
        RequestSource::new(plan, rng, busy_rng)
    }

    /// The `[middlebox]`'s inbox, if the scenario has one: its scheduler is the discipline of
    /// that name (as `link.aqm` names them) under the inbox's buffer.
    pub fn inbox<P: WirePacket>(&self) -> Option<Inbox<P>> {
        self.middlebox.as_ref().map(|(cfg, limit, spec)| {
            // The inbox's discipline draws (RED, PIE) from a stream of its own.
            Inbox::with_qdisc(Qdisc::new(spec, *limit, Rng::derive(self.seed, stream::INBOX_QUEUE)), cfg)
        })
    }

    /// Whether flow `id` is a connection of a request workload (its sender writes messages).
    pub fn carries_requests(&self, id: u32) -> bool {
        self.requests.iter().any(|r| r.connections.contains(&id))
    }

    /// Flow `id`'s line from its sender to the bottleneck: its host's processing jitter, then
    /// its access delay (half its extra RTT). Instant without either.
    pub fn access_line<P>(&self, id: u32) -> DelayLine<P> {
        let f = &self.flows[id as usize];
        let rng = Rng::derive(self.seed, stream::SEND_HOST + id as u64);
        DelayLine::with_jitter(
            f.access_delay.unwrap_or(0),
            Jitter::new(self.host_jitter, rng).with_stalls(self.host_stalls),
        )
    }

    /// Flow `id`'s ACK line from its receiver to the sender (or the reverse bottleneck): its
    /// receiving host's processing jitter, then the reverse delay and the rest of its extra RTT.
    pub fn ack_line<P>(&self, id: u32) -> DelayLine<P> {
        let f = &self.flows[id as usize];
        let rng = Rng::derive(self.seed, stream::RECV_HOST + id as u64);
        DelayLine::with_jitter(f.reverse_delay, Jitter::new(self.host_jitter, rng).with_stalls(self.host_stalls))
    }

    /// The random stream of flow `id`'s sender.
    pub fn flow_rng(&self, id: u32) -> Rng {
        Rng::derive(self.seed, stream::FLOW + id as u64)
    }

    /// Where flow `id`'s sending host's millisecond clock — its TCP timestamps' — ticks
    /// against the run's clock: a phase in [0, 1 ms), drawn from the seed. A host's clock is
    /// not aligned with a link's: in the emulator the kernel's ticks fall wherever they fall
    /// against the path thread's time zero, and which segments a receiving NIC may merge
    /// (equal timestamps) depends on it.
    pub fn ts_clock_phase(&self, id: u32) -> Time {
        Rng::derive(self.seed, stream::TS_CLOCK + id as u64).below(MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::units::Rate;

    fn plan(link: &str, reverse: &str) -> PathPlan {
        let text = format!("[link]\nrate = \"12Mbps\"\n{link}\n[reverse]\n{reverse}\n[[flows]]\nscheme = \"x\"\n");
        PathPlan::resolve(&Scenario::parse(&text, "t.toml").unwrap()).unwrap()
    }

    #[test]
    fn the_ack_direction_is_built_from_reverse_rate_and_queue() {
        // Both engines build the ACK bottleneck from these two fields (sim engine.rs, emu
        // run.rs), so this is where a reverse queue reaches them.
        let p = plan("", "");
        assert!(p.reverse_service.is_none() && p.reverse_bottleneck::<Probe>().is_none());
        let p = plan("", "rate = \"1Mbps\"");
        assert!(matches!(p.reverse_service, Some(Service::Constant(Rate(1_000_000)))));
        assert_eq!(p.reverse_limit, Limit::None, "unbounded unless `reverse.queue`");
        let p = plan("", "rate = \"1Mbps\"\nqueue = 1");
        assert_eq!(p.reverse_limit, Limit::Packets(1));
        let p = plan("", "rate = \"1Mbps\"\nqueue = \"520B\"");
        assert_eq!(p.reverse_limit, Limit::Bytes(520));
        let mut b = p.reverse_bottleneck::<Probe>().unwrap();
        let mut dropped = 0;
        for _ in 0..11 {
            b.enqueue(0, Probe, &mut |_| dropped += 1);
        }
        assert_eq!((b.len(), dropped), (10, 1), "ten 52-byte ACKs fill 520 bytes");
    }

    struct Probe;
    impl WirePacket for Probe {
        fn wire_size(&self) -> u64 {
            cclab_core::scenario::ACK_BYTES
        }
        fn flow(&self) -> u32 {
            0
        }
    }
}
