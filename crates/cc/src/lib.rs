//! Congestion controllers behind one interface ([`CongestionControl`]), and the registry that
//! builds them from scenario files.

pub mod controller;
pub mod types;

pub use controller::CongestionControl;
pub use types::*;
