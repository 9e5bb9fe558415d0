//! Congestion controllers behind one interface ([`CongestionControl`]), and the registry that
//! builds them from scenario files.
//!
//! Owns the algorithms and their options; a controller is pure (time and randomness are handed
//! in). Must not import: the transport, the engines or the bindings — only `cclab-core`.

pub mod agent;
pub mod bbr;
pub mod controller;
pub mod copa;
pub mod cubic;
pub mod elasticity;
pub mod filters;
pub mod fixed;
pub mod ledbat;
mod linux;
pub mod newreno;
pub mod nimbus;
pub mod pcc;
pub mod registry;
pub mod sprout;
pub mod types;
pub mod vegas;

#[cfg(test)]
mod testkit;

pub use controller::CongestionControl;
pub use cubic::{Cubic, CubicConfig};
pub use filters::WindowedFilter;
pub use fixed::Fixed;
pub use linux::GSO_MAX_SIZE;
pub use newreno::NewReno;
pub use registry::{OptValue, OptionInfo, OptionKind, SchemeInfo};
pub use types::*;
