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

/// The tick on which a Linux timer fires that expires on tick `expires`, `delta` ticks after
/// it was armed: the timer wheel (kernel/time/timer.c, calc_wheel_index and calc_index) files
/// a timer in the level whose range holds `delta` — under 63 ticks level 0, under 504 level 1,
/// under 4032 level 2, each level's buckets 8 times coarser — and rounds its expiry up past
/// that level's granularity ("The timer wheel has to guarantee that a timer does not fire
/// early ... Round up with level granularity"): one tick later at level 0, to the next
/// multiple of 8 ticks at level 1, of 64 at level 2.
pub fn wheel_fire_tick(expires: u64, delta: u64) -> u64 {
    // LVL_CLK_SHIFT = 3, LVL_SIZE = 64: LVL_START(n) = 63 << 3(n − 1); LVL_DEPTH levels (9 at
    // HZ = 250; the last one's range is days).
    let mut shift = 0;
    while shift < 3 * 8 && delta >= 63 << shift {
        shift += 3;
    }
    ((expires >> shift) + 1) << shift
}

/// When a Linux timer armed at `now` for `delay` fires: `delay` in whole jiffies (rounded up,
/// as usecs_to_jiffies does) after the jiffy `now` falls in, on the timer wheel's tick
/// ([`wheel_fire_tick`]).
pub fn linux_timer_fires(now: Time, delay: Time) -> Time {
    let delta = delay.div_ceil(JIFFY);
    wheel_fire_tick(now / JIFFY + delta, delta) * JIFFY
}

/// The earlier of two optional deadlines (None: not armed).
#[inline]
pub fn earlier(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_timers_fire_on_the_wheels_ticks() {
        // 40 ms from 1001 ms: ten jiffies from tick 250, level 0, fired a tick after expiry.
        assert_eq!(linux_timer_fires(1001 * MS, 40 * MS), 1044 * MS);
        // 300 ms: 75 jiffies, level 1 (8-jiffy buckets): expiry tick 325 fires on 328.
        assert_eq!(linux_timer_fires(1001 * MS, 300 * MS), 1312 * MS);
        // 3 s: 750 jiffies, level 2 (64-jiffy buckets): expiry tick 1000 fires on 1024.
        assert_eq!(linux_timer_fires(1001 * MS, 3 * SEC), 4096 * MS);
        // A part of a jiffy counts whole (usecs_to_jiffies rounds up).
        assert_eq!(linux_timer_fires(0, MS), 2 * JIFFY);
        assert_eq!(wheel_fire_tick(62, 62), 63, "the last tick of level 0");
        assert_eq!(wheel_fire_tick(63, 63), 64, "the first of level 1: the next multiple of 8");
        assert_eq!(wheel_fire_tick(64, 63), 72);
    }
}
