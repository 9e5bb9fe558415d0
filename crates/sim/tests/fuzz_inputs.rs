//! Fuzzing of every parser a user's file reaches, on stable Rust inside `cargo test` (proptest):
//! the scenario loader (TOML → schema → relations → schemes → resource model), the mahimahi
//! trace parser and the request-size CDF parser. Inputs are mutations of the corpus in
//! `tests/fuzz/{scenario,trace,cdf}/` with the
//! values a hostile user types (1e999, -1, 99999999999999999999h, 1ns, 1000Tbps, 10^9 ...);
//! every file in `tests/fuzz/crashers/` (an input that once crashed a parser) is replayed first.
//!
//! The property: a parser returns `Ok` or an error that names the file; it never panics, never
//! aborts and never allocates what the input's numbers ask for. Cases per property:
//! `CCLAB_FUZZ_CASES` (default 2000, about a second; CI's `make test` runs the default). A failure
//! is shrunk by proptest and kept in `fuzz_inputs.proptest-regressions` beside this file:
//! commit it, and add the input to `tests/fuzz/crashers/` as well.

use cclab_core::cdf::{EmpiricalCdf, MAX_REQUEST_BYTES};
use cclab_engine::delivery::Trace;
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

const FILE: &str = "fuzzed.toml";

fn corpus(kind: &str) -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.clone(), String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned())).collect()
}

fn cases() -> u32 {
    std::env::var("CCLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

/// What a hostile user types where a value goes.
const HOSTILE: &[&str] = &[
    "1e999",
    "-1",
    "0",
    "\"\"",
    "\"99999999999999999999h\"",
    "\"1e300s\"",
    "\"1ns\"",
    "\"1000Tbps\"",
    "\"1Tbps\"",
    "\"-5ms\"",
    "\"nan\"",
    "\"inf\"",
    "1000000000",
    "18446744073709551615",
    "4294967295",
    "\"/dev/zero\"",
    "\"/\"",
    "true",
    "[]",
    "{}",
    "\"fixed\"",
    "0.9999999999",
    "\"1e20GB\"",
    "\"0.000001bdp\"",
    "\"1e9pkts\"",
];

/// One edit of a text: replace a value (after `=`), a whole line, or bytes.
#[derive(Clone, Debug)]
enum Edit {
    Value { line: usize, with: usize },
    DropLine(usize),
    DuplicateLine(usize),
    Bytes { at: usize, bytes: Vec<u8> },
    Truncate(usize),
    AddKey { line: usize, key: usize, with: usize },
}

const KEYS: &[&str] = &[
    "name",
    "duration",
    "seed",
    "rate",
    "cwnd",
    "count",
    "every",
    "start",
    "stop",
    "bin",
    "jain_bucket",
    "queue",
    "trace",
    "delivery",
    "loss",
    "rwnd",
    "bundle",
    "controller",
    "switching",
    "extra_rtt",
    "min_rto",
    "rto_max",
    "undo",
    "handshake",
    "tso",
    "pacing_credit",
    "prr",
    "tlp",
    "rmem_max",
    "recovery",
    "push_ack",
    "read_interval",
    "window_growth",
    "sack_compression",
    "gro",
    "jitter",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0..HOSTILE.len()).prop_map(|(line, with)| Edit::Value { line, with }),
        1 => any::<usize>().prop_map(Edit::DropLine),
        1 => any::<usize>().prop_map(Edit::DuplicateLine),
        2 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(at, bytes)| Edit::Bytes { at, bytes }),
        1 => any::<usize>().prop_map(Edit::Truncate),
        2 => (any::<usize>(), 0..KEYS.len(), 0..HOSTILE.len()).prop_map(|(line, key, with)| Edit::AddKey { line, key, with }),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for e in edits {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let n = lines.len();
        match e {
            Edit::Value { line, with } => {
                let l = &mut lines[line % n];
                if let Some((key, _)) = l.split_once('=') {
                    *l = format!("{key}= {}", HOSTILE[*with]);
                }
            }
            Edit::DropLine(i) => {
                lines.remove(i % n);
            }
            Edit::DuplicateLine(i) => {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
            Edit::Bytes { at, bytes } => {
                let l = &mut lines[at % n];
                let mut raw = std::mem::take(l).into_bytes();
                let pos = at % (raw.len() + 1);
                raw.splice(pos..pos, bytes.iter().copied());
                *l = String::from_utf8_lossy(&raw).into_owned();
            }
            Edit::Truncate(i) => lines.truncate(i % n),
            Edit::AddKey { line, key, with } => {
                lines.insert(line % (n + 1), format!("{} = {}", KEYS[*key], HOSTILE[*with]))
            }
        }
    }
    lines.join("\n")
}

/// Loads scenario text the way `cclab validate` does; panics (the test's failure) only when
/// the loader panics or returns an error that does not name the file.
fn check_scenario(text: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| cclab_sim::parse_scenario(text, FILE, &toml::Table::new())));
    match outcome {
        Err(_) => panic!("the scenario loader panicked on:\n{text}"),
        Ok(Ok(_)) => {}
        Ok(Err(errors)) => {
            assert!(!errors.0.is_empty(), "an empty error list for:\n{text}");
            for e in &errors.0 {
                assert!(e.to_string().starts_with(FILE) || e.file == cclab_core::scenario::resources::MAX_MEMORY_ENV);
                assert!(!e.message.is_empty());
                assert!(e.message.len() < 4000, "an error of {} bytes", e.message.len());
            }
        }
    }
}

fn check_trace(text: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(trace) = Trace::parse(text) {
            // A parsed trace must answer for any time, including far past its period.
            for t in [0, 1, 999_999, 1_000_000, u64::MAX / 4] {
                let (at, n) = trace.next_at_or_after(t);
                assert!(at >= t && n > 0);
            }
            let _ = trace.mean_rate();
        }
    }));
    assert!(outcome.is_ok(), "the trace parser panicked on:\n{text:?}");
}

/// A parsed CDF must have a mean the arrival process can use (≥ 1 byte, finite) and answer
/// every quantile with a size in range.
fn check_cdf(text: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| match EmpiricalCdf::parse(text, "fuzzed.cdf") {
        Ok(cdf) => {
            let mean = cdf.mean();
            assert!(mean.is_finite() && mean >= 1.0, "mean {mean} for:\n{text}");
            for u in [0.0, 1e-12, 0.5, 0.999_999, 1.0 - f64::EPSILON] {
                let q = cdf.quantile(u);
                assert!((0.0..=MAX_REQUEST_BYTES).contains(&q), "quantile({u}) = {q} for:\n{text}");
            }
        }
        Err(e) => assert!(e.starts_with("fuzzed.cdf"), "{e}"),
    }));
    assert!(outcome.is_ok(), "the CDF parser panicked on:\n{text:?}");
}

/// Trace and CDF lines have no `=`: value edits become whole hostile lines.
fn apply_to_lines(text: &str, edits: &[Edit]) -> String {
    apply(&text.lines().map(|l| format!("t={l}")).collect::<Vec<_>>().join("\n"), edits)
        .lines()
        .map(|l| l.split_once('=').map_or(l, |(_, v)| v).trim().trim_matches('"').to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_corpus_and_every_kept_crasher_load_without_panicking() {
    for (_, text) in corpus("scenario").iter().chain(&corpus("crashers")) {
        check_scenario(text);
    }
    for (_, text) in corpus("trace").iter().chain(&corpus("crashers")) {
        check_trace(text);
    }
    // The extremes the campaign found once, kept as regressions.
    for text in
        ["", "\0", "[link]\nrate = 1e999", "duration = \"99999999999999999999h\"", "[[flows]]\ncount = 4294967295"]
    {
        check_scenario(text);
    }
    for text in ["", "18446744073709551615", "1\n0", "-1", "1e3", "0\n0", "31622400000\n31622400001"] {
        check_trace(text);
    }
    for (_, text) in corpus("cdf").iter().chain(&corpus("crashers")) {
        check_cdf(text);
    }
    // The campaign's finds: empty requests (an endless arrival process), 1e30-byte requests.
    for text in ["0 0\n0 1", "0 0\n1e30 1", "0 1", "1 1", "0 0\n1e12 1"] {
        check_cdf(text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn mutated_scenarios_load_or_fail_cleanly(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let seeds = corpus("scenario");
        let (_, text) = &seeds[seed.index(seeds.len())];
        check_scenario(&apply(text, &edits));
    }

    #[test]
    fn mutated_traces_parse_or_fail_cleanly(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let seeds = corpus("trace");
        let (_, text) = &seeds[seed.index(seeds.len())];
        check_trace(&apply_to_lines(text, &edits));
    }

    #[test]
    fn mutated_cdfs_parse_or_fail_cleanly(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let seeds = corpus("cdf");
        let (_, text) = &seeds[seed.index(seeds.len())];
        check_cdf(&apply_to_lines(text, &edits));
    }

    #[test]
    fn arbitrary_numbers_in_cdfs(points in prop::collection::vec((any::<f64>(), any::<f64>()), 0..20)) {
        let text: Vec<String> = points.iter().map(|(s, p)| format!("{s} {p}")).collect();
        check_cdf(&text.join("\n"));
    }

    #[test]
    fn arbitrary_numbers_in_traces(times in prop::collection::vec(any::<u64>(), 0..50)) {
        let text: Vec<String> = times.iter().map(u64::to_string).collect();
        check_trace(&text.join("\n"));
    }
}
