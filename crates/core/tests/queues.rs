//! The queue disciplines' scenario keys: `link.aqm` and the `[link.<discipline>]` tables.
use cclab_core::scenario::{Aqm, CodelParams, PrioBy, Scenario, ScenarioErrors};
use cclab_core::{Bytes, Dur, Rate};

fn with(link_extra: &str) -> String {
    format!(
        r#"duration = "10s"
[link]
rate = "12Mbps"
delay = "10ms"
{link_extra}
[[flows]]
scheme = "cubic"
count = 2
"#
    )
}

fn errors(text: &str) -> ScenarioErrors {
    Scenario::parse(text, "s.toml").expect_err("should be rejected")
}

#[test]
fn every_discipline_parses_with_its_defaults() {
    for (name, aqm) in
        [("codel", Aqm::Codel), ("fq_codel", Aqm::FqCodel), ("sfq", Aqm::Sfq), ("pie", Aqm::Pie), ("red", Aqm::Red)]
    {
        let s = Scenario::parse(&with(&format!("aqm = \"{name}\"")), "s.toml").unwrap();
        assert_eq!(s.link.aqm, aqm);
        assert_eq!(aqm.name(), name);
        // No table written: none serialised either, so run directories read back the same.
        assert!(!s.to_toml().contains(&format!("[link.{name}]")));
    }
}

#[test]
fn parameter_tables_parse() {
    let s = Scenario::parse(&with("aqm = \"codel\"\n[link.codel]\ntarget = \"10ms\""), "s.toml").unwrap();
    assert_eq!(s.link.codel, Some(CodelParams { target: Dur::from_millis(10), interval: Dur::from_millis(100) }));
    let s = Scenario::parse(&with("aqm = \"prio\"\n[link.prio]\nby = \"entry\"\nclasses = [1]"), "s.toml").unwrap();
    let p = s.link.prio.unwrap();
    assert_eq!((p.by, p.classes), (PrioBy::Entry, vec![1]));
    let s =
        Scenario::parse(&with("aqm = \"policer\"\n[link.token_bucket]\nrate = \"60Mbps\"\nburst = \"15KB\""), "s.toml")
            .unwrap();
    let tb = s.link.token_bucket.unwrap();
    assert_eq!((tb.rate, tb.burst), (Rate(60_000_000), Bytes(15_000)));
    // And back: a run directory's scenario.toml parses to the same scenario.
    assert_eq!(Scenario::parse(&s.to_toml(), "again.toml").unwrap(), s);
}

#[test]
fn a_table_for_another_discipline_is_an_error() {
    let e = errors(&with("aqm = \"codel\"\n[link.red]\nmax_p = 0.2"));
    assert_eq!(e.0.len(), 1, "{e}");
    assert_eq!(e.0[0].field, "link.red");
    assert!(e.0[0].message.contains("aqm = \"red\"") && e.0[0].message.contains("\"codel\""), "{e}");
    assert_eq!(e.0[0].line, Some(6));
}

#[test]
fn missing_or_bad_parameters_are_named() {
    let e = errors(&with("aqm = \"tbf\""));
    assert_eq!(e.0[0].field, "link.aqm");
    assert!(e.0[0].message.contains("[link.token_bucket]"), "{e}");
    let e = errors(&with("aqm = \"prio\""));
    assert!(e.0[0].message.contains("[link.prio]"), "{e}");
    let e = errors(&with("aqm = \"policer\"\n[link.token_bucket]\nrate = \"12Mbps\"\nburst = \"1000B\""));
    assert_eq!(e.0[0].field, "link.token_bucket.burst");
    let e = errors(&with("aqm = \"red\"\n[link.red]\nmin_th = 20\nmax_th = 10"));
    assert_eq!(e.0[0].field, "link.red.max_th");
    let e = errors(&with("aqm = \"codel\"\n[link.codel]\ntarget = \"0ms\""));
    assert_eq!(e.0[0].field, "link.codel.target");
    let e = errors(&with("aqm = \"prio\"\n[link.prio]\nclasses = [0, 1, 1]"));
    assert_eq!(e.0[0].field, "link.prio.classes");
    assert!(e.0[0].message.contains("3 classes given for 2 flows"), "{e}");
    let e = errors(&with("aqm = \"sfq\"\n[link.sfq]\nquantumm = 3000"));
    assert!(e.0[0].message.contains("did you mean `quantum`"), "{e}");
    let e = errors(&with("aqm = \"fq-codel\""));
    assert!(e.0[0].message.contains("did you mean `fq_codel`"), "{e}");
}
