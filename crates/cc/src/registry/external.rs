//! Schemes registered at run time, from outside this crate: the Python bindings register a
//! `cclab.Controller` subclass under a name (`cclab.register_scheme`). Such a scheme is validated
//! and listed like a built-in one (its options are typed by their defaults); its builder is a
//! closure rather than a function pointer, since it holds the foreign class.
//!
//! Built-in schemes always win: a registration may not take a built-in name. The table is
//! ordered by registration, so `cclab schemes` lists the same order in every process.

use super::{BuildResult, OptionInfo, Options, SchemeInfo};
use std::sync::{Arc, RwLock};

/// Builds one controller from validated options and the MSS (as [`super::Scheme::build`]).
pub type ExternalBuild = Arc<dyn Fn(&Options, u64) -> BuildResult + Send + Sync>;

#[derive(Clone)]
pub(super) struct External {
    pub info: SchemeInfo,
    pub build: ExternalBuild,
}

static EXTERNAL: RwLock<Vec<External>> = RwLock::new(Vec::new());

/// Registers (or replaces) a scheme named `name`. Its name, summary and option table are
/// leaked into `'static` storage: registrations are few and live for the process, and the
/// registry's types (shared with the built-ins) hold `'static` strings.
pub fn register(name: &str, summary: &str, options: Vec<OptionInfo>, build: ExternalBuild) -> Result<(), String> {
    if super::find_builtin(name).is_some() {
        return Err(format!("`{name}` is a built-in scheme; choose another name"));
    }
    if name.is_empty() || name.contains(':') || name.chars().any(char::is_whitespace) {
        return Err(format!("`{name}`: a scheme name is a non-empty word without `:` or spaces"));
    }
    let info = SchemeInfo {
        name: Box::leak(name.to_string().into_boxed_str()),
        summary: Box::leak(summary.to_string().into_boxed_str()),
        options: Box::leak(options.into_boxed_slice()),
    };
    let mut table = EXTERNAL.write().unwrap_or_else(|e| e.into_inner());
    let entry = External { info, build };
    match table.iter_mut().find(|e| e.info.name == name) {
        Some(old) => *old = entry,
        None => table.push(entry),
    }
    Ok(())
}

/// Removes a registered scheme; whether it was there.
pub fn unregister(name: &str) -> bool {
    let mut table = EXTERNAL.write().unwrap_or_else(|e| e.into_inner());
    let before = table.len();
    table.retain(|e| e.info.name != name);
    table.len() != before
}

/// Whether `name` is a scheme registered at run time.
pub fn is_registered(name: &str) -> bool {
    find(name).is_some()
}

pub(super) fn find(name: &str) -> Option<External> {
    EXTERNAL.read().unwrap_or_else(|e| e.into_inner()).iter().find(|e| e.info.name == name).cloned()
}

pub(super) fn infos() -> Vec<SchemeInfo> {
    EXTERNAL.read().unwrap_or_else(|e| e.into_inner()).iter().map(|e| e.info).collect()
}
