//! cclab's shared core: scenario files, units, packet records, the metrics kernels that
//! both engines feed, and the result schema (`schema`: every result table's columns, declared
//! once, and their conversion to columns), time and its units (`time`), and the one RNG with its
//! stream numbering (`rng`).
//!
//! Must not import any other cclab crate: everything else builds on this one.

pub mod cctrace;
pub mod cdf;
pub mod hint;
pub mod input;
pub mod rng;
pub mod scenario;
pub mod time;
pub mod trim;
pub mod units;

pub use rng::Rng;
pub use scenario::{Scenario, ScenarioError, ScenarioErrors};
pub use time::Time;
pub use units::{Bytes, Dur, QueueSize, Rate};
pub mod metrics;
pub mod pcap;
pub mod pcapng;
pub mod record;
pub mod schema;

pub use record::{Fate, PacketKind, PacketLog, PacketRecord, RecordSink, NEVER};
