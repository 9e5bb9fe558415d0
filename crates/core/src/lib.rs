//! cclab's shared core: scenario files, units, packet records, the metrics kernels that
//! both engines feed, and the result schema (`schema`: every result table's columns, declared
//! once, and their conversion to columns).

pub mod rng;
pub mod scenario;
pub mod time;
pub mod units;

pub use rng::Rng;
pub use scenario::{Scenario, ScenarioError, ScenarioErrors};
pub use time::Time;
pub use units::{Bytes, Dur, QueueSize, Rate};
pub mod metrics;
pub mod record;
pub mod schema;

pub use record::{Fate, PacketKind, PacketLog, PacketRecord, RecordSink, NEVER};
