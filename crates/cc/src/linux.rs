//! Window arithmetic shared by the controllers that follow Linux's packet-counted code.

use cclab_core::time::Time;

/// `sysctl_tcp_min_tso_segs` (net.ipv4.tcp_min_tso_segs, default 2): the fewest segments of a
/// TSO/GSO burst for a module without its own `min_tso_segs` (all but BBR).
pub(crate) const MIN_TSO_SEGS: u64 = 2;

/// `sk_gso_max_size` of an IPv4 socket on a device without BIG TCP: GSO_LEGACY_MAX_SIZE (64 KiB),
/// what the emulator's TUN and most NICs' drivers set.
pub const GSO_MAX_SIZE: u64 = 65_536;

/// `sk_pacing_rate` in bytes/s as `tcp_update_pacing_rate` (net/ipv4/tcp_input.c) sets it after
/// every ACK, for every socket, paced or not: `max(cwnd, packets_out)` segments per smoothed
/// RTT, times `tcp_pacing_ss_ratio` (200 %) while cwnd < ssthresh/2, else `tcp_pacing_ca_ratio`
/// (120 %). Window figures in packets. Without an RTT sample Linux leaves the product
/// undivided, a rate so high that nothing waits on it: `u64::MAX` here.
pub(crate) fn pacing_rate(mss: u64, cwnd: u64, packets_out: u64, ssthresh: u64, srtt: Time) -> u64 {
    let ratio = if cwnd < ssthresh / 2 { 200 } else { 120 };
    if srtt == 0 {
        return u64::MAX;
    }
    let bytes = u128::from(mss) * u128::from(cwnd.max(packets_out)) * ratio / 100;
    u64::try_from(bytes * u128::from(cclab_core::time::SEC) / u128::from(srtt)).unwrap_or(u64::MAX)
}

/// Linux `tcp_cong_avoid_ai`: grows `cwnd` (packets) by one per `w` acked packets, keeping the
/// remainder in `cwnd_cnt`. Credit accumulated under a larger `w` is applied gently: one
/// packet, then the count restarts.
pub(crate) fn cong_avoid_ai(cwnd: &mut u64, cwnd_cnt: &mut u64, w: u64, acked: u64) {
    let w = w.max(1);
    if *cwnd_cnt >= w {
        *cwnd_cnt = 0;
        *cwnd += 1;
    }
    *cwnd_cnt += acked;
    if *cwnd_cnt >= w {
        let delta = *cwnd_cnt / w;
        *cwnd_cnt -= delta * w;
        *cwnd += delta;
    }
}

/// Linux `tcp_cwnd_restart` (net/ipv4/tcp_output.c), which `tcp_slow_start_after_idle_check`
/// runs before the first send after an idle period longer than the retransmission timeout
/// (`net.ipv4.tcp_slow_start_after_idle = 1`, the default; RFC 2861 §2 / RFC 5681 §4.1):
/// ssthresh becomes `tcp_current_ssthresh` (the larger of itself and 3/4 of the window), and
/// the window is halved once for every `rto` of the idle time after the first, but not below
/// min(initial window, window). `rto` is the sender's current timeout (`icsk_rto`, what
/// decides whether the restart happens at all). Returns the new (window, ssthresh), in the
/// caller's units, or `None` when the sender was idle for no longer than `rto`.
pub(crate) fn cwnd_restart(cwnd: u64, ssthresh: u64, init_cwnd: u64, idle_for: Time, rto: Time) -> Option<(u64, u64)> {
    if rto == 0 || idle_for <= rto {
        return None;
    }
    let ssthresh = ssthresh.max((cwnd >> 1) + (cwnd >> 2));
    let restart = init_cwnd.min(cwnd);
    let mut window = cwnd;
    // `while ((delta -= icsk_rto) > 0 && cwnd > restart_cwnd) cwnd >>= 1;`
    let mut left = idle_for;
    while left > rto && window > restart {
        left -= rto;
        window >>= 1;
    }
    Some((window.max(restart), ssthresh))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_core::time::MS;

    /// tcp_cwnd_restart with a 300 ms RTO: no restart at or below one RTO; 1.5 RTOs halve once
    /// (the first subtraction leaves 150 ms > 0), 2.5 RTOs twice; never below min(IW, cwnd);
    /// ssthresh keeps the larger of itself and 3/4 of the window.
    /// 10 packets of 1448 B per 20 ms, doubled in slow start: 1.448 MB/s; 120 % once cwnd has
    /// reached half of ssthresh; packets out beyond the window count; no RTT: no limit.
    #[test]
    fn pacing_rate_follows_tcp_update_pacing_rate() {
        let ms = 1_000_000;
        assert_eq!(pacing_rate(1448, 10, 0, u64::MAX, 20 * ms), 1_448_000);
        assert_eq!(pacing_rate(1448, 10, 0, 20, 20 * ms), 868_800);
        assert_eq!(pacing_rate(1448, 10, 20, u64::MAX, 20 * ms), 2_896_000);
        assert_eq!(pacing_rate(1448, 10, 0, u64::MAX, 0), u64::MAX);
    }

    #[test]
    fn restart_halves_per_rto_of_idle_down_to_the_initial_window() {
        let rto = 300 * MS;
        assert_eq!(cwnd_restart(100, u64::MAX, 10, rto, rto), None);
        assert_eq!(cwnd_restart(100, u64::MAX, 10, 450 * MS, rto), Some((50, u64::MAX)));
        assert_eq!(cwnd_restart(100, 20, 10, 450 * MS, rto), Some((50, 75)));
        assert_eq!(cwnd_restart(100, 20, 10, 750 * MS, rto), Some((25, 75)));
        assert_eq!(cwnd_restart(100, 20, 10, 60_000 * MS, rto), Some((10, 75)));
        // A window already below the initial window stays (restart_cwnd = min(IW, cwnd)).
        assert_eq!(cwnd_restart(6, 4, 10, 60_000 * MS, rto), Some((6, 4)));
        // No RTO measured yet: nothing to compare the idle time with.
        assert_eq!(cwnd_restart(100, 20, 10, 60_000 * MS, 0), None);
    }
}
