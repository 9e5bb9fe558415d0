//! Request/response workloads (`traffic = "requests"` with a `[flows.requests]` table): requests
//! whose sizes follow an empirical CDF arrive as a Poisson process at a target offered load and
//! are served over `connections` persistent connections of the entry's scheme, as the empirical
//! traffic generator does (reference: reproduction-targets §1.2).
//!
//! Constant-rate (inelastic) cross traffic is the `fixed` scheme with a `rate`; backlogged
//! (elastic) flows are the default `traffic = "bulk"`.

use super::{FlowSpec, Source, Traffic};
use crate::cdf::EmpiricalCdf;
use crate::units::Rate;
use crate::ScenarioError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The empirical traffic generator's default number of server connections (`conns=200`).
pub const DEFAULT_CONNECTIONS: u32 = 200;

/// `[flows.requests]`: what a request workload sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requests {
    /// A shipped distribution (`CAIDA_CDF`, `MIXED_CDF`, `TINY_CDF`, `BIG_CDF`) or a CDF file
    /// (relative to the scenario's folder).
    pub cdf: String,
    /// Offered load: mean request size × arrival rate, in bits of payload per second.
    pub load: Rate,
    /// Persistent connections the requests are spread over.
    #[serde(default = "default_connections")]
    pub connections: u32,
    /// Stop issuing requests after this many (default: until the flows stop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
}

fn default_connections() -> u32 {
    DEFAULT_CONNECTIONS
}

impl Requests {
    /// The distribution, resolved (a shipped name or a file).
    pub fn load_cdf(&self) -> Result<EmpiricalCdf, String> {
        EmpiricalCdf::load(&self.cdf)
    }

    /// Mean gap between request arrivals, ns: mean size × 8 / load (the generator's
    /// `8·E[size]/load`).
    pub fn mean_gap_ns(&self, cdf: &EmpiricalCdf) -> f64 {
        cdf.mean() * 8.0 / self.load.0 as f64 * 1e9
    }

    /// A relative CDF file resolves against the scenario's folder, as traces do.
    pub(super) fn resolve_paths(&mut self, folder: &Path) {
        if EmpiricalCdf::is_builtin(&self.cdf) || Path::new(&self.cdf).is_absolute() {
            return;
        }
        if let Ok(absolute) = std::fs::canonicalize(folder.join(&self.cdf)) {
            self.cdf = absolute.display().to_string();
        }
    }
}

/// Checks of one `[[flows]]` entry's workload keys.
pub(super) fn check(i: usize, f: &FlowSpec, src: &Source, errs: &mut Vec<ScenarioError>) {
    let at = |k: &str| format!("flows[{i}].{k}");
    match (&f.traffic, &f.requests) {
        (Traffic::Requests, None) => errs.push(src.error(
            &at("traffic"),
            "`traffic = \"requests\"` needs a [flows.requests] table, e.g. cdf = \"CAIDA_CDF\", load = \"84Mbps\"",
        )),
        (Traffic::Bulk, Some(_)) => {
            errs.push(src.error(&at("requests"), "a [flows.requests] table needs `traffic = \"requests\"`"))
        }
        (Traffic::Requests, Some(r)) => {
            if f.count != 1 {
                errs.push(src.error(
                    &at("count"),
                    "a request workload is one entry over `requests.connections` connections; leave `count` at 1",
                ));
            }
            if r.connections == 0 {
                errs.push(src.error(&at("requests.connections"), "must be at least 1"));
            }
            if r.load.0 == 0 {
                errs.push(src.error(&at("requests.load"), "must be positive, e.g. \"84Mbps\""));
            }
            if let Err(e) = r.load_cdf() {
                errs.push(src.error(&at("requests.cdf"), e));
            }
        }
        (Traffic::Bulk, None) => {}
    }
}
