//! The list of congestion-control schemes a scenario may name, their options, and the code that
//! validates a `[[flows]]` entry and builds its controller.
//!
//! Every scheme is one [`Scheme`] value (kept next to its controller, e.g. `cubic::SCHEME`) and
//! one line in [`SCHEMES`]. The registry type-checks options generically from each scheme's
//! [`OptionInfo`] table; the scheme's `build` function only reads typed values and enforces the
//! rules that relate several options (e.g. `fixed` needs exactly one of `cwnd` and `rate`).

use crate::controller::CongestionControl;
use crate::{cubic, fixed, newreno};
use cclab_core::scenario::{did_you_mean, FlowSpec, Scenario, ScenarioErrors, Source, MSS};
use cclab_core::units::Rate;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;

pub mod external;

/// Every scheme the simulator can run. Adding a scheme is one line here (plus its module).
static SCHEMES: &[Scheme] = &[
    newreno::SCHEME,
    cubic::SCHEME,
    fixed::SCHEME,
    crate::vegas::SCHEME,
    crate::bbr::SCHEME,
    crate::copa::SCHEME,
    crate::ledbat::SCHEME,
    crate::pcc::ALLEGRO,
    crate::pcc::VIVACE,
    crate::sprout::SCHEME,
    crate::nimbus::SCHEME,
];

/// The keys of a `[[flows]]` entry that the scenario schema itself owns (`FlowSpec`'s fields);
/// everything else in the entry is a scheme option. Kept in step with `FlowSpec` by a test.
pub const GENERIC_FLOW_KEYS: &[&str] = &[
    "scheme",
    "count",
    "start",
    "every",
    "start_jitter",
    "stop",
    "leave",
    "extra_rtt",
    "traffic",
    "pacing",
    "delayed_ack",
    "min_rto",
    "rwnd",
    "bundle",
];

/// What `cclab schemes` shows about one scheme.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchemeInfo {
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
    pub options: &'static [OptionInfo],
}

/// One scheme-specific key of a `[[flows]]` entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptionInfo {
    pub name: &'static str,
    pub kind: OptionKind,
    /// `None` when the option has no default (it is optional, or required by a scheme rule).
    pub default: Option<OptValue>,
    pub help: &'static str,
}

/// The type and accepted range of an option.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionKind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        lo: Bound<f64>,
        hi: Bound<f64>,
    },
    /// A rate string with a unit, read by [`Rate::parse`].
    Rate,
    /// One of a fixed set of words, written as a string (e.g. copa's `mode = "auto"`).
    Choice(&'static [&'static str]),
}

/// A typed option value, after validation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Rate(Rate),
    Choice(&'static str),
}

/// What a scheme's `build` returns: its controller, or every problem with its options.
pub type BuildResult = Result<Box<dyn CongestionControl>, Vec<OptionError>>;

/// A registry entry: what is shown about a scheme, and how to build it from validated options.
pub struct Scheme {
    pub info: SchemeInfo,
    /// Builds the controller for a given MSS; errors name the offending option (or none, for a
    /// rule about the entry as a whole).
    pub build: fn(&Options, u64) -> BuildResult,
}

/// A problem with one option of a flow entry; `key` is empty when it concerns the whole entry.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionError {
    pub key: String,
    pub message: String,
}

impl OptionError {
    pub fn new(key: &str, message: impl Into<String>) -> OptionError {
        OptionError { key: key.to_string(), message: message.into() }
    }
}

/// A flow entry's scheme options, type-checked against the scheme's table, with defaults.
pub struct Options {
    spec: &'static [OptionInfo],
    values: BTreeMap<&'static str, OptValue>,
}

impl Options {
    /// An option's value (given, else its default), by name.
    pub fn get(&self, name: &str) -> Option<OptValue> {
        self.lookup(name)
    }

    /// The scheme's option table, in declaration order.
    pub fn spec(&self) -> &'static [OptionInfo] {
        self.spec
    }

    fn lookup(&self, name: &str) -> Option<OptValue> {
        debug_assert!(self.spec.iter().any(|o| o.name == name), "option `{name}` is not in this scheme's table");
        self.values.get(name).copied().or_else(|| self.spec.iter().find(|o| o.name == name).and_then(|o| o.default))
    }

    /// Whether the scenario gave this option (rather than leaving it to its default).
    pub fn is_set(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.lookup(name)? {
            OptValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        match self.lookup(name)? {
            OptValue::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        match self.lookup(name)? {
            OptValue::Float(x) => Some(x),
            OptValue::Int(i) => Some(i as f64),
            _ => None,
        }
    }

    pub fn rate(&self, name: &str) -> Option<Rate> {
        match self.lookup(name)? {
            OptValue::Rate(r) => Some(r),
            _ => None,
        }
    }

    pub fn choice(&self, name: &str) -> Option<&'static str> {
        match self.lookup(name)? {
            OptValue::Choice(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for OptionKind {
    /// Says what is accepted, for error messages and `cclab schemes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OptionKind::Bool => write!(f, "true or false"),
            OptionKind::Int { min, max } if max == i64::MAX => write!(f, "an integer ≥ {min}"),
            OptionKind::Int { min, max } => write!(f, "an integer from {min} to {max}"),
            OptionKind::Float { lo, hi } => match (lo, hi) {
                (Bound::Excluded(a), Bound::Unbounded) => write!(f, "a number > {a}"),
                (Bound::Included(a), Bound::Unbounded) => write!(f, "a number ≥ {a}"),
                (lo, hi) => {
                    let (open, a) = match lo {
                        Bound::Included(a) => ('[', a.to_string()),
                        Bound::Excluded(a) => ('(', a.to_string()),
                        Bound::Unbounded => ('(', "-inf".to_string()),
                    };
                    let (b, close) = match hi {
                        Bound::Included(b) => (b.to_string(), ']'),
                        Bound::Excluded(b) => (b.to_string(), ')'),
                        Bound::Unbounded => ("inf".to_string(), ')'),
                    };
                    write!(f, "a number in {open}{a}, {b}{close}")
                }
            },
            OptionKind::Rate => write!(f, "{}", Rate::ACCEPTED),
            OptionKind::Choice(words) => {
                let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
                write!(f, "one of {}", quoted.join(", "))
            }
        }
    }
}

impl fmt::Display for OptValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptValue::Bool(b) => write!(f, "{b}"),
            OptValue::Int(i) => write!(f, "{i}"),
            OptValue::Float(x) => write!(f, "{x}"),
            OptValue::Rate(r) => write!(f, "\"{r}\""),
            OptValue::Choice(c) => write!(f, "\"{c}\""),
        }
    }
}

/// A TOML value as the user wrote it, with its type, for "got ..." in error messages.
fn describe(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?} (a string)"),
        toml::Value::Integer(i) => format!("{i} (an integer)"),
        toml::Value::Float(x) => format!("{x} (a number)"),
        toml::Value::Boolean(b) => format!("{b} (a boolean)"),
        toml::Value::Datetime(d) => format!("{d} (a date-time)"),
        toml::Value::Array(_) => "an array".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    }
}

fn in_bounds(x: f64, lo: Bound<f64>, hi: Bound<f64>) -> bool {
    let above = match lo {
        Bound::Included(a) => x >= a,
        Bound::Excluded(a) => x > a,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => x <= b,
        Bound::Excluded(b) => x < b,
        Bound::Unbounded => true,
    };
    // NaN fails both comparisons; infinities are never a meaningful setting.
    above && below && x.is_finite()
}

/// Reads one option value, or says what would have been accepted.
fn parse_value(kind: OptionKind, v: &toml::Value) -> Result<OptValue, String> {
    let wrong = || format!("expected {kind}; got {}", describe(v));
    match (kind, v) {
        (OptionKind::Bool, toml::Value::Boolean(b)) => Ok(OptValue::Bool(*b)),
        (OptionKind::Bool, toml::Value::String(s)) if matches!(s.as_str(), "true" | "false") => {
            Err(format!("{}; write it without quotes", wrong()))
        }
        (OptionKind::Int { min, max }, toml::Value::Integer(i)) if (min..=max).contains(i) => Ok(OptValue::Int(*i)),
        (OptionKind::Float { lo, hi }, toml::Value::Integer(i)) if in_bounds(*i as f64, lo, hi) => {
            Ok(OptValue::Float(*i as f64))
        }
        (OptionKind::Float { lo, hi }, toml::Value::Float(x)) if in_bounds(*x, lo, hi) => Ok(OptValue::Float(*x)),
        (OptionKind::Int { .. } | OptionKind::Float { .. }, toml::Value::String(s))
            if s.trim().parse::<f64>().is_ok() =>
        {
            Err(format!("{}; write the number without quotes", wrong()))
        }
        (OptionKind::Rate, toml::Value::String(s)) => Rate::parse(s).map(OptValue::Rate),
        (OptionKind::Rate, toml::Value::Integer(_) | toml::Value::Float(_)) => {
            Err(format!("{}; a rate needs a unit, written as a string", wrong()))
        }
        (OptionKind::Choice(words), toml::Value::String(s)) => match words.iter().find(|w| **w == s.as_str()) {
            Some(w) => Ok(OptValue::Choice(w)),
            None => {
                let mut msg = wrong();
                if let Some(w) = did_you_mean(s, words) {
                    msg += &format!("; did you mean \"{w}\"?");
                }
                Err(msg)
            }
        },
        _ => Err(wrong()),
    }
}

fn find_builtin(name: &str) -> Option<&'static Scheme> {
    SCHEMES.iter().find(|s| s.info.name == name)
}

/// A scheme found by name: a built-in one, or one registered at run time.
enum Found {
    Builtin(&'static Scheme),
    External(external::External),
}

impl Found {
    fn info(&self) -> &SchemeInfo {
        match self {
            Found::Builtin(s) => &s.info,
            Found::External(e) => &e.info,
        }
    }

    fn build(&self, opts: &Options, mss: u64) -> BuildResult {
        match self {
            Found::Builtin(s) => (s.build)(opts, mss),
            Found::External(e) => (e.build)(opts, mss),
        }
    }
}

fn find(name: &str) -> Option<Found> {
    find_builtin(name).map(Found::Builtin).or_else(|| external::find(name).map(Found::External))
}

/// Every scheme, in the order `cclab schemes` lists them: the built-in ones, then those
/// registered at run time ([`external::register`]).
pub fn schemes() -> Vec<SchemeInfo> {
    SCHEMES.iter().map(|s| s.info).chain(external::infos()).collect()
}

fn scheme_names() -> Vec<&'static str> {
    schemes().iter().map(|s| s.name).collect()
}

/// The one scheme whose name has `word` as a dash-separated part (`vivace` → `pcc-vivace`):
/// an edit distance misses a dropped prefix.
fn contained_in(word: &str, names: &[&'static str]) -> Option<&'static str> {
    let mut hits = names.iter().filter(|n| n.split('-').any(|part| part.eq_ignore_ascii_case(word)));
    match (hits.next(), hits.next()) {
        (Some(n), None) => Some(n),
        _ => None,
    }
}

fn unknown_scheme_message(name: &str) -> String {
    let names = scheme_names();
    let mut msg = format!("unknown scheme `{name}`");
    if let Some((prefix, _)) = name.split_once(':').filter(|(p, _)| matches!(*p, "kernel" | "wrapper")) {
        // The emulator's own schemes: the simulator has no kernel or external program to run.
        msg += &format!(
            "; `{prefix}:` schemes run only in the emulator (`--engine emu` on the command line, \
             `engine=\"emu\"` in Python)."
        );
    } else if let Some(s) = did_you_mean(name, &names).or_else(|| contained_in(name, &names)) {
        msg += &format!("; did you mean `{s}`?");
    }
    msg += &format!(" Known schemes: {} (`cclab schemes` lists their options)", names.join(", "));
    msg
}

/// Type-checks every scheme option of a flow entry; collects all problems.
fn validate(scheme: &Found, raw: &BTreeMap<String, toml::Value>) -> Result<Options, Vec<OptionError>> {
    let spec = scheme.info().options;
    let mut values = BTreeMap::new();
    let mut errs = Vec::new();
    for (key, v) in raw {
        match spec.iter().find(|o| o.name == key) {
            Some(o) => match parse_value(o.kind, v) {
                Ok(x) => {
                    values.insert(o.name, x);
                }
                Err(e) => errs.push(OptionError::new(key, e)),
            },
            None => {
                let accepted: Vec<&str> =
                    GENERIC_FLOW_KEYS.iter().copied().chain(spec.iter().map(|o| o.name)).collect();
                let mut msg = format!("unknown key `{key}` for scheme `{}`", scheme.info().name);
                if let Some(s) = did_you_mean(key, &accepted) {
                    msg += &format!("; did you mean `{s}`?");
                }
                msg += &format!(" Accepted keys here: {}", accepted.join(", "));
                errs.push(OptionError::new(key, msg));
            }
        }
    }
    if errs.is_empty() {
        Ok(Options { spec, values })
    } else {
        Err(errs)
    }
}

/// Builds the controller of one flow entry, with `mss` payload bytes per full packet.
/// The error lists every problem, each prefixed by the option it concerns.
pub fn build(spec: &FlowSpec, mss: u64) -> Result<Box<dyn CongestionControl>, String> {
    let scheme = find(&spec.scheme).ok_or_else(|| unknown_scheme_message(&spec.scheme))?;
    let join = |errs: Vec<OptionError>| {
        errs.iter()
            .map(|e| if e.key.is_empty() { e.message.clone() } else { format!("`{}`: {}", e.key, e.message) })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let opts = validate(&scheme, &spec.options).map_err(join)?;
    scheme.build(&opts, mss).map_err(join)
}

/// A flow entry's validated options (for builders other than the controller's, such as a
/// scheme's receiver agent); errors as for [`build`].
pub(crate) fn options(spec: &FlowSpec) -> Result<Options, String> {
    let scheme = find(&spec.scheme).ok_or_else(|| unknown_scheme_message(&spec.scheme))?;
    validate(&scheme, &spec.options)
        .map_err(|errs| errs.iter().map(|e| format!("`{}`: {}", e.key, e.message)).collect::<Vec<_>>().join("; "))
}

/// Checks the scheme name and the scheme options of every `[[flows]]` entry, reporting every
/// problem found (not only the first), each located at `flows[i].<key>`.
pub fn check(scenario: &Scenario, src: &Source) -> Result<(), ScenarioErrors> {
    let mut errs = Vec::new();
    for (i, flow) in scenario.flows.iter().enumerate() {
        let Some(scheme) = find(&flow.scheme) else {
            errs.push(src.error(&format!("flows[{i}].scheme"), unknown_scheme_message(&flow.scheme)));
            continue;
        };
        let field = |key: &str| {
            if key.is_empty() {
                format!("flows[{i}]")
            } else {
                format!("flows[{i}].{key}")
            }
        };
        // Cross-option rules run only on well-typed options, so that one mistake is not
        // reported twice; building a controller is cheap and has no side effects.
        let problems = match validate(&scheme, &flow.options) {
            Ok(opts) => scheme.build(&opts, MSS).err().unwrap_or_default(),
            Err(e) => e,
        };
        let mut located: Vec<_> = problems.into_iter().map(|e| src.error(&field(&e.key), e.message)).collect();
        // In the order the user wrote them, not the options' alphabetical order.
        located.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
        errs.extend(located);
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ScenarioErrors(errs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "duration = \"10s\"\n[link]\nrate = \"10Mbps\"\ndelay = \"10ms\"\n";

    fn scenario(flows: &str) -> (String, Scenario) {
        let text = format!("{HEAD}{flows}");
        let s = Scenario::parse(&text, "test.toml").expect("structurally valid scenario");
        (text, s)
    }

    fn errors(flows: &str) -> Vec<cclab_core::ScenarioError> {
        let (text, s) = scenario(flows);
        match check(&s, &Source { file: "test.toml", text: &text }) {
            Ok(()) => Vec::new(),
            Err(e) => e.0,
        }
    }

    #[test]
    fn every_scheme_builds_with_defaults() {
        // The built-in ones: a test beside this one registers an external scheme meanwhile.
        for info in SCHEMES.iter().map(|s| s.info) {
            let (_, s) = scenario(&format!(
                "[[flows]]\nscheme = \"{}\"\n{}",
                info.name,
                match info.name {
                    "fixed" => "cwnd = 10\n",
                    _ => "",
                }
            ));
            let cc = build(&s.flows[0], MSS).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            assert_eq!(cc.name(), info.name);
            assert!(cc.cwnd() >= 2 * MSS);
        }
        let names: Vec<_> = SCHEMES.iter().map(|s| s.info.name).collect();
        assert_eq!(
            names,
            [
                "newreno",
                "cubic",
                "fixed",
                "vegas",
                "bbr",
                "copa",
                "ledbat",
                "pcc-allegro",
                "pcc-vivace",
                "sprout",
                "nimbus"
            ]
        );
    }

    #[test]
    fn valid_options_pass_and_take_effect() {
        let e = errors(
            "[[flows]]\nscheme = \"cubic\"\nbeta = 0.5\nc = 1\nhystart = false\n\
             [[flows]]\nscheme = \"newreno\"\ninit_cwnd = 4\n\
             [[flows]]\nscheme = \"fixed\"\nrate = \"12Mbps\"\n",
        );
        assert!(e.is_empty(), "{e:?}");
        let (_, s) = scenario("[[flows]]\nscheme = \"newreno\"\ninit_cwnd = 4\n");
        assert_eq!(build(&s.flows[0], 1000).unwrap().cwnd(), 4000);
    }

    #[test]
    fn unknown_scheme_is_located_with_suggestion_and_list() {
        let e = errors("[[flows]]\nscheme = \"cubc\"\n");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "flows[0].scheme");
        assert_eq!(e[0].line, Some(6));
        assert!(e[0].message.contains("did you mean `cubic`?"), "{}", e[0].message);
        assert!(e[0].message.contains("newreno, cubic, fixed"), "{}", e[0].message);
        // No suggestion for something unrelated, but still the list.
        // A dropped prefix is found too; the emulator's schemes say which engine runs them.
        let e = errors("[[flows]]\nscheme = \"vivace\"\n");
        assert!(e[0].message.contains("did you mean `pcc-vivace`?"), "{}", e[0].message);
        let e = errors("[[flows]]\nscheme = \"kernel:cubic\"\n");
        assert!(e[0].message.contains("run only in the emulator (`--engine emu`"), "{}", e[0].message);
        let e = errors("[[flows]]\nscheme = \"zzzzzzzz\"\n");
        assert!(!e[0].message.contains("did you mean"), "{}", e[0].message);
        assert!(e[0].message.contains("Known schemes"));
        let (_, s) = scenario("[[flows]]\nscheme = \"renoo\"\n");
        let err = build(&s.flows[0], MSS).err().expect("unknown scheme");
        assert!(err.contains("unknown scheme `renoo`"), "{err}");
    }

    #[test]
    fn unknown_option_suggests_scheme_and_generic_keys() {
        let e = errors("[[flows]]\nscheme = \"cubic\"\nhystat = true\n");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "flows[0].hystat");
        assert!(e[0].message.contains("did you mean `hystart`?"), "{}", e[0].message);
        assert!(e[0].message.contains("fast_convergence"), "{}", e[0].message);
        // A misspelt generic key ends up among the options; the suggestion must find it.
        let e = errors("[[flows]]\nscheme = \"newreno\"\ncout = 3\n");
        assert_eq!(e[0].field, "flows[0].cout");
        assert!(e[0].message.contains("did you mean `count`?"), "{}", e[0].message);
        // An option of another scheme is unknown here.
        let e = errors("[[flows]]\nscheme = \"newreno\"\nbeta = 0.5\n");
        assert_eq!(e[0].field, "flows[0].beta");
        assert!(e[0].message.contains("for scheme `newreno`"), "{}", e[0].message);
    }

    #[test]
    fn wrong_types_and_ranges_say_what_is_accepted() {
        let e = errors("[[flows]]\nscheme = \"cubic\"\nhystart = \"yes\"\nbeta = 1.5\nc = \"0.4\"\ninit_cwnd = 0\n");
        let by_field: BTreeMap<_, _> = e.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect();
        assert_eq!(by_field.len(), 4, "{e:?}");
        assert!(by_field["flows[0].hystart"].contains("expected true or false; got \"yes\" (a string)"));
        assert!(by_field["flows[0].beta"].contains("a number in (0, 1)"), "{}", by_field["flows[0].beta"]);
        assert!(by_field["flows[0].c"].contains("without quotes"), "{}", by_field["flows[0].c"]);
        assert!(by_field["flows[0].init_cwnd"].contains("an integer from 1"));
        let e = errors("[[flows]]\nscheme = \"fixed\"\nrate = 10\n");
        assert!(e[0].message.contains("needs a unit"), "{}", e[0].message);
        let e = errors("[[flows]]\nscheme = \"fixed\"\nrate = \"10 parsecs\"\n");
        assert!(e[0].message.contains("as a rate"), "{}", e[0].message);
        let e = errors("[[flows]]\nscheme = \"cubic\"\nc = nan\n");
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn choice_options_accept_their_words_and_suggest_on_typos() {
        let kind = OptionKind::Choice(&["auto", "default"]);
        assert_eq!(kind.to_string(), "one of \"auto\", \"default\"");
        let v = |s: &str| toml::Value::String(s.to_string());
        assert_eq!(parse_value(kind, &v("default")), Ok(OptValue::Choice("default")));
        let e = parse_value(kind, &v("defualt")).unwrap_err();
        assert!(e.contains("did you mean \"default\"?") && e.contains("one of"), "{e}");
        let e = parse_value(kind, &toml::Value::Boolean(true)).unwrap_err();
        assert!(e.contains("got true (a boolean)"), "{e}");
    }

    #[test]
    fn fixed_needs_exactly_one_of_cwnd_and_rate() {
        let e = errors("[[flows]]\nscheme = \"fixed\"\ncwnd = 10\nrate = \"1Mbps\"\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].field.starts_with("flows[0]"));
        assert!(e[0].message.contains("not both"), "{}", e[0].message);
        let e = errors("[[flows]]\nscheme = \"fixed\"\n");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "flows[0]");
        assert_eq!(e[0].line, Some(5));
        assert!(e[0].message.contains("`cwnd`") && e[0].message.contains("`rate`"), "{}", e[0].message);
        let (_, s) = scenario("[[flows]]\nscheme = \"fixed\"\n");
        assert!(build(&s.flows[0], MSS).is_err());
    }

    #[test]
    fn all_errors_of_all_entries_are_reported() {
        let e = errors(
            "[[flows]]\nscheme = \"cubic\"\nbeta = 2\nfoo = 1\n\
             [[flows]]\nscheme = \"vegass\"\n\
             [[flows]]\nscheme = \"fixed\"\n",
        );
        let fields: Vec<_> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["flows[0].beta", "flows[0].foo", "flows[1].scheme", "flows[2]"]);
        assert_eq!(e[2].line, Some(10));
        let e = errors("[[flows]]\nscheme = \"cubic\"\nzeta = 1\nbeta = 2\n");
        let fields: Vec<_> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["flows[0].zeta", "flows[0].beta"], "source order");
    }

    #[test]
    fn generic_keys_match_the_flow_schema() {
        // Serialising a flow with every optional field present lists exactly FlowSpec's own keys;
        // if this fails, FlowSpec changed and GENERIC_FLOW_KEYS must follow.
        let (_, mut s) = scenario("[[flows]]\nscheme = \"cubic\"\nstop = \"5s\"\nrwnd = \"1MB\"\n");
        s.flows[0].options.clear();
        let table = toml::Value::try_from(&s.flows[0]).expect("serialisable");
        let mut keys: Vec<&str> = table.as_table().unwrap().keys().map(|k| k.as_str()).collect();
        let mut want = GENERIC_FLOW_KEYS.to_vec();
        keys.sort();
        want.sort();
        assert_eq!(keys, want);
    }

    #[test]
    fn option_tables_are_consistent() {
        for s in SCHEMES {
            for o in s.info.options {
                assert!(!GENERIC_FLOW_KEYS.contains(&o.name), "{} shadows a flow key", o.name);
                if let Some(d) = o.default {
                    let ok = match (o.kind, d) {
                        (OptionKind::Bool, OptValue::Bool(_)) => true,
                        (OptionKind::Int { min, max }, OptValue::Int(i)) => (min..=max).contains(&i),
                        (OptionKind::Float { lo, hi }, OptValue::Float(x)) => in_bounds(x, lo, hi),
                        (OptionKind::Rate, OptValue::Rate(_)) => true,
                        (OptionKind::Choice(words), OptValue::Choice(c)) => words.contains(&c),
                        _ => false,
                    };
                    assert!(ok, "{}.{}: default {d} does not fit {}", s.info.name, o.name, o.kind);
                }
            }
        }
    }

    #[test]
    fn external_schemes_are_validated_listed_and_built_like_built_in_ones() {
        use std::sync::Arc;
        const OPTS: &[OptionInfo] = &[OptionInfo {
            name: "gain",
            kind: OptionKind::Int { min: 1, max: 8 },
            default: Some(OptValue::Int(2)),
            help: "",
        }];
        let make: external::ExternalBuild = Arc::new(|opts: &Options, mss: u64| {
            let gain = opts.int("gain").unwrap() as u64;
            Ok(Box::new(crate::fixed::Fixed::window(gain * mss)) as Box<dyn CongestionControl>)
        });
        assert!(external::register("cubic", "", OPTS.to_vec(), make.clone()).unwrap_err().contains("built-in"));
        assert!(external::register("a b", "", OPTS.to_vec(), make.clone()).is_err());
        external::register("ext-test", "a test scheme", OPTS.to_vec(), make).unwrap();
        assert!(schemes().iter().any(|s| s.name == "ext-test" && s.summary == "a test scheme"));
        assert!(errors("[[flows]]\nscheme = \"ext-test\"\ngain = 3\n").is_empty());
        let e = errors("[[flows]]\nscheme = \"ext-test\"\ngain = 9\ngian = 1\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].message.contains("from 1 to 8"), "{}", e[0].message);
        assert!(e[1].message.contains("did you mean `gain`?"), "{}", e[1].message);
        let (_, s) = scenario("[[flows]]\nscheme = \"ext-test\"\ngain = 3\n");
        assert_eq!(build(&s.flows[0], 1000).unwrap().cwnd(), 3000);
        assert!(external::unregister("ext-test"));
        assert!(errors("[[flows]]\nscheme = \"ext-test\"\n")[0].message.contains("unknown scheme"));
    }
}
