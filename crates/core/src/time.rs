//! Time in cclab: integer nanoseconds since the start of the run, and its units.
//! Every crate reads these from here rather than writing its own `1_000_000`.

/// Nanoseconds since the start of the run.
pub type Time = u64;

pub const NS: Time = 1;
pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// The earlier of two optional deadlines (None: not armed).
#[inline]
pub fn earlier(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
