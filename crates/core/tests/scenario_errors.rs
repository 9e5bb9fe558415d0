//! Every way a scenario can be wrong gives an error naming the file, the field, the line and
//! what would be accepted.
use cclab_core::scenario::{Leave, Scenario, ScenarioErrors, OVERRIDES_FILE};
use cclab_core::{Dur, QueueSize, Rate};

const GOOD: &str = r#"name = "copa-fairness"
duration = "20s"
seed = 3

[link]
rate = "46Mbps"
delay = "10ms"
queue = "1bdp"

[[flows]]
scheme = "cubic"
count = 10
every = "1s"
leave = "lifo"
"#;

fn errors(text: &str) -> ScenarioErrors {
    Scenario::parse(text, "s.toml").expect_err("should be rejected")
}

fn one(text: &str) -> (String, Option<usize>, String) {
    let e = errors(text);
    assert_eq!(e.0.len(), 1, "{e}");
    let e = &e.0[0];
    assert_eq!(e.file, "s.toml");
    (e.field.clone(), e.line, e.message.clone())
}

#[test]
fn a_good_scenario_parses_and_expands() {
    let s = Scenario::parse(GOOD, "s.toml").unwrap();
    assert_eq!(s.link.rate, Some(Rate(46_000_000)));
    assert_eq!(s.link.queue, QueueSize::Bdp(1.0));
    assert_eq!(s.flows[0].leave, Leave::Lifo);
    let f = s.flow_instances();
    assert_eq!(f.len(), 10);
    // Copa's script: flow i starts at i s and leaves at 2N−1−i s.
    assert_eq!((f[0].start, f[0].stop), (Dur::from_millis(0), Dur::from_millis(19_000)));
    assert_eq!((f[9].start, f[9].stop), (Dur::from_millis(9_000), Dur::from_millis(10_000)));
    // The filled scenario reads back to the same thing.
    let again = Scenario::parse(&s.to_toml(), "filled.toml").unwrap();
    assert_eq!(again, s);
}

#[test]
fn unknown_keys_get_a_suggestion_and_a_line() {
    let (field, line, msg) = one(&GOOD.replace("rate = \"46Mbps\"", "rat = \"46Mbps\""));
    assert_eq!(field, "link.rat");
    assert_eq!(line, Some(6));
    assert!(msg.contains("unknown key `rat`") && msg.contains("did you mean `rate`?"), "{msg}");
    assert!(msg.contains("trace"), "lists what is accepted: {msg}");

    let (field, _, msg) = one(&GOOD.replace("seed = 3", "sed = 3"));
    assert_eq!(field, "sed");
    assert!(msg.contains("did you mean `seed`?"), "{msg}");
}

#[test]
fn bad_units_say_what_is_accepted() {
    let (field, line, msg) = one(&GOOD.replace("\"10ms\"", "\"10\""));
    assert_eq!((field.as_str(), line), ("link.delay", Some(7)));
    assert!(msg.contains("no unit") && msg.contains("10ms"), "{msg}");

    let (field, _, msg) = one(&GOOD.replace("\"46Mbps\"", "\"46MBs\""));
    assert_eq!(field, "link.rate");
    assert!(msg.contains("Mbps"), "{msg}");

    let (field, _, msg) = one(&GOOD.replace("\"1bdp\"", "\"lots\""));
    assert_eq!(field, "link.queue");
    assert!(msg.contains("bdp") && msg.contains("packets"), "{msg}");
}

#[test]
fn bad_enum_values_list_the_choices() {
    let (field, _, msg) = one(&GOOD.replace("leave = \"lifo\"", "leave = \"lifu\""));
    assert_eq!(field, "flows[0].leave");
    assert!(msg.contains("did you mean `lifo`?"), "{msg}");
    let text = GOOD.replace("queue = \"1bdp\"", "queue = \"1bdp\"\naqm = \"rde\"");
    let (field, _, msg) = one(&text);
    assert_eq!(field, "link.aqm");
    assert!(msg.contains("droptail"), "{msg}");
}

#[test]
fn syntax_errors_give_the_line() {
    let e = errors("duration = \"1s\"\n[link\nrate = 1");
    assert_eq!(e.0[0].line, Some(2), "{e}");
    assert!(e.to_string().starts_with("s.toml:2: not valid TOML"), "{e}");
}

#[test]
fn missing_sections_explain_what_to_add() {
    let (_, _, msg) = one("duration = \"1s\"\n[[flows]]\nscheme = \"cubic\"\n");
    assert!(msg.contains("[link]"), "{msg}");
    let (_, _, msg) = one("[link]\nrate = \"1Mbps\"\n");
    assert!(msg.contains("[[flows]]"), "{msg}");
}

#[test]
fn relations_between_fields_are_checked_together() {
    let text = r#"duration = "10s"
[link]
delay = "10ms"
loss = 1.5
[[flows]]
scheme = "cubic"
count = 0
[[flows]]
scheme = "cubic"
start = "12s"
[[flows]]
scheme = "cubic"
count = 10
every = "1s"
leave = "lifo"
"#;
    let e = errors(text);
    let fields: Vec<&str> = e.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["link", "link.loss", "flows[0].count", "flows[1].start", "flows[2].leave"], "{e}");
    // Located at the key where one is written.
    assert_eq!(e.0[1].line, Some(4));
    assert_eq!(e.0[3].line, Some(10));
    let both = GOOD.replace("rate = \"46Mbps\"", "rate = \"46Mbps\"\ntrace = \"x.trace\"");
    assert_eq!(one(&both).0, "link.trace");
    let poisson_trace = GOOD.replace("rate = \"46Mbps\"", "trace = \"x.trace\"\ndelivery = \"poisson\"");
    assert_eq!(one(&poisson_trace).0, "link.delivery");
    let stop_and_lifo = GOOD.replace("leave = \"lifo\"", "leave = \"lifo\"\nstop = \"15s\"");
    assert_eq!(one(&stop_and_lifo).0, "flows[0].stop");
    let lifo_no_gap = GOOD.replace("every = \"1s\"\n", "");
    assert_eq!(one(&lifo_no_gap).0, "flows[0].every");
}

#[test]
fn overrides_merge_before_validation() {
    let mut o = toml::Table::new();
    o.insert("link.rate".into(), toml::Value::String("12Mbps".into()));
    o.insert("seed".into(), toml::Value::Integer(9));
    let s = Scenario::parse_with(GOOD, "s.toml", &o).unwrap();
    assert_eq!((s.link.rate, s.seed), (Some(Rate(12_000_000)), 9));
    o.insert("link.delay".into(), toml::Value::String("soon".into()));
    let e = Scenario::parse_with(GOOD, "s.toml", &o).unwrap_err();
    assert_eq!(e.0[0].field, "link.delay");
}

/// `--set flows[0].scheme=bbr` (and the `flows.0.scheme` spelling Python's `flows__0__scheme`
/// becomes) reach into a list; an index past its end names the override and the list's size.
#[test]
fn overrides_index_lists_in_both_spellings() {
    let two = format!("{GOOD}\n[[flows]]\nscheme = \"bbr\"\n");
    for key in ["flows[1].scheme", "flows.1.scheme"] {
        let mut o = toml::Table::new();
        o.insert(key.into(), toml::Value::String("copa".into()));
        let s = Scenario::parse_with(&two, "s.toml", &o).unwrap();
        assert_eq!((s.flows[0].scheme.as_str(), s.flows[1].scheme.as_str()), ("cubic", "copa"), "{key}");
    }
    // A whole entry as a table merges into it: the other keys stay.
    let mut o = toml::Table::new();
    let mut entry = toml::Table::new();
    entry.insert("scheme".into(), toml::Value::String("copa".into()));
    o.insert("flows[0]".into(), toml::Value::Table(entry));
    let s = Scenario::parse_with(GOOD, "s.toml", &o).unwrap();
    assert_eq!((s.flows[0].scheme.as_str(), s.flows[0].count), ("copa", 10));

    let mut o = toml::Table::new();
    o.insert("flows[2].scheme".into(), toml::Value::String("bbr".into()));
    let e = Scenario::parse_with(&two, "s.toml", &o).unwrap_err();
    assert_eq!((e.0[0].file.as_str(), e.0[0].field.as_str()), (OVERRIDES_FILE, "flows[2].scheme"));
    assert!(e.0[0].message.contains("`flows` has 2 entries (indices 0 to 1); index 2 is out of range"), "{e}");
    for (key, says) in [
        ("link[0].rate", "`link` is not a list"),
        ("queues[0].x", "no `queues` list"),
        ("flows[x].scheme", "`[x]` is not a list index"),
        ("flows[0.scheme", "without its `]`"),
    ] {
        let mut o = toml::Table::new();
        o.insert(key.into(), toml::Value::Integer(1));
        let e = Scenario::parse_with(GOOD, "s.toml", &o).unwrap_err();
        assert!(e.0[0].message.contains(says), "{key}: {e}");
    }
}

/// An error about a value an override set names the override, not the line it replaced.
#[test]
fn errors_from_an_override_name_it_not_the_file() {
    let dir = std::env::temp_dir().join(format!("cclab-override-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, GOOD).unwrap();
    let mut o = toml::Table::new();
    o.insert("flows.0.leave".into(), toml::Value::String("sideways".into()));
    let e = Scenario::load_with(&path, &o).unwrap_err();
    assert_eq!((e.0[0].file.as_str(), e.0[0].field.as_str(), e.0[0].line), (OVERRIDES_FILE, "flows.0.leave", None));
    // Without the override the same kind of mistake points at the file's line.
    std::fs::write(&path, GOOD.replace("\"lifo\"", "\"sideways\"")).unwrap();
    let e = Scenario::load(&path).unwrap_err();
    assert_eq!((e.0[0].field.as_str(), e.0[0].line), ("flows[0].leave", Some(14)));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unreadable_file_is_a_clear_error() {
    let e = Scenario::load(std::path::Path::new("/nonexistent/x.toml")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/x.toml") && e.to_string().contains("cannot read"), "{e}");
}

#[test]
fn mahimahi_path_keys_parse_resolve_and_stay_out_of_the_filled_scenario_when_unset() {
    // Unset, neither key appears in the scenario as run (so old run directories read the same).
    let plain = Scenario::parse(GOOD, "s.toml").unwrap();
    assert_eq!((plain.link.reverse_trace.as_ref(), plain.link.delay_jitter), (None, Dur(0)));
    let filled = plain.to_toml();
    assert!(!filled.contains("reverse_trace") && !filled.contains("delay_jitter"), "{filled}");

    // A relative reverse trace resolves beside the scenario file, as `trace` does.
    let dir = std::env::temp_dir().join(format!("cclab-core-reverse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ack.trace"), "1\n").unwrap();
    let text =
        GOOD.replace("queue = \"1bdp\"", "queue = \"1bdp\"\nreverse_trace = \"ack.trace\"\ndelay_jitter = \"5ms\"");
    std::fs::write(dir.join("s.toml"), &text).unwrap();
    let s = Scenario::load(&dir.join("s.toml")).unwrap();
    assert_eq!(s.link.reverse_trace.as_deref(), Some(dir.join("ack.trace").as_path()));
    assert_eq!(s.link.delay_jitter, Dur(5_000_000));
    let again = Scenario::parse(&s.to_toml(), "filled.toml").unwrap();
    assert_eq!(again.link, s.link);
    std::fs::remove_dir_all(&dir).ok();

    // A misspelt key is suggested, and a jitter needs a unit like any delay.
    let (field, _, message) = one(&GOOD.replace("delay = ", "delay_jiter = \"1ms\"\ndelay = "));
    assert_eq!(field, "link.delay_jiter");
    assert!(message.contains("did you mean `delay_jitter`"), "{message}");
    let (field, _, message) = one(&GOOD.replace("delay = ", "delay_jitter = 5\ndelay = "));
    assert_eq!(field, "link.delay_jitter");
    assert!(message.contains("unit"), "{message}");
}
