//! Congestion controllers written in Python: `cclab.register_scheme(name, cls, ...)` registers a
//! `cclab.Controller` subclass in the scheme registry (`cclab_cc::registry::external`), and
//! [`PyController`] adapts one instance to the Rust `CongestionControl` trait, so the simulator
//! drives it through the same transport as every built-in scheme: one Python call per ACK (and
//! per congestion event, timer, RTO, ...), never one per packet sent.
//!
//! The controller's decisions are attributes the adapter reads back after each hook, so the
//! transport's frequent questions (`cwnd`, `can_send`, `pacing_rate`, `in_slow_start`,
//! `next_timer`) cost no Python call: `cwnd` (bytes), `pacing_rate` (bytes/s or None),
//! `ssthresh` (bytes or None), `slow_start` (bool) and `next_timer` (ns or None).
//!
//! A Python exception in a hook cannot cross the trait (its methods return nothing): the
//! adapter parks it ([`take_error`]), stops calling that controller, and the run's progress
//! hook stops the run and re-raises it.

use cclab_cc::controller::CongestionControl;
use cclab_cc::registry::external::{self, ExternalBuild};
use cclab_cc::registry::{OptValue, OptionError, OptionInfo, OptionKind, Options};
use cclab_cc::types::*;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::{intern, IntoPyObjectExt};
use std::ops::Bound as Range;
use std::sync::{Arc, Mutex};

/// The first exception a Python controller raised in this process and nobody re-raised yet.
static PENDING: Mutex<Option<PyErr>> = Mutex::new(None);

/// Takes the parked exception of a Python controller, if one raised.
pub fn take_error() -> Option<PyErr> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).take()
}

fn park(e: PyErr) {
    let mut slot = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(e);
}

/// Adds `register_python_scheme` and `unregister_python_scheme` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Ack>()?;
    m.add_class::<Congestion>()?;
    m.add_function(wrap_pyfunction!(register_python_scheme, m)?)?;
    m.add_function(wrap_pyfunction!(unregister_python_scheme, m)?)
}

/// Registers `factory(mss, options: dict) -> Controller` as scheme `name`. `options` is a list of
/// `(name, default, help)`: the default's type (bool, int or float) is the option's type.
#[pyfunction]
fn register_python_scheme(
    name: &str,
    summary: &str,
    options: Vec<(String, Py<PyAny>, String)>,
    factory: Py<PyAny>,
) -> PyResult<()> {
    let mut table = Vec::new();
    Python::attach(|py| -> PyResult<()> {
        for (option, default, help) in &options {
            let default = default.bind(py);
            // bool before int: Python's True is an int.
            let (kind, value) = if let Ok(b) = default.cast::<pyo3::types::PyBool>() {
                (OptionKind::Bool, OptValue::Bool(b.is_true()))
            } else if let Ok(i) = default.extract::<i64>() {
                (OptionKind::Int { min: i64::MIN, max: i64::MAX }, OptValue::Int(i))
            } else if let Ok(x) = default.extract::<f64>() {
                (OptionKind::Float { lo: Range::Unbounded, hi: Range::Unbounded }, OptValue::Float(x))
            } else {
                return Err(PyValueError::new_err(format!(
                    "scheme `{name}`: option `{option}`: its default must be a bool, an int or a float, not {}",
                    default.get_type().name()?
                )));
            };
            table.push(OptionInfo {
                name: Box::leak(option.clone().into_boxed_str()),
                kind,
                default: Some(value),
                help: Box::leak(help.clone().into_boxed_str()),
            });
        }
        Ok(())
    })?;
    let scheme: &'static str = Box::leak(name.to_string().into_boxed_str());
    let build: ExternalBuild = Arc::new(move |opts: &Options, mss: u64| {
        Python::attach(|py| {
            let kwargs = PyDict::new(py);
            for o in opts.spec() {
                let value = match opts.get(o.name) {
                    Some(OptValue::Bool(b)) => b.into_bound_py_any(py),
                    Some(OptValue::Int(i)) => i.into_bound_py_any(py),
                    Some(OptValue::Float(x)) => x.into_bound_py_any(py),
                    _ => continue,
                };
                value
                    .and_then(|v| kwargs.set_item(o.name, v))
                    .map_err(|e| vec![OptionError::new(o.name, e.to_string())])?;
            }
            let instance = factory
                .bind(py)
                .call1((mss, kwargs))
                .map_err(|e| vec![OptionError::new("", format!("scheme `{scheme}`: {}", describe(py, &e)))])?;
            PyController::new(py, scheme, instance.unbind(), mss)
                .map(|c| Box::new(c) as Box<dyn CongestionControl>)
                .map_err(|e| vec![OptionError::new("", format!("scheme `{scheme}`: {}", describe(py, &e)))])
        })
    });
    external::register(name, summary, table, build).map_err(PyValueError::new_err)
}

/// Removes a scheme registered from Python; whether it was registered.
#[pyfunction]
fn unregister_python_scheme(name: &str) -> bool {
    external::unregister(name)
}

/// An exception as one line: its type and message.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_default();
    format!("{kind}: {}", e.value(py))
}

/// What the controller learns from one ACK (the Rust `AckEvent`). Times in ns, sizes in bytes.
/// `acked` and `lost` are built as lists only when read.
#[pyclass(frozen, module = "cclab._core")]
pub struct Ack {
    #[pyo3(get)]
    now: u64,
    #[pyo3(get)]
    newly_acked_bytes: u64,
    #[pyo3(get)]
    newly_lost_bytes: u64,
    #[pyo3(get)]
    prior_in_flight: u64,
    #[pyo3(get)]
    in_flight: u64,
    /// The RTT estimator: latest sample, smoothed, variation and minimum (0 before a sample).
    #[pyo3(get)]
    rtt_latest: u64,
    #[pyo3(get)]
    srtt: u64,
    #[pyo3(get)]
    rttvar: u64,
    #[pyo3(get)]
    min_rtt: u64,
    #[pyo3(get)]
    has_rtt: bool,
    /// The delivery-rate sample (bytes/s), None when the ACK gave no valid one.
    #[pyo3(get)]
    delivery_rate: Option<f64>,
    #[pyo3(get)]
    rate_app_limited: bool,
    #[pyo3(get)]
    delivered: u64,
    #[pyo3(get)]
    round: u64,
    #[pyo3(get)]
    round_start: bool,
    /// "open", "recovery" or "loss".
    #[pyo3(get)]
    ca_state: &'static str,
    #[pyo3(get)]
    app_limited: bool,
    acked_packets: Vec<AckedPacket>,
    lost_packets: Vec<LostPacket>,
}

#[pymethods]
impl Ack {
    /// Every packet this ACK acknowledged: (id, bytes, send_time_ns, rtt_ns) tuples.
    #[getter]
    fn acked<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.acked_packets.iter().map(|p| (p.id, p.bytes, p.send_time, p.rtt)))
    }

    /// Every packet this ACK revealed as lost: (id, bytes, send_time_ns) tuples.
    #[getter]
    fn lost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.lost_packets.iter().map(|p| (p.id, p.bytes, p.send_time)))
    }
}

/// A loss episode (the Rust `CongestionEvent`), at most once per recovery epoch.
#[pyclass(frozen, module = "cclab._core")]
pub struct Congestion {
    #[pyo3(get)]
    now: u64,
    #[pyo3(get)]
    largest_lost_send_time: u64,
    #[pyo3(get)]
    lost_bytes: u64,
    #[pyo3(get)]
    in_flight: u64,
    #[pyo3(get)]
    prior_in_flight: u64,
}

/// Which optional hooks the Python class overrides (the others are not called at all).
#[derive(Clone, Copy, Default)]
struct Hooks {
    init: bool,
    congestion: bool,
    timer: bool,
    rto: bool,
    recovery_exit: bool,
    idle_restart: bool,
    packets_lost: bool,
}

/// One Python controller behind the Rust trait.
pub struct PyController {
    name: &'static str,
    obj: Py<PyAny>,
    hooks: Hooks,
    cwnd: u64,
    pacing_rate: Option<f64>,
    ssthresh: Option<u64>,
    slow_start: bool,
    next_timer: Option<Time>,
    /// Bytes in flight as last reported by a send or an ACK: what `on_rto` passes as FlightSize.
    flight: u64,
    /// The class's `prr` and `rack` attributes (`Controller::uses_prr`, `uses_rack`).
    prr: bool,
    rack: bool,
    /// Set once a hook raised: the controller is no longer called (its window stays put) while
    /// the run winds down to re-raise the exception.
    failed: bool,
}

impl PyController {
    fn new(py: Python<'_>, name: &'static str, obj: Py<PyAny>, mss: u64) -> PyResult<PyController> {
        let base = py.import("cclab.controller")?.getattr("Controller")?;
        let class = obj.bind(py).get_type();
        // A hook is overridden when the class's attribute is not the base class's function.
        let overrides = |hook: &str| -> PyResult<bool> { Ok(!class.getattr(hook)?.is(&base.getattr(hook)?)) };
        let hooks = Hooks {
            init: overrides("on_init")?,
            congestion: overrides("on_congestion_event")?,
            timer: overrides("on_timer")?,
            rto: overrides("on_rto")?,
            recovery_exit: overrides("on_recovery_exit")?,
            idle_restart: overrides("on_idle_restart")?,
            packets_lost: overrides("on_packets_lost")?,
        };
        let prr = obj.bind(py).getattr("prr")?.is_truthy()?;
        let rack = obj.bind(py).getattr("rack")?.is_truthy()?;
        let mut c = PyController {
            name,
            obj,
            hooks,
            cwnd: mss,
            pacing_rate: None,
            ssthresh: None,
            slow_start: false,
            next_timer: None,
            flight: 0,
            prr,
            rack,
            failed: false,
        };
        c.refresh(py)?;
        Ok(c)
    }

    /// Reads the controller's decisions back from its attributes.
    fn refresh(&mut self, py: Python<'_>) -> PyResult<()> {
        let obj = self.obj.bind(py);
        self.cwnd = obj.getattr(intern!(py, "cwnd"))?.extract()?;
        fn opt<'py>(obj: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
            let v = obj.getattr(name)?;
            Ok((!v.is_none()).then_some(v))
        }
        self.pacing_rate = opt(obj, intern!(py, "pacing_rate"))?.map(|v| v.extract()).transpose()?;
        self.ssthresh = opt(obj, intern!(py, "ssthresh"))?.map(|v| v.extract()).transpose()?;
        self.next_timer = opt(obj, intern!(py, "next_timer"))?.map(|v| v.extract()).transpose()?;
        self.slow_start = obj.getattr(intern!(py, "slow_start"))?.is_truthy()?;
        Ok(())
    }

    /// Calls one hook with `args` and reads the decisions back; parks an exception.
    fn call<'py, A>(&mut self, py: Python<'py>, hook: &Bound<'py, PyString>, args: A)
    where
        A: pyo3::call::PyCallArgs<'py>,
    {
        if self.failed {
            return;
        }
        let result = self.obj.bind(py).call_method1(hook, args).and_then(|_| self.refresh(py));
        if let Err(e) = result {
            self.failed = true;
            let message = format!("Python scheme `{}`: {}", self.name, describe(py, &e));
            let wrapped = pyo3::exceptions::PyRuntimeError::new_err(message);
            wrapped.set_cause(py, Some(e));
            park(wrapped);
        }
    }
}

fn ca_state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

impl CongestionControl for PyController {
    fn name(&self) -> &'static str {
        self.name
    }

    fn on_init(&mut self, now: Time, _rtt: &RttStats, _ctx: &mut CcContext) {
        if self.hooks.init {
            Python::attach(|py| self.call(py, intern!(py, "on_init"), (now,)));
        }
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, _ctx: &mut CcContext) -> CcTag {
        // Not a Python call: per-packet calls would double the cost. The flight is kept here
        // and handed to `on_rto`.
        self.flight = pkt.in_flight;
        0
    }

    fn on_ack(&mut self, ev: &AckEvent, _ctx: &mut CcContext) {
        self.flight = ev.in_flight;
        if self.failed {
            return;
        }
        let rate = ev.rate;
        let ack = Ack {
            now: ev.now,
            newly_acked_bytes: ev.newly_acked_bytes,
            newly_lost_bytes: ev.newly_lost_bytes,
            prior_in_flight: ev.prior_in_flight,
            in_flight: ev.in_flight,
            rtt_latest: ev.rtt.latest,
            srtt: ev.rtt.smoothed,
            rttvar: ev.rtt.rttvar,
            min_rtt: ev.rtt.min,
            has_rtt: ev.rtt.has_sample,
            delivery_rate: rate.map(|r| r.delivery_rate),
            rate_app_limited: rate.is_some_and(|r| r.is_app_limited),
            delivered: ev.delivered,
            round: ev.round,
            round_start: ev.round_start,
            ca_state: ca_state_name(ev.ca_state),
            app_limited: ev.app_limited,
            acked_packets: ev.acked.to_vec(),
            lost_packets: ev.lost.to_vec(),
        };
        Python::attach(|py| match Bound::new(py, ack) {
            Ok(ack) => self.call(py, intern!(py, "on_ack"), (ack,)),
            Err(e) => park(e),
        });
    }

    fn on_congestion_event(&mut self, ev: &CongestionEvent, _ctx: &mut CcContext) {
        if !self.hooks.congestion {
            return;
        }
        let c = Congestion {
            now: ev.now,
            largest_lost_send_time: ev.largest_lost_send_time,
            lost_bytes: ev.lost_bytes,
            in_flight: ev.in_flight,
            prior_in_flight: ev.prior_in_flight,
        };
        Python::attach(|py| match Bound::new(py, c) {
            Ok(c) => self.call(py, intern!(py, "on_congestion_event"), (c,)),
            Err(e) => park(e),
        });
    }

    fn on_rto(&mut self, now: Time, _ctx: &mut CcContext) {
        if self.hooks.rto {
            let flight = self.flight;
            Python::attach(|py| self.call(py, intern!(py, "on_rto"), (now, flight)));
        }
    }

    fn on_recovery_exit(&mut self, now: Time, _ctx: &mut CcContext) {
        if self.hooks.recovery_exit {
            Python::attach(|py| self.call(py, intern!(py, "on_recovery_exit"), (now,)));
        }
    }

    fn on_idle_restart(&mut self, now: Time, idle_for: Time, rto: Time, _ctx: &mut CcContext) {
        if self.hooks.idle_restart {
            Python::attach(|py| self.call(py, intern!(py, "on_idle_restart"), (now, idle_for, rto)));
        }
    }

    fn on_packets_lost(&mut self, now: Time, lost: &[LostPacket], _ctx: &mut CcContext) {
        if self.hooks.packets_lost {
            let lost: Vec<_> = lost.iter().map(|p| (p.id, p.bytes, p.send_time)).collect();
            Python::attach(|py| self.call(py, intern!(py, "on_packets_lost"), (now, lost)));
        }
    }

    fn next_timer(&self) -> Option<Time> {
        if self.hooks.timer && !self.failed {
            self.next_timer
        } else {
            None
        }
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut CcContext) {
        Python::attach(|py| self.call(py, intern!(py, "on_timer"), (now,)));
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<f64> {
        self.pacing_rate
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }

    fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    fn uses_prr(&self) -> bool {
        self.prr
    }

    fn uses_rack(&self) -> bool {
        self.rack
    }

    fn snapshot(&self) -> CcSnapshot {
        let ssthresh = self.ssthresh.map_or(f64::INFINITY, |s| s as f64);
        CcSnapshot { mode: "", vars: vec![("cwnd", self.cwnd as f64), ("ssthresh", ssthresh)] }
    }
}
