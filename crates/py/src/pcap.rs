//! `cclab._core.write_pcap`: a packet log (numpy columns, as a run's `packet_columns`) written
//! as a pcapng capture by `cclab_core::pcap`; the GIL is released while writing.

use crate::analyze::slice;
use cclab_core::pcap::{write, CaptureColumns};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// Writes the capture of a packet log to `path`; returns the number of packets in it. Columns
/// (same length): `uid`, `flow`, `kind` and `fate` (u8 codes), `size`, `sent_ns`,
/// `arrived_ns`, `seq`, and `push` if the log has it (None: every data segment PSH).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn write_pcap(
    py: Python<'_>,
    path: std::path::PathBuf,
    uid: PyReadonlyArray1<'_, u64>,
    flow: PyReadonlyArray1<'_, u32>,
    kind: PyReadonlyArray1<'_, u8>,
    size: PyReadonlyArray1<'_, u32>,
    sent_ns: PyReadonlyArray1<'_, u64>,
    arrived_ns: PyReadonlyArray1<'_, u64>,
    fate: PyReadonlyArray1<'_, u8>,
    seq: PyReadonlyArray1<'_, u32>,
    push: Option<PyReadonlyArray1<'_, bool>>,
) -> PyResult<usize> {
    let cols = CaptureColumns {
        uid: slice("uid", &uid)?,
        flow: slice("flow", &flow)?,
        kind: slice("kind", &kind)?,
        size: slice("size", &size)?,
        sent: slice("sent_ns", &sent_ns)?,
        arrived: slice("arrived_ns", &arrived_ns)?,
        fate: slice("fate", &fate)?,
        seq: slice("seq", &seq)?,
        push: push.as_ref().map(|p| slice("push", p)).transpose()?,
    };
    let file = std::fs::File::create(&path)
        .map_err(|e| PyOSError::new_err(format!("cannot write the capture {}: {e}", path.display())))?;
    py.detach(|| write(file, &cols))
        .map_err(|e| PyOSError::new_err(format!("cannot write the capture {}: {e}", path.display())))
}
