//! What every cclab engine shares. An engine is "drive these stages with this clock": the
//! simulator drives them from an event heap in virtual time, the emulator from a real-time loop
//! over TUN devices, and a third engine would bring only its own clock and packet source.
//!
//! Owns:
//! - the path resolved once from a scenario ([`plan::PathPlan`]): delays, loss, queue limit and
//!   discipline, delivery process, per-flow delays and base RTTs, the random streams;
//! - the path's stages, generic over the engine's packet type: the constant-delay line and
//!   i.i.d. loss ([`stage`]), the bottleneck ([`bottleneck::Bottleneck`]) made of a queue
//!   discipline ([`qdisc`]: which packet leaves, which is dropped) and a delivery process
//!   ([`delivery`]: when a packet can leave), and its closed form for drop-tail at a constant
//!   rate ([`scheduled_fifo`]: departures known at arrival, for an engine that can use them);
//! - the record fan-out ([`sinks::Sinks`]: one `emit` feeds the metrics, the packet log and the
//!   engine counters);
//! - the engine-neutral results ([`RunOutput`], [`FlowInfo`], [`EngineStats`], [`RunOptions`],
//!   [`CcTrace`]) and the `flows` and `stats` tables declared beside them ([`tables`]).
//!
//! Must not import: `cclab-sim`, `cclab-emu` or any other engine (engines depend on this crate,
//! never the reverse), nor the transport: what crosses the path is any [`stage::WirePacket`].

pub mod bottleneck;
pub mod delivery;
pub mod middlebox;
pub mod plan;
pub mod qdisc;
mod result;
pub mod scheduled_fifo;
pub mod sinks;
pub mod stage;
pub mod tables;
pub mod workload;

pub use result::{trace_sender, CcTrace, EngineStats, FlowInfo, RunOptions, RunOutput, Sample, Sampler, SenderView};
