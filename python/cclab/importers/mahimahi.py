"""`cclab import mahimahi LOG`: an mm-link log (`--uplink-log`/`--downlink-log`) → a cclab run.

mahimahi logs one link direction with no flow ids, so the run has one flow holding every packet
of that direction. Its DELAY is the time a packet spent in this mm-link's queue only (not the
propagation delay of an mm-delay shell around it, reference §2.4), and so is the run's "one-way
delay". Packet sizes include the 4-byte TUN header (data packets log as 1504 bytes).
"""

from __future__ import annotations

import time
from pathlib import Path

from cclab.experiment_dir import new_archive_dir
from cclab.importers.link_log import LogFormatError, read_link_log, require_packets
from cclab.importers.log_run import import_log, save_imported_run, to_run_result

ENGINE = "import:mahimahi"


def import_mahimahi(
    log_path: str | Path,
    *,
    out: str | Path | None = None,
    scheme: str = "unknown",
    name: str | None = None,
    keep_packets: bool = True,
    command: list[str] | None = None,
) -> Path:
    """Imports an mm-link log as a run directory (default: a new one in the archive) and
    returns its path. `scheme` names the flow (the log does not say what sent it)."""
    log_path = Path(log_path)
    t0 = time.perf_counter()
    log = read_link_log(log_path)
    if log.has_flow_ids:
        raise LogFormatError(
            f"{log_path}: lines carry flow ids, so this is a Pantheon datalink log; import its "
            "folder with `cclab import pantheon DIR`"
        )
    require_packets(log)
    imported = import_log(log, [scheme])
    run_name = name or log_path.stem
    direction = (log.header_value("mahimahi mm-link") or "").split(" ")[0]
    result = to_run_result(
        imported,
        name=run_name,
        description=f"mahimahi mm-link {direction.lower() or 'link'} log {log_path.name}".strip(),
        wall_secs=time.perf_counter() - t0,
        keep_packets=keep_packets,
    )
    target = Path(out) if out is not None else new_archive_dir(run_name, "mahimahi")
    details = {
        "format": "mahimahi",
        "log": str(log_path.resolve()),
        "header": log.header,
        "drops_logged": {"packets": log.drop_packets, "bytes": log.drop_bytes},
        "delay": "queueing delay in this mm-link only (mahimahi's DELAY)",
    }
    return save_imported_run(
        result, imported, target, engine=ENGINE, details=details, command=command
    )
