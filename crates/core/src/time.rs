//! Time in cclab: integer nanoseconds since the start of the run, and its units.
//! Every crate reads these from here rather than writing its own `1_000_000`.

/// Nanoseconds since the start of the run.
pub type Time = u64;

pub const NS: Time = 1;
pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// Linux's CONFIG_HZ for the kernel the simulator models: the tick its TCP timers' slack and
/// Cubic's clock count in. 250, as Debian's kernels are built and as the emulator's reference
/// kernel here is (6.18, `CONFIG_HZ=250` in /proc/config.gz); some distributions build 1000.
/// It is a build-time constant of the kernel, so a constant here.
pub const LINUX_HZ: u64 = 250;
/// One of Linux's jiffies at [`LINUX_HZ`]: 4 ms.
pub const JIFFY: Time = SEC / LINUX_HZ;

/// Linux's tcp_jiffies32 at `t`, as a time: the start of the jiffy `t` falls in.
pub fn jiffies(t: Time) -> Time {
    t / JIFFY * JIFFY
}

/// The earlier of two optional deadlines (None: not armed).
#[inline]
pub fn earlier(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
