//! The link models deliver what they promise, measured end to end through the metrics.
mod common;
use common::*;

/// A fixed window far above the BDP keeps the queue non-empty, so the link is never idle.
fn saturating(link: &str, secs: u32) -> String {
    format!(
        r#"
        duration = "{secs}s"
        [link]
        {link}
        delay = "10ms"
        queue = "infinite"
        [[flows]]
        scheme = "fixed"
        cwnd = 400
        "#
    )
}

#[test]
fn constant_link_delivers_exactly_its_rate() {
    let out = run(&scenario(&saturating(r#"rate = "12Mbps""#, 20)), false);
    assert_conserved(&out);
    let tput = out.metrics.total.throughput_mbps;
    // Back-to-back 1500-byte packets at 12 Mbit/s: one per ms exactly; the first-to-last
    // delivery span holds n−1 gaps for n packets, so the estimate is exact up to 1/n.
    assert!((tput - 12.0).abs() < 12.0 * 1e-3, "throughput {tput}");
    assert!((out.metrics.utilisation - 1.0).abs() < 2e-3, "utilisation {}", out.metrics.utilisation);
}

#[test]
fn poisson_link_averages_its_nominal_rate() {
    let out = run(
        &scenario(&saturating(
            r#"rate = "12Mbps"
        delivery = "poisson""#,
            60,
        )),
        false,
    );
    assert_conserved(&out);
    let tput = out.metrics.total.throughput_mbps;
    // 60 s at 1000 opportunities/s: 60 000 draws; the count's relative s.d. is
    // 1/sqrt(60000) ≈ 0.4%, so 2% is five sigmas.
    assert!((tput - 12.0).abs() < 12.0 * 0.02, "throughput {tput}");
}

#[test]
fn trace_link_matches_the_traces_rate() {
    for name in ["12mbps.trace", "TMobile-LTE-short.down"] {
        let path = test_data().join("traces").join(name);
        let trace = cclab_engine::delivery::Trace::load(&path).unwrap();
        let out = run(&scenario(&saturating(&format!("trace = {:?}", path.display().to_string()), 30)), false);
        assert_conserved(&out);
        let m = &out.metrics;
        // The link is saturated, so it carries every opportunity: throughput equals the trace's
        // capacity over the same span (exact count of opportunities), to within one packet.
        let t = &m.total;
        let span = (t.last_delivery - t.first_delivery) as f64 / 1e9;
        let cap = trace.capacity_bits(t.first_delivery, t.last_delivery) / 1e6 / span;
        assert!((t.throughput_mbps - cap).abs() < cap * 0.01, "{name}: {} vs {cap}", t.throughput_mbps);
        assert!(m.utilisation > 0.99, "{name}: utilisation {}", m.utilisation);
    }
}

#[test]
fn fixed_window_below_bdp_gets_w_over_rtt() {
    // 100 Mbit/s, 40 ms RTT: BDP ≈ 333 packets; W = 50 packets gives 50·1500·8/0.04 = 15 Mbit/s
    // (plus serialisation of one packet, 0.12 ms, in the RTT).
    let out = run(
        &scenario(
            r#"
            duration = "20s"
            [link]
            rate = "100Mbps"
            delay = "20ms"
            queue = "1bdp"
            [[flows]]
            scheme = "fixed"
            cwnd = 50
            "#,
        ),
        false,
    );
    assert_conserved(&out);
    let rtt = 0.040 + 1500.0 * 8.0 / 100e6;
    let expect = 50.0 * 1500.0 * 8.0 / rtt / 1e6;
    let got = out.metrics.total.throughput_mbps;
    assert!((got - expect).abs() < expect * 0.01, "{got} vs {expect}");
    assert_eq!(out.metrics.total.packets_dropped, 0);
}

#[test]
fn droptail_bounds_the_queue_and_random_loss_matches_p() {
    let out = run(
        &scenario(
            r#"
            duration = "30s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            queue = "20"
            loss = 0.05
            [[flows]]
            scheme = "fixed"
            cwnd = 200
            "#,
        ),
        true,
    );
    assert_conserved(&out);
    let log = out.packets.as_ref().unwrap();
    let mut random = 0u64;
    let mut offered = 0u64;
    let mut max_sojourn = 0u64;
    for i in 0..log.len() {
        let r = log.get(i);
        if r.kind != cclab_core::PacketKind::Data {
            continue;
        }
        offered += 1;
        random += u64::from(r.fate == cclab_core::Fate::DropLoss);
        if r.fate == cclab_core::Fate::Delivered {
            max_sojourn = max_sojourn.max(r.dequeued - r.enqueued);
        }
    }
    let p = random as f64 / offered as f64;
    // ~30 000 packets: s.d. of p̂ is sqrt(.05·.95/30000) ≈ 0.13%; allow 0.6%.
    assert!((p - 0.05).abs() < 0.006, "random loss {p}");
    // 20 packets in the queue, including the one in service, at 1 ms each.
    assert!(max_sojourn <= 20 * 1_000_000, "sojourn {max_sojourn}");
    assert!(max_sojourn >= 19 * 1_000_000, "the queue never filled: {max_sojourn}");
}

#[test]
fn receive_window_caps_bytes_in_flight() {
    // A window-unlimited flow held to rwnd = 100 packets on a 12 Mbit/s, 40 ms RTT path:
    // BDP = 40 packets, so 60 packets queue and the queueing delay is 60 ms.
    let out = run(
        &scenario(
            r#"
            duration = "20s"
            [link]
            rate = "12Mbps"
            delay = "20ms"
            queue = "infinite"
            [[flows]]
            scheme = "fixed"
            cwnd = 10000
            rwnd = "144800B"
            "#,
        ),
        false,
    );
    assert_conserved(&out);
    let q = out.metrics.total.queueing_p95_ms;
    assert!((q - 60.0).abs() < 2.0, "queueing p95 {q} ms");
    assert_eq!(out.metrics.total.packets_dropped, 0);
}

#[test]
fn acks_queue_behind_the_reverse_trace() {
    use cclab_core::record::{Fate, PacketKind};
    use cclab_core::time::MS;
    // One 1500-byte ACK opportunity every 50 ms carries about 29 ACKs: about 580 ACKs/s, fewer
    // than the 1000 data packets/s of the 12 Mbit/s data direction, so ACKs queue at the
    // reverse bottleneck.
    let reverse = trace_file("reverse", &[50]);
    let toml = |extra: &str| {
        format!(
            r#"
            duration = "10s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            queue = "infinite"
            {extra}
            [[flows]]
            scheme = "fixed"
            cwnd = 400
            delayed_ack = false # the ACK-clock limit below assumes one ACK per data packet
            "#
        )
    };
    let with = run(&scenario(&toml(&format!("reverse_trace = {:?}", reverse.display().to_string()))), true);
    let without = run(&scenario(&toml("")), true);
    assert_conserved(&with);

    let log = with.packets.as_ref().unwrap();
    let mut per_opportunity: std::collections::BTreeMap<u64, u64> = Default::default();
    for i in 0..log.len() {
        if log.kind[i] != PacketKind::Ack as u8 || log.fate[i] != Fate::Delivered as u8 {
            continue;
        }
        // The reverse delay comes before the reverse bottleneck, so an ACK reaches the sender
        // exactly at one of the trace's opportunities, having queued there.
        assert_eq!(log.arrived[i] % (50 * MS), 0, "ACK arrived off the trace at {}", log.arrived[i]);
        assert!(log.dequeued[i] == log.arrived[i] && log.enqueued[i] <= log.dequeued[i]);
        *per_opportunity.entry(log.arrived[i]).or_default() += log.size[i] as u64;
    }
    // Each opportunity carries 1500 bytes of ACKs (an ACK cut by its end finishes at the next
    // one, so a single opportunity may complete one more); the queue keeps them used to the full.
    let ack_bytes = log.size[(0..log.len()).find(|&i| log.kind[i] == PacketKind::Ack as u8).unwrap()] as f64;
    assert!(per_opportunity.values().all(|&b| b as f64 <= 1500.0 + ack_bytes));
    let (first, last) = (per_opportunity.keys().next().unwrap(), per_opportunity.keys().last().unwrap());
    let opportunities = (last - first) / (50 * MS) + 1;
    let carried: u64 = per_opportunity.values().sum();
    assert!(carried as f64 <= opportunities as f64 * 1500.0 + ack_bytes);
    assert!(carried as f64 >= opportunities as f64 * 1500.0 * 0.95, "{carried} over {opportunities}");
    // ACK capacity, not the data link, limits the flow: each ACK clocks out one data packet.
    let acks_per_s = 1500.0 / ack_bytes / 0.050;
    let limit_mbps = acks_per_s * 1500.0 * 8.0 / 1e6;
    // Measured after the first window (400 packets sent before any ACK) has been delivered.
    let steady: u64 = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .filter(|&i| log.arrived[i] >= 2000 * MS)
        .map(|i| log.size[i] as u64)
        .sum();
    let tw = steady as f64 * 8.0 / 8.0 / 1e6;
    let to = without.metrics.total.throughput_mbps;
    println!("throughput {tw:.2} Mbit/s with the reverse trace (ACK-clock limit {limit_mbps:.2}), {to:.2} without");
    assert!(to > 11.9, "{to}");
    assert!((tw - limit_mbps).abs() < 0.03 * limit_mbps, "{tw} vs {limit_mbps}");
}

#[test]
fn delay_jitter_spreads_one_way_delay_without_reordering() {
    use cclab_core::record::{Fate, PacketKind};
    use cclab_core::time::MS;
    // A fixed window of one packet per RTT on an idle link: each packet's one-way delay is the
    // serialisation time plus 20 ms plus its jitter, drawn uniform in [0, 8 ms].
    let toml = |jitter: &str| {
        format!(
            r#"
            duration = "60s"
            [link]
            rate = "100Mbps"
            delay = "20ms"
            {jitter}
            [[flows]]
            scheme = "fixed"
            cwnd = 1
            delayed_ack = false # one packet per RTT: a delayed ACK would hold each for the ATO
            [hosts]
            jitter = "0" # only the link's jitter: a constant path has one delay
            [transport]
            handshake = false # its final ACK, ahead of the first packet, would delay that one
            "#
        )
    };
    let one_way = |out: &cclab_sim::RunOutput| -> Vec<u64> {
        let log = out.packets.as_ref().unwrap();
        (0..log.len())
            .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
            .map(|i| log.arrived[i] - log.sent[i])
            .collect()
    };
    let base = one_way(&run(&scenario(&toml("")), true));
    let min = *base.iter().min().unwrap();
    assert!(base.iter().all(|&d| d == min), "a constant path has one delay");
    let out = run(&scenario(&toml(r#"delay_jitter = "8ms""#)), true);
    assert_conserved(&out);
    let mut extra: Vec<f64> = one_way(&out).iter().map(|&d| (d - min) as f64 / MS as f64).collect();
    let n = extra.len();
    assert!(n > 1000, "{n}");
    assert!(extra.iter().all(|&e| (0.0..=8.0).contains(&e)));
    extra.sort_by(f64::total_cmp);
    for k in 1..10 {
        let q = extra[n * k / 10];
        // Deciles of Uniform[0, 8 ms], within sampling tolerance (about 0.1 ms for n ≈ 2000).
        assert!((q - 0.8 * k as f64).abs() < 0.35, "decile {k}: {q:.3} ms");
    }
    // In order: the receiver never saw a later-sent packet first.
    let log = out.packets.as_ref().unwrap();
    let mut data: Vec<(u64, u64)> = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .map(|i| (log.sent[i], log.arrived[i]))
        .collect();
    data.sort();
    assert!(data.windows(2).all(|w| w[0].1 <= w[1].1));
}

#[test]
fn delay_jitter_keeps_a_saturated_flow_in_order() {
    use cclab_core::record::{Fate, PacketKind};
    // Back-to-back packets 1 ms apart, jitter up to 5 ms: without the no-reordering rule most
    // would overtake each other.
    let out = run(&scenario(&saturating("rate = \"12Mbps\"\n        delay_jitter = \"5ms\"", 10)), true);
    assert_conserved(&out);
    let log = out.packets.as_ref().unwrap();
    let mut data: Vec<(u64, u64)> = (0..log.len())
        .filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8)
        .map(|i| (log.dequeued[i], log.arrived[i]))
        .collect();
    data.sort();
    assert!(data.windows(2).all(|w| w[0].1 <= w[1].1));
    assert!(out.metrics.total.throughput_mbps > 11.9);
}

#[test]
fn an_unreadable_reverse_trace_names_its_key() {
    // Validation reads every file a run would (issue 16), so the error comes before any run.
    let text = saturating("rate = \"12Mbps\"\n        reverse_trace = \"/nonexistent/ack.trace\"", 1);
    let e = cclab_sim::parse_scenario(&text, "test.toml", &toml::Table::new()).unwrap_err();
    assert!(e.to_string().contains("link.reverse_trace"), "{e}");
}

#[test]
fn a_bounded_reverse_queue_drops_acks() {
    use cclab_core::record::{Fate, PacketKind};
    // A 200 kbit/s ACK link serialises a 52-byte ACK in 2.08 ms: about 480 ACKs/s against the
    // 1000 data packets/s the 12 Mbit/s data direction sends, so ACKs pile up behind it.
    let toml = |queue: &str| {
        format!(
            r#"
            duration = "5s"
            [link]
            rate = "12Mbps"
            delay = "10ms"
            [reverse]
            rate = "200kbps"
            {queue}
            [[flows]]
            scheme = "fixed"
            cwnd = 50
            "#
        )
    };
    let acks = |out: &cclab_sim::RunOutput, fate: Fate| {
        let log = out.packets.as_ref().unwrap();
        (0..log.len())
            .filter(|&i| log.kind[i] == PacketKind::Ack as u8 && log.fate[i] == fate as u8)
            .map(|i| (log.enqueued[i], log.dequeued[i]))
            .collect::<Vec<_>>()
    };
    let unbounded = run(&scenario(&toml("")), true);
    assert_conserved(&unbounded);
    assert!(acks(&unbounded, Fate::DropQueue).is_empty(), "an unbounded queue drops nothing");
    let bounded = run(&scenario(&toml("queue = 1")), true);
    assert_conserved(&bounded);
    let dropped = acks(&bounded, Fate::DropQueue);
    let mut delivered = acks(&bounded, Fate::Delivered);
    assert!(dropped.len() > 100, "{} ACKs dropped", dropped.len());
    // A 1-packet drop-tail queue counts the ACK in service (as the data direction's, and as
    // mahimahi's `packets=1`): one ACK at a time in the reverse bottleneck, each served for
    // exactly its 2.08 ms.
    delivered.sort();
    assert!(delivered.windows(2).all(|w| w[1].0 >= w[0].1), "two ACKs overlapped in a 1-packet queue");
    assert!(delivered.iter().all(|(e, d)| d - e == 2_080_000), "every ACK finds the link idle");
}

#[test]
fn the_policer_preset_lets_one_packet_through_each_millisecond() {
    use cclab_core::record::{Fate, PacketKind};
    use cclab_core::time::MS;
    // The Pantheon's 60 Mbit/s "token-bucket policer": five 1500-byte opportunities at each
    // ms, but mahimahi's `packets=1` queue holds one packet between them, and unused
    // opportunities are lost (mahimahi link_queue.cc), so at most one data packet leaves per
    // millisecond: 12 Mbit/s however fast the trace.
    let text = r#"
        duration = "5s"
        [link]
        preset = "pantheon:policer-60mbps-20ms"
        [[flows]]
        scheme = "fixed"
        cwnd = 40
        "#;
    let out = run(&scenario(text), true);
    assert_conserved(&out);
    let log = out.packets.as_ref().unwrap();
    let mut per_ms: std::collections::BTreeMap<u64, u32> = Default::default();
    for i in 0..log.len() {
        if log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::Delivered as u8 {
            assert_eq!(log.dequeued[i] % MS, 0, "a data packet left off the trace's millisecond");
            *per_ms.entry(log.dequeued[i]).or_default() += 1;
        }
    }
    assert!(per_ms.values().all(|&n| n == 1), "more than one packet in one millisecond");
    let tput = out.metrics.total.throughput_mbps;
    assert!(tput <= 12.0 + 1e-6, "{tput}");
    // The first window (40 packets sent at once) overflows the 1-packet data queue.
    let data_drops =
        (0..log.len()).filter(|&i| log.kind[i] == PacketKind::Data as u8 && log.fate[i] == Fate::DropQueue as u8);
    // The 1-packet queue (its packet in service counted) holds one of them.
    assert!(data_drops.count() >= 39);
}

#[test]
fn records_carry_tcp_sequence_and_acknowledgment_numbers() {
    use cclab_core::record::{Fate, PacketKind};
    // A lossy path, so that some data is retransmitted: the record's `seq` is the stream
    // offset of a data packet and the cumulative acknowledgment of an ACK (what a capture's
    // TCP header shows, RFC 9293 §3.4).
    let text = r#"
        duration = "3s"
        [link]
        rate = "12Mbps"
        delay = "10ms"
        queue = 20
        loss = 0.01
        [[flows]]
        scheme = "cubic"
        "#;
    let out = run(&scenario(text), true);
    let log = out.packets.as_ref().unwrap();
    let mss = cclab_core::scenario::MSS as u32;
    let mut first_sent = std::collections::BTreeSet::new();
    let mut max_ack = 0;
    let mut acks: Vec<(u64, u32)> = vec![];
    let mut rows: Vec<usize> = (0..log.len()).collect();
    rows.sort_by_key(|&i| log.sent[i]);
    for i in rows {
        if log.kind[i] == PacketKind::Data as u8 {
            // Full-sized segments at multiples of the MSS (a bulk sender never sends less).
            assert_eq!(log.seq[i] % mss, 0);
            if log.retransmission[i] {
                assert!(first_sent.contains(&log.seq[i]), "a retransmission of bytes never sent");
            } else {
                assert!(first_sent.insert(log.seq[i]), "new data at an offset already sent");
            }
        } else if log.fate[i] == Fate::Delivered as u8 {
            acks.push((log.arrived[i], log.seq[i]));
            max_ack = max_ack.max(log.seq[i]);
        }
    }
    // Cumulative ACKs never go back, and the last covers (at most) everything sent.
    acks.sort();
    assert!(acks.windows(2).all(|w| w[0].1 <= w[1].1));
    let sent_end = first_sent.iter().max().unwrap() + mss;
    assert!(max_ack <= sent_end && max_ack > sent_end / 2, "{max_ack} of {sent_end}");
    assert!(log.retransmission.iter().any(|&r| r), "the path should have lost something");
}
