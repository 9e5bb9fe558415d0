//! Sprout (Winstein, Sivaraman and Balakrishnan, NSDI'13), as keithw/sprout implements it
//! (`src/sprout/receiver.cc`, `process.cc`, `processforecaster.cc`; `src/network/sproutconn.cc`;
//! the `sproutbt2` sender loop). Reference §12.
//!
//! The **receiver** ([`SproutAgent`]) models the link's packet deliveries as a Poisson process
//! whose rate λ does a Brownian walk (σ = 200 packets/s per √s) with a sticky outage state at
//! λ = 0 (left at 1/s). It keeps a 257-bin distribution over λ ∈ [0, 1000] packets/s and, every
//! 20 ms tick, diffuses it and multiplies in the Poisson likelihood of the packets that arrived
//! in the tick. Its forecast is, for each of the next 8 ticks, the 5th percentile of the
//! cumulative number of packets the link will deliver, and rides on the next ACK together with
//! the count of packets received or lost so far.
//!
//! The **sender** ([`Sprout`]) estimates its packets queued in the link as "sent − received or
//! lost" when a forecast arrives, drains that estimate by the forecast as ticks pass, and may
//! send `forecast(now + 100 ms) − forecast(now) − queue` packets: with 95% confidence, everything
//! it sends leaves the queue within the 100 ms target. When the window stays shut it still sends
//! one packet every 50 ms (`sproutbt2`'s fallback interval), so that feedback never stops.
//!
//! Constants are those of keithw/sprout master (`receiver.hh`: `MAX_ARRIVAL_RATE` 1000,
//! `BROWNIAN_MOTION_RATE` 200, `OUTAGE_ESCAPE_RATE` 1, `NUM_BINS` 256, `TICK_LENGTH` 20,
//! `MAX_ARRIVALS_PER_TICK` 30, `NUM_TICKS` 8), which are also the paper's. (Reference §12 quotes a
//! different snapshot — 2000/300/5/64 bins/10 ticks — that the mirrored repository's history
//! does not contain on master.)
//!
//! Deviations, each forced by the transport and documented where it happens: counts are in
//! MSS-sized packets on both sides (the code divides by 1400 at the receiver and multiplies by
//! 1440 at the sender); "received or lost" is the highest packet id received + 1 (our paths are
//! FIFO, so no reorder window is needed); the sender's per-packet `time_to_next` is not carried,
//! and the receiver assumes each packet may end a flight (see [`SproutAgent`]); a fallback packet
//! is a full packet, not an empty one.

use crate::agent::ReceiverAgent;
use crate::registry::{BuildResult, Options, Scheme, SchemeInfo};
use crate::types::*;

use cclab_core::time::MS;

// One file per part, as keithw/sprout splits them: the shared link model and forecast, the
// forecast's wire format, the receiver agent and the sender.
mod feedback;
mod forecast;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

pub use receiver::SproutAgent;
pub use sender::Sprout;

/// `MAX_ARRIVAL_RATE`, packets per second: the top of the rate grid.
const MAX_ARRIVAL_RATE: f64 = 1000.0;
/// `BROWNIAN_MOTION_RATE`: standard deviation of the rate's change over one second.
const BROWNIAN_MOTION_RATE: f64 = 200.0;
/// `OUTAGE_ESCAPE_RATE`: how fast (per second) the link leaves an outage.
const OUTAGE_ESCAPE_RATE: f64 = 1.0;
/// `NUM_BINS`: the grid has `NUM_BINS + 1` bins of width `MAX_ARRIVAL_RATE / NUM_BINS`.
const NUM_BINS: usize = 256;
/// `TICK_LENGTH`: 20 ms.
const TICK: Time = 20 * MS;
/// `MAX_ARRIVALS_PER_TICK`: per-tick count distributions are truncated at this many packets.
const MAX_ARRIVALS_PER_TICK: usize = 30;
/// `NUM_TICKS`: the forecast covers 8 ticks (160 ms).
const NUM_TICKS: usize = 8;
/// The forecast is the 5th percentile of cumulative deliveries (95% confidence).
const FORECAST_QUANTILE: f64 = 0.05;
/// `TARGET_DELAY_TICKS`: 5 ticks = the 100 ms delay target.
const TARGET_DELAY_TICKS: usize = 5;
/// `sproutbt2`'s `fallback_interval`: at least one packet every 50 ms, and the `time_to_next`
/// written on the last packet of a flight.
const FALLBACK_INTERVAL: Time = 50 * MS;
/// `SampledFunction`'s stand-in for ±infinity at the grid's ends.
const BIG: f64 = 1e6;
/// `GaussianCache` tabulates the normal CDF on `NUM_BINS · 128` bins over ±`MAX_ARRIVAL_RATE`.
const GAUSSIAN_BINS: usize = NUM_BINS * 128;

pub const SCHEME: Scheme = Scheme {
    info: SchemeInfo {
        name: "sprout",
        summary: "Sprout (NSDI'13): receiver forecasts cellular deliveries; sender targets 100 ms delay",
        options: &[],
    },
    build: build_from_options,
};

fn build_from_options(_opts: &Options, mss: u64) -> BuildResult {
    Ok(Box::new(Sprout::new(mss)))
}

/// The receiver-agent builder the agent registry uses.
pub fn build_agent(_opts: &Options, mss: u64) -> Box<dyn ReceiverAgent> {
    Box::new(SproutAgent::new(mss))
}
