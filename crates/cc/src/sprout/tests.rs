use super::feedback::*;
use super::forecast::*;
use super::*;
use crate::agent::ReceivedPacket;
use crate::controller::CongestionControl;

#[test]
fn erfc_matches_known_values() {
    // erfc(0) = 1, erfc(1) = 0.157299207050285, erfc(3) = 2.20904969985854e-5,
    // erfc(6) = 2.15197367124989e-17 (Abramowitz & Stegun tables / mpmath).
    assert!((erfc(0.0) - 1.0).abs() < 1e-15);
    assert!((erfc(1.0) - 0.157_299_207_050_285).abs() < 1e-14);
    assert!((erfc(3.0) - 2.209_049_699_858_54e-5).abs() < 1e-15);
    assert!((erfc(6.0) / 2.151_973_671_249_89e-17 - 1.0).abs() < 1e-9);
    assert!((erfc(-1.0) - (2.0 - 0.157_299_207_050_285)).abs() < 1e-14);
    assert!((normal_cdf(1.0, 1.0) - 0.841_344_746_068_543).abs() < 1e-14);
}

#[test]
fn grid_matches_sampled_function() {
    let g = Grid::new(NUM_BINS, MAX_ARRIVAL_RATE, 0.0);
    assert_eq!(g.size, 257);
    assert_eq!(g.width, 3.906_25);
    assert_eq!(g.mid(0, 0.0), 0.0, "bin 0 is the outage state");
    assert_eq!(g.mid(1, 0.0), 1.5 * 3.906_25);
    assert_eq!(g.floor(0, 0.0), -BIG);
    assert_eq!(g.ceil(256, 0.0), BIG);
    assert_eq!(g.to_bin(-5.0, 0.0), 0);
    assert_eq!(g.to_bin(5000.0, 0.0), 256);
}

#[test]
fn forecast_tables_are_distributions_and_cumulative() {
    let m = Model::get();
    let n = m.bins();
    // For a link certain to run at ~500 packets/s, one tick delivers ~10 packets: the 5th
    // percentile is a few below that, and the cumulative forecasts grow with the horizon.
    let mut pmf = vec![0.0; n];
    pmf[128] = 1.0;
    let counts = m.forecast(&pmf);
    let rate = m.mid[128];
    assert!((rate - 502.0).abs() < 1.0);
    assert!(counts[0] >= 3 && counts[0] <= 8, "{counts:?}");
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    // Deliveries over 8 ticks at 500/s would average 80; diffusion widens the spread, so the
    // 5th percentile is well below but far from zero.
    assert!(counts[7] > 40 && counts[7] < 80, "{counts:?}");
    // Each k-tick table sums to at most 1 per bin (per-tick truncation loses a little).
    for table in &m.forecast {
        let counts = table.len() / n;
        for b in [0, 1, 50, 128, 256] {
            let total: f64 = (0..counts).map(|c| table[c * n + b]).sum();
            assert!(total <= 1.0 + 1e-9 && total > 0.5, "bin {b}: {total}");
        }
    }
    // An outage forecasts nothing.
    let mut outage = vec![0.0; n];
    outage[0] = 1.0;
    assert_eq!(m.forecast(&outage), [0; NUM_TICKS]);
}

#[test]
fn evolve_diffuses_and_outages_are_sticky() {
    let m = Model::get();
    let mut pmf = vec![0.0; m.bins()];
    pmf[128] = 1.0;
    let out = m.evolve(&pmf);
    let mass: f64 = out.iter().sum();
    // The kernel is cut at ±5σ and read from a quantised CDF table, as in the reference.
    assert!((mass - 1.0).abs() < 1e-5, "mass {mass}");
    let mean: f64 = out.iter().zip(&m.mid).map(|(p, r)| p * r).sum();
    assert!((mean - m.mid[128]).abs() < 0.5, "no drift: {mean}");
    // From the outage state, ~98% of the mass stays (escape rate 1/s over 20 ms) weighted
    // by the half of the Gaussian kernel that stays below the first bin edge.
    pmf.fill(0.0);
    pmf[0] = 1.0;
    let out = m.evolve(&pmf);
    assert!(out[0] > 0.5 && out[0] < 0.56, "{}", out[0]);
}

#[test]
fn receiver_learns_a_rate_and_feedback_round_trips() {
    let mss = 1448;
    let mut a = SproutAgent::new(mss);
    // 10 packets per 20 ms tick (500 packets/s) for two seconds.
    let mut id = 0;
    for tick in 0..100u64 {
        for k in 0..10u64 {
            let now = tick * TICK + k * 2 * MS;
            a.on_data(now, &ReceivedPacket { id, bytes: mss, sent: now });
            id += 1;
        }
    }
    let fb = a.feedback(100 * TICK - MS).expect("a new tick's forecast");
    let counts = decode(&fb);
    assert_eq!(a.received_or_lost, 1000);
    assert!(counts[4] >= 30 && counts[4] <= 50, "100 ms at 500/s ≈ 50 packets, 5th pct: {counts:?}");
    assert!(a.feedback(100 * TICK - 1).is_none(), "one forecast per tick");
    // Silence: once the fallback interval has passed, empty ticks count and the forecast
    // collapses towards an outage.
    let later = 100 * TICK + 400 * MS;
    assert!(a.on_timer(later), "a changed forecast is worth a heartbeat");
    let quiet = decode(&a.feedback(later).unwrap());
    assert!(quiet[4] < counts[4] / 4, "{quiet:?} vs {counts:?}");
}

#[test]
fn only_sprout_has_a_receiver_agent() {
    assert!(crate::agent::has_agent("sprout"));
    assert!(!crate::agent::has_agent("cubic"));
}

#[test]
fn forecast_fits_six_bytes_as_per_tick_increments() {
    let counts = [3, 9, 15, 22, 29, 35, 42, 50];
    assert_eq!(decode(&encode(&counts)), counts);
    // An increment above 63 saturates (never met with 30 arrivals per tick at most).
    assert_eq!(decode(&encode(&[70, 70, 70, 70, 70, 70, 70, 70])), [63; NUM_TICKS]);
}

#[test]
fn sender_window_is_forecast_minus_queue() {
    let mut s = Sprout::new(1448);
    let mut rng = Rng::new(1);
    let mut ctx = CcContext { mss: 1448, rng: &mut rng };
    s.on_init(0, &RttStats::default(), &mut ctx);
    // A forecast of 10 packets per tick; 30 sent, 20 received or lost → 10 queued.
    for id in 0..30 {
        let pkt = SentPacket { id, bytes: 1448, send_time: 0, ..Default::default() };
        s.on_packet_sent(&pkt, &mut ctx);
    }
    let counts = [10, 20, 30, 40, 50, 60, 70, 80];
    s.on_feedback(MS, &Feedback { payload: encode(&counts), largest_received: 19 }, &mut ctx);
    assert_eq!(s.queue, 10);
    // 100 ms ahead: counts[5] − counts[0] = 50 deliverable, minus 10 queued.
    assert_eq!(s.window, 40);
    assert!(s.can_send(0, 1448));
    // One tick later the queue estimate drains by the first tick's count.
    s.on_timer(MS + TICK, &mut ctx);
    assert_eq!((s.tick, s.queue), (1, 0));
    assert_eq!(s.window, 50);
    assert_eq!(s.next_timer(), Some(MS + 2 * TICK));
}

#[test]
fn sender_falls_back_to_one_packet_per_50ms() {
    let mut s = Sprout::new(1448);
    let mut rng = Rng::new(1);
    let mut ctx = CcContext { mss: 1448, rng: &mut rng };
    s.on_init(0, &RttStats::default(), &mut ctx);
    s.on_feedback(0, &Feedback { payload: encode(&[0; NUM_TICKS]), largest_received: 0 }, &mut ctx);
    assert!(!s.can_send(0, 1448), "an outage forecast shuts the window");
    assert_eq!(s.next_timer(), Some(TICK));
    s.on_timer(FALLBACK_INTERVAL, &mut ctx);
    assert!(s.can_send(0, 1448), "the fallback packet");
    let pkt = SentPacket { id: 0, bytes: 1448, send_time: FALLBACK_INTERVAL, ..Default::default() };
    s.on_packet_sent(&pkt, &mut ctx);
    assert!(!s.can_send(0, 1448));
}
