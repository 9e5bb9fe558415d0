"""`cclab model mathis RUN` and `cclab model bbr-share`: throughput models beside runs
(python/cclab/models.py)."""

from __future__ import annotations

import argparse
import math

from rich.table import Table

from cclab import _core
from cclab.archive_lookup import ArchiveLookupError, resolve
from cclab.cli.common import CommandError, make_console
from cclab.models import bbr_share, bbr_share_of_run, mathis_fit, read_run

NAME = "model"
HELP = "throughput models: fit the Mathis constant to a run, or Ware et al.'s BBR share"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="model", metavar="MODEL", required=True)
    mathis = sub.add_parser(
        "mathis",
        help="fit C in MSS·C/(RTT·√p) over a run's flows, p from the loss rate and from the "
        "congestion-event (cwnd-halving) rate, with prediction errors",
    )
    mathis.add_argument("run", metavar="RUN", help="run directory, archive name or `latest`")
    mathis.add_argument("--scheme", help="only the flows of this scheme (default: all)")
    share = sub.add_parser(
        "bbr-share",
        help="Ware et al. (IMC'19): BBR's share of a link against loss-based flows; "
        "for a given link and buffer, or a run's (then beside the measured share)",
    )
    share.add_argument("run", nargs="?", metavar="RUN", help="a run with BBR and loss-based flows")
    share.add_argument("--rate", help='link rate, e.g. "10Gbps"')
    share.add_argument("--rtt", help='base RTT, e.g. "20ms"')
    share.add_argument("--buffer", help='drop-tail buffer, e.g. "375MB"')
    share.add_argument("--bbr", type=int, default=1, help="number of BBR flows (default 1)")


def _run_dir(text: str) -> tuple:
    try:
        return read_run(resolve(text))
    except (ArchiveLookupError, FileNotFoundError) as e:
        raise CommandError(str(e)) from e


def _mathis(args: argparse.Namespace) -> int:
    summary, flows, _ = _run_dir(args.run)
    if summary["congestion_events"].isna().all():
        raise CommandError(
            f"{args.run}: the run has no congestion-event counts (an import or kernel stacks); "
            "only the loss-rate fit is possible from the queue's drops"
        )
    fits = mathis_fit(summary, flows, scheme=args.scheme)
    table = Table(title="Mathis model: throughput = MSS·C/(RTT·√p)")
    for col in ("p from", "C", "median error", "p90 error", "flows"):
        table.add_column(col, justify="right")
    for fit in fits.values():
        table.add_row(
            {"loss": "loss rate", "halving": "halving rate"}[fit.p_source],
            f"{fit.c:.3f}",
            f"{fit.median_error:.1%}",
            f"{fit.p90_error:.1%}",
            str(fit.flows),
        )
    make_console().print(table)
    return 0


def _bbr_share(args: argparse.Namespace) -> int:
    console = make_console()
    if args.run:
        summary, flows, scenario = _run_dir(args.run)
        try:
            cmp = bbr_share_of_run(summary, flows, scenario)
        except ValueError as e:
            raise CommandError(f"{args.run}: {e}") from e
        console.print(
            f"{cmp.n_bbr} BBR vs {cmp.n_other} loss-based, {cmp.rate_bps / 1e6:g} Mbit/s, "
            f"RTT {cmp.base_rtt_s * 1e3:g} ms, buffer {cmp.buffer_bytes / 1e6:g} MB: "
            f"model {cmp.model:.1%}, run {cmp.measured:.1%}"
        )
        return 0
    missing = [k for k in ("rate", "rtt", "buffer") if getattr(args, k) is None]
    if missing:
        raise CommandError(
            "bbr-share needs a RUN or all of --rate, --rtt and --buffer (missing: "
            + ", ".join(f"--{k}" for k in missing)
            + ")"
        )
    try:
        rate = _core.parse_rate(args.rate)
        rtt = _core.parse_duration(args.rtt) / 1e9
        buffer = _core.parse_size(args.buffer)
        share = bbr_share(rate_bps=rate, base_rtt_s=rtt, buffer_bytes=buffer, n_bbr=args.bbr)
    except ValueError as e:
        raise CommandError(f"bbr-share: {e}") from e
    without = bbr_share(
        rate_bps=rate, base_rtt_s=rtt, buffer_bytes=buffer, n_bbr=args.bbr, probe_rtt=False
    )
    console.print(
        f"Ware et al.: {args.bbr} BBR flow(s) take {share:.1%} of the link "
        f"({without:.1%} without ProbeRTT), whatever the number of loss-based flows"
    )
    return 0 if math.isfinite(share) else 1


def execute(args: argparse.Namespace) -> int:
    return _mathis(args) if args.model == "mathis" else _bbr_share(args)
