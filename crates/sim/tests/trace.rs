//! The sender trace (`--trace`): produced at the interval asked for, deterministic, free of any
//! effect on the run, and with values that say what the controllers do.
mod common;
use common::*;

use cclab_core::time::MS;
use cclab_sim::{CcTrace, RunOptions, RunOutput};

fn traced(s: &cclab_core::Scenario, interval: u64) -> (RunOutput, CcTrace) {
    let mut out = cclab_sim::run(s, &RunOptions { trace: Some(interval), ..Default::default() }, &mut |_| Ok(()))
        .unwrap_or_else(|e| panic!("{e}"));
    let trace = out.trace.take().expect("a run asked for a trace returns one");
    (out, trace)
}

fn lone(scheme: &str, rate: &str, delay: &str, queue: &str, duration: &str) -> cclab_core::Scenario {
    scenario(&format!(
        r#"
        duration = "{duration}"
        [link]
        rate = "{rate}"
        delay = "{delay}"
        queue = "{queue}"
        [[flows]]
        scheme = "{scheme}"
        "#
    ))
}

fn col(trace: &CcTrace, name: &str) -> Vec<f64> {
    trace.var(name).unwrap_or_else(|| panic!("no variable {name}; have {:?}", names(trace))).to_vec()
}

fn names(trace: &CcTrace) -> Vec<&'static str> {
    trace.vars.iter().map(|(n, _)| *n).collect()
}

#[test]
fn tracing_is_off_by_default_and_never_changes_the_run() {
    let s = scenario(
        r#"
        duration = "5s"
        [link]
        rate = "20Mbps"
        delay = "15ms"
        queue = "1bdp"
        [[flows]]
        scheme = "cubic"
        count = 2
        every = "1s"
        [[flows]]
        scheme = "bbr"
        "#,
    );
    let plain = run(&s, false);
    assert!(plain.trace.is_none());
    for interval in [0, 10 * MS] {
        let (out, trace) = traced(&s, interval);
        assert!(!trace.is_empty());
        // Sampling reads the senders; it must not move a single event.
        assert_eq!(format!("{:?}", out.metrics), format!("{:?}", plain.metrics), "interval {interval}");
        assert_eq!(out.stats.events, plain.stats.events);
    }
}

#[test]
fn the_trace_is_deterministic() {
    let s = lone("copa", "24Mbps", "20ms", "2bdp", "4s");
    let (_, a) = traced(&s, 10 * MS);
    let (_, b) = traced(&s, 10 * MS);
    // Debug strings, so that NaN cells compare equal to NaN cells.
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn samples_are_at_most_one_per_flow_and_interval() {
    let s = scenario(
        r#"
        duration = "6s"
        [link]
        rate = "50Mbps"
        delay = "10ms"
        queue = "1bdp"
        [[flows]]
        scheme = "newreno"
        count = 3
        "#,
    );
    let interval = 10 * MS;
    let (out, trace) = traced(&s, interval);
    let (_, every_ack) = traced(&s, 0);
    for f in 0..3u32 {
        let t: Vec<u64> = trace.rows_of(f).map(|i| trace.t[i]).collect();
        // Each sample opens its own interval of the grid: at most duration / interval of them.
        // A bulk flow gets ACKs in most 10 ms intervals, though not all: none in its first RTT
        // (20 ms), none while it waits for a retransmission timeout. At least half of them.
        assert!(t.windows(2).all(|w| w[1] / interval > w[0] / interval), "flow {f}: two samples in one interval");
        assert!(t.len() <= 600, "flow {f}: {} samples", t.len());
        assert!(t.len() > 300, "flow {f}: only {} samples in 6 s", t.len());
    }
    // Every ACK: one row per ACK the senders processed, far more than one per interval. Linux
    // acknowledges every second segment in order and compresses the ACKs of out-of-order data
    // (up to 44 per ACK, sack_compression), so each of a sender's recoveries drops the ratio
    // below one half, but not far below it.
    let acks = out.metrics.flows.iter().map(|f| f.packets_delivered).sum::<u64>();
    assert!(
        every_ack.len() as u64 > acks / 3 && every_ack.len() as u64 <= acks,
        "{} rows, {acks} packets",
        every_ack.len()
    );
    // ~1400 segments a second per flow, about one ACK per two: ~7 ACKs per 10 ms interval.
    assert!(every_ack.len() > 5 * trace.len(), "{} ACK rows, {} samples", every_ack.len(), trace.len());
}

#[test]
fn cubic_grows_its_window_in_slow_start_and_sees_the_base_rtt() {
    // 12 Mbit/s, 20 ms each way, 1 BDP: slow start doubles cwnd every RTT until the first loss.
    let s = lone("cubic", "12Mbps", "20ms", "1bdp", "10s");
    let (out, trace) = traced(&s, 0);
    let base_ms = out.flows[0].base_rtt as f64 / 1e6;
    let ss: Vec<usize> = (0..trace.len()).take_while(|&i| trace.mode[i] == "slow_start").collect();
    assert!(ss.len() > 20, "{} slow-start samples", ss.len());
    let cwnd: Vec<u64> = ss.iter().map(|&i| trace.cwnd[i]).collect();
    // RFC 5681 §3.1: in slow start cwnd grows by up to SMSS per ACK and never shrinks.
    assert!(cwnd.windows(2).all(|w| w[1] >= w[0]), "cwnd fell during slow start");
    // It grows at least to the BDP (12 Mbit/s × 40 ms = 60 kB, 4× the initial 10 packets):
    // HyStart leaves slow start only once the queue delays ACKs, i.e. past the BDP.
    assert!(
        *cwnd.last().unwrap() >= 60_000 && *cwnd.last().unwrap() >= 4 * cwnd[0],
        "cwnd {} -> {}",
        cwnd[0],
        cwnd.last().unwrap()
    );
    assert!(ss.iter().all(|&i| trace.ssthresh[i].is_infinite()), "ssthresh is unset before the first loss");
    // After the first loss: Cubic's own variables and a finite ssthresh.
    let later = ss.len()..trace.len();
    let w_max = col(&trace, "w_max");
    assert!(later.clone().any(|i| w_max[i] > 0.0 && trace.ssthresh[i].is_finite()));
    assert!(later.clone().any(|i| col(&trace, "k")[i] > 0.0));
    // min RTT: the base RTT plus one packet's transmission at the bottleneck (1500 B at 12 Mbit/s
    // = 1 ms) plus at most the hosts' processing jitter on the data packet and on its ACK
    // ([hosts] jitter; "auto" is one packet time, at most 20 µs) — nothing else stands in the way
    // of the first packet.
    let jitter_ms = cclab_engine::plan::PathPlan::resolve(&s).unwrap().host_jitter as f64 / 1e6;
    let min_rtt = trace.min_rtt_ms.iter().copied().filter(|x| x.is_finite()).fold(f64::INFINITY, f64::min);
    assert!(
        min_rtt >= base_ms && min_rtt <= base_ms + 1.01 + 2.0 * jitter_ms,
        "min RTT {min_rtt} ms, base {base_ms} ms, host jitter up to {jitter_ms} ms"
    );
    // srtt over the run: between the base RTT and base + the 1-BDP queue (40 ms) + a packet
    // + the hosts' jitter.
    let srtt: Vec<f64> = trace.srtt_ms.iter().copied().filter(|x| x.is_finite()).collect();
    assert!(srtt.iter().all(|&r| r >= base_ms && r <= 2.0 * base_ms + 2.0 + 2.0 * jitter_ms), "srtt out of range");
    // The delivery rate never exceeds the link (its samples are over at least a min RTT).
    let max_rate = trace.delivery_rate_mbps.iter().copied().filter(|x| x.is_finite()).fold(0.0, f64::max);
    assert!(max_rate > 9.0 && max_rate <= 12.0 * 1.02, "delivery rate up to {max_rate} Mbit/s");
}

#[test]
fn bbr_cycles_its_phases_and_its_min_rtt_is_the_base_rtt() {
    // BBR v1 (tcp_bbr.c): STARTUP, DRAIN, then PROBE_BW cycling the pacing gain through
    // 1.25, 0.75 and six 1s, one phase per min RTT; PROBE_RTT every 10 s.
    let s = lone("bbr", "50Mbps", "20ms", "5bdp", "12s");
    let (out, trace) = traced(&s, 10 * MS);
    let base_s = out.flows[0].base_rtt as f64 / 1e9;
    let modes: Vec<&str> = {
        let mut m = trace.mode.clone();
        m.dedup();
        m
    };
    assert_eq!(&modes[..3], ["startup", "drain", "probe_bw"], "{modes:?}");
    assert!(modes.contains(&"probe_rtt"), "no PROBE_RTT in 12 s: {modes:?}");
    let gain = col(&trace, "pacing_gain");
    let cycle = col(&trace, "cycle_idx");
    let in_probe_bw: Vec<usize> = (0..trace.len()).filter(|&i| trace.mode[i] == "probe_bw").collect();
    let mut seen: Vec<u64> = in_probe_bw.iter().map(|&i| cycle[i] as u64).collect();
    seen.sort_unstable();
    seen.dedup();
    // 40 ms phases sampled every 10 ms: every one of the 8 phases is seen.
    assert_eq!(seen, (0..8).collect::<Vec<_>>());
    for g in [1.25, 0.75, 1.0] {
        assert!(in_probe_bw.iter().any(|&i| gain[i] == g), "pacing gain {g} never seen");
    }
    // Its min RTT filter holds the base RTT plus at most two packets' transmission (0.48 ms):
    // one for the packet itself and, with Linux's delayed ACKs (the default), one more while
    // the receiver holds a lone packet's ACK for the next (measured 0.34 ms after PROBE_RTT).
    let min_rtt = col(&trace, "min_rtt");
    let last = min_rtt[trace.len() - 1];
    assert!(last >= base_s && last <= base_s + 0.0005, "BBR min_rtt {last} s, base {base_s} s");
    // Its bandwidth estimate is the link's rate (bytes/s of data; headers are on the link too).
    let bw = col(&trace, "bw");
    let late = bw[trace.len() - 1] * 8.0 / 1e6;
    assert!(late > 0.9 * 50.0 && late <= 50.0 * 1.01, "BBR bw {late} Mbit/s on a 50 Mbit/s link");
    // BBR paces: every sample has a pacing rate.
    assert!(trace.pacing_rate_mbps.iter().all(|r| r.is_finite() && *r > 0.0));
}

#[test]
fn copa_reports_its_mode_and_velocity() {
    let s = lone("copa", "24Mbps", "20ms", "2bdp", "5s");
    let (_, trace) = traced(&s, 10 * MS);
    assert!(trace.mode.iter().all(|m| *m == "default" || *m == "competitive"));
    let v = col(&trace, "velocity");
    assert!(v.iter().all(|x| x.is_finite() && *x >= 1.0), "Copa's velocity starts at 1 and only doubles");
    assert!(v.iter().any(|x| *x > 1.0), "velocity never rose above 1");
    assert!(names(&trace).contains(&"delta"));
}

#[test]
fn the_receive_window_and_the_time_it_alone_held_the_sender_back() {
    // 24 Mbit/s x 40 ms is a 120 KB BDP: Cubic held to a 32-segment window (46 KB) spends the
    // run waiting on it once slow start reaches it (~5 round trips); with Linux's default
    // window it never does.
    let held = scenario(
        r#"
        duration = "5s"
        [link]
        rate = "24Mbps"
        delay = "20ms"
        queue = "2bdp"
        [[flows]]
        scheme = "cubic"
        rwnd = "46336B"
        "#,
    );
    let (_, trace) = traced(&held, 10 * MS);
    assert!(trace.rwnd_bytes.iter().all(|&w| w == 46336.0));
    let limited = &trace.rwnd_limited_ms;
    assert!(limited.windows(2).all(|w| w[1] >= w[0]), "cumulative");
    let last = *limited.last().expect("samples");
    assert!((4300.0..5000.0).contains(&last), "rwnd-limited for {last} ms of 5 s");
    assert!(limited[0] < 1.0, "not in the first round trip: {}", limited[0]);

    let (_, free) = traced(&lone("cubic", "24Mbps", "20ms", "2bdp", "5s"), 10 * MS);
    let default = cclab_core::scenario::Transport::default().default_rwnd() as f64;
    assert!(free.rwnd_bytes.iter().all(|&w| w == default));
    assert!(free.rwnd_limited_ms.iter().all(|&t| t == 0.0));
}
