"""The hostile-user campaign of issue 16: mutated inputs for every reader, kills at random
moments and disk faults, with a count of every way cclab can misbehave.

    .venv/bin/python scripts/fuzz_campaign.py                 # 1,200 inputs + faults
    .venv/bin/python scripts/fuzz_campaign.py --inputs 300 --seed 7

Readers: scenario files (`cclab validate`, and `cclab run` on those that validate), trace files
and request-size CDFs (through a scenario; a few CDFs that validate are run too), mahimahi link
logs (`cclab import mahimahi`), Pantheon data directories (datalink logs, metadata, stats;
`cclab import pantheon`), and special files (FIFOs, /dev/zero, directories) in each place.
Inputs go through the real command-line entry point (`cclab.cli.main.main`) in a harness
process that runs many of them (a fresh process per input would spend the campaign importing
numpy), under a 4 GB address-space limit and a time limit;
a harness that dies is restarted and the input counted by how it died.

Counted, each must be 0: aborts (the process died of a signal), panics (a Rust panic reached
Python), tracebacks (an exception other than cclab's own errors reached the entry point), hangs
(an input that does not finish validating or importing in 60 s), orphaned processes (workers
alive after their experiment was SIGKILLed), half-marked runs (a complete-looking directory
after a kill), and garbage imports (an import that succeeds on a hostile value, or whose numbers
are not physical). Reported beside them: clean refusals, successes, and runs stopped by their
time limit (valid scenarios that simulate long, not hangs).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
HARNESS_AS_LIMIT = 4 * 1024**3
INPUT_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 60.0

HOSTILE_VALUES = [
    "1e999", "-1", "0", '""', '"99999999999999999999h"', '"1e300s"', '"1ns"', '"1000Tbps"',
    '"1Tbps"', '"-5ms"', '"nan"', "1000000000", "18446744073709551615", "4294967295",
    '"/dev/zero"', '"/"', "true", "[]", "{}", '"fixed"', '"1e20GB"', '"1e9pkts"',
    '"' + "n" * 400 + '"', "0.9999999",
]  # fmt: skip
HOSTILE_NUMBERS = ["-1", "inf", "-inf", "nan", "1e300", "1e30", "---.-", "1e999", "-0.5", "x"]


# --- the harness: runs many inputs in one process -------------------------------------------


def harness() -> None:
    """Reads JSON lines {"args": [...]} and answers {"rc", "kind", "err"} per line."""
    resource.setrlimit(resource.RLIMIT_AS, (HARNESS_AS_LIMIT, HARNESS_AS_LIMIT))
    from cclab.cli.main import main

    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        err = io.StringIO()
        kind = "ok"
        rc: int | None = None
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                rc = main(request["args"])
            except SystemExit as e:  # argparse's usage errors
                rc = e.code if isinstance(e.code, int) else 2
            except BaseException as e:
                kind = "panic" if type(e).__name__ == "PanicException" else "traceback"
                err.write("".join(traceback.format_exception(e)))
        text = err.getvalue()
        if "Traceback (most recent call last)" in text and kind == "ok":
            kind = "traceback"
        out.write(json.dumps({"rc": rc, "kind": kind, "err": text[-1500:]}) + "\n")
        out.flush()


class Harness:
    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, __file__, "--harness"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        return self.process

    def call(self, args: list[str], timeout: float) -> dict[str, Any]:
        p = self.start()
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(json.dumps({"args": args}) + "\n")
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], timeout)
        if ready:
            line = p.stdout.readline()
            if line:
                return json.loads(line)
        if not ready:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            self.process = None
            return {"rc": None, "kind": "timeout", "err": ""}
        p.wait()
        stderr = p.stderr.read() if p.stderr else ""
        self.process = None
        kind = "panic" if "panicked" in stderr else "abort"
        return {"rc": p.returncode, "kind": kind, "err": stderr[-1500:]}

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


# --- generators ------------------------------------------------------------------------------


def mutate_toml(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    ops = []
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(["value", "value", "drop", "dup", "bytes", "key", "truncate"])
        ops.append(op)
        n = len(lines) or 1
        i = rng.randrange(n)
        if not lines:
            lines = [""]
        if op == "value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {rng.choice(HOSTILE_VALUES)}"
        elif op == "drop":
            lines.pop(i)
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "bytes":
            raw = bytearray(lines[i].encode())
            pos = rng.randrange(len(raw) + 1)
            raw[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
            lines[i] = raw.decode("utf-8", errors="replace")
        elif op == "key":
            key = rng.choice(["duration", "bin", "jain_bucket", "rate", "cwnd", "count", "queue"])
            lines.insert(i, f"{key} = {rng.choice(HOSTILE_VALUES)}")
        elif op == "truncate":
            lines = lines[:i]
    return "\n".join(lines) + "\n", "+".join(ops)


def mutate_numbers(rng: random.Random, lines: list[str], hostile: bool) -> list[str]:
    """Replaces one field of a few lines by a hostile number (or drops/duplicates lines)."""
    lines = list(lines)
    body = [i for i, line in enumerate(lines) if line and not line.startswith("#")]
    for _ in range(rng.randint(1, 3)):
        if not body:
            break
        i = rng.choice(body)
        if hostile:
            fields = lines[i].split()
            j = rng.randrange(len(fields))
            if fields[j] in "+-#d":
                j = 0
            fields[j] = rng.choice(HOSTILE_NUMBERS)
            lines[i] = " ".join(fields)
        else:
            lines.insert(i, lines[i])
    return lines


def mahimahi_log(rng: random.Random) -> list[str]:
    t = 0.0
    out = ["# mahimahi mm-link [uplink] --once", "# init timestamp: 0", "# base timestamp: 0"]
    for _ in range(rng.randint(5, 60)):
        t += rng.randint(0, 3)
        op = rng.choice("+-#")
        if op == "+":
            out.append(f"{int(t)} + 1504")
        elif op == "-":
            out.append(f"{int(t)} - 1504 {rng.randint(0, 40)}")
        else:
            out.append(f"{int(t)} # 1504")
    return out


def datalink_log(rng: random.Random, flows: int) -> list[str]:
    t = 1.0
    out = ["# init timestamp: 0", "# base timestamp: 0"]
    for _ in range(rng.randint(10, 80)):
        t += rng.random() * 3
        flow = rng.randint(1, flows)
        out.append(f"{t:.3f} + 1500 {flow}")
        out.append(f"{t + 5:.3f} - 1500 {5 + rng.random():.3f} {flow}")
        if rng.random() < 0.3:
            out.append(f"{t:.3f} # 1500")
    return out


TRACE_SCENARIO = '[link]\ntrace = "{trace}"\ndelay = "10ms"\n[[flows]]\nscheme = "cubic"\n'
CDF_SCENARIO = (
    'duration = "3s"\n[link]\nrate = "50Mbps"\ndelay = "10ms"\nqueue = "1bdp"\n[[flows]]\n'
    'scheme = "cubic"\ntraffic = "requests"\n[flows.requests]\ncdf = "{cdf}"\nload = "{load}"\n'
)


def physical(run_dir: Path) -> list[str]:
    """What is not physical in an imported run's summary (empty when all is)."""
    import pandas as pd

    problems = []
    for summary in run_dir.rglob("summary.parquet"):
        frame = pd.read_parquet(summary)
        for column in ("throughput_mbps", "delay_p95_ms", "loss_pct"):
            if column not in frame:
                continue
            values = frame[column].dropna().to_numpy(dtype=float)
            if not all(math.isfinite(v) for v in values):
                problems.append(f"{summary}: {column} not finite")
            elif (values < 0).any() or (column == "throughput_mbps" and (values > 2e6).any()):
                problems.append(f"{summary}: {column} out of range {values.tolist()[:3]}")
    return problems


# --- the campaign ----------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.by_reader: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}

    def note(self, category: str, reader: str, detail: str) -> None:
        self.counts[category] += 1
        self.by_reader[reader] += 1
        if category not in ("refused", "ok", "run-time-limit"):
            self.examples.setdefault(category, [])
            if len(self.examples[category]) < 5:
                self.examples[category].append(f"[{reader}] {detail[:600]}")

    def outcome(self, reader: str, result: dict[str, Any], detail: str, *, must_fail: bool) -> str:
        kind = result["kind"]
        if kind == "timeout":
            category = "hang"
        elif kind in ("abort", "panic", "traceback"):
            category = kind
        elif "panicked" in result["err"]:
            category = "panic"
        elif result["rc"] == 0:
            category = "garbage-import" if must_fail else "ok"
        else:
            category = "refused"
        self.note(category, reader, f"{detail}: {result['err'][-400:]}")
        return category


def campaign(n_inputs: int, seed: int, work: Path) -> Tally:
    rng = random.Random(seed)
    tally = Tally()
    h = Harness()
    seeds = sorted((ROOT / "scenarios").glob("*.toml")) + sorted(
        (ROOT / "crates/sim/tests/fuzz/scenario").glob("*.toml")
    )
    traces = [ln for ln in ["1", "1", "2", "5", "5", "5", "9", "12", "12", "15"]]
    special = [Path("/dev/zero"), work, work / "fifo"]
    os.mkfifo(work / "fifo")
    cdfs = sorted((ROOT / "python/cclab/data/cdfs").glob("*_CDF"))
    per = {
        "scenario": 0.35, "trace": 0.12, "cdf": 0.1, "mahimahi": 0.18, "pantheon": 0.18,
        "special": 0.07,
    }  # fmt: skip
    try:
        for n in range(n_inputs):
            reader = rng.choices(list(per), weights=list(per.values()))[0]
            case = work / f"case{n}"
            case.mkdir()
            if reader == "scenario":
                base = rng.choice(seeds)
                text, ops = mutate_toml(rng, base.read_text())
                path = case / "s.toml"
                path.write_text(text)
                result = h.call(["validate", str(path)], INPUT_TIMEOUT_S)
                category = tally.outcome(reader, result, f"{base.name} {ops}", must_fail=False)
                if category == "ok" and rng.random() < 0.15:
                    # Simulate a few that validate, each under the time and memory limits.
                    result = h.call(
                        ["run", str(path), "--out", str(case / "run"), "--max-memory", "2GB"],
                        RUN_TIMEOUT_S,
                    )
                    if result["kind"] == "timeout":
                        tally.note("run-time-limit", "scenario-run", f"{base.name} {ops}")
                    else:
                        tally.outcome("scenario-run", result, f"{base.name} {ops}", must_fail=False)
            elif reader == "trace":
                hostile = rng.random() < 0.7
                lines = mutate_numbers(rng, list(traces), hostile)
                if rng.random() < 0.2:
                    lines = lines[::-1]
                trace = case / "t.trace"
                trace.write_text("\n".join(lines) + "\n")
                path = case / "s.toml"
                path.write_text(TRACE_SCENARIO.format(trace=trace))
                result = h.call(["validate", str(path)], INPUT_TIMEOUT_S)
                tally.outcome(reader, result, " | ".join(lines), must_fail=False)
            elif reader == "cdf":
                hostile = rng.random() < 0.7
                base_lines = rng.choice(cdfs).read_text().splitlines()
                lines = mutate_numbers(rng, base_lines, hostile)
                cdf = case / "sizes.cdf"
                cdf.write_text("\n".join(lines) + "\n")
                path = case / "s.toml"
                load = rng.choice(["10Mbps", "40Mbps", "1Gbps", "1bps"])
                path.write_text(CDF_SCENARIO.format(cdf=cdf, load=load))
                result = h.call(["validate", str(path)], INPUT_TIMEOUT_S)
                must_fail = hostile and any(
                    v in line.split() for line in lines for v in HOSTILE_NUMBERS
                )
                detail = f"load {load}: " + " | ".join(lines)
                category = tally.outcome(reader, result, detail, must_fail=must_fail)
                if category == "ok" and rng.random() < 0.3:
                    result = h.call(
                        ["run", str(path), "--out", str(case / "run"), "--max-memory", "2GB"],
                        RUN_TIMEOUT_S,
                    )
                    if result["kind"] == "timeout":
                        tally.note("run-time-limit", "cdf-run", detail)
                    else:
                        tally.outcome("cdf-run", result, detail, must_fail=False)
            elif reader == "mahimahi":
                hostile = rng.random() < 0.7
                lines = mutate_numbers(rng, mahimahi_log(rng), hostile)
                log = case / "link.log"
                log.write_text("\n".join(lines) + "\n")
                out = case / "imp"
                result = h.call(["import", "mahimahi", str(log), "--out", str(out)], 60)
                must_fail = hostile and any(
                    v in line.split() for line in lines for v in HOSTILE_NUMBERS
                )
                category = tally.outcome(
                    reader, result, " | ".join(lines[3:9]), must_fail=must_fail
                )
                if category == "ok":
                    for problem in physical(out):
                        tally.note("garbage-import", reader, problem)
            elif reader == "pantheon":
                hostile = rng.random() < 0.7
                d = case / "data"
                d.mkdir()
                lines = datalink_log(rng, rng.randint(1, 3))
                target = rng.choice(["datalink", "metadata", "stats"]) if hostile else "none"
                if target == "datalink":
                    lines = mutate_numbers(rng, lines, True)
                (d / "cubic_datalink_run1.log").write_text("\n".join(lines) + "\n")
                meta = {"runtime": 30, "cc_schemes": "cubic", "flows": 1}
                meta_text = json.dumps(meta)
                if target == "metadata":
                    meta_text = meta_text.replace("30", rng.choice(["1e999", "-1", "[", "NaN"]))
                (d / "pantheon_metadata.json").write_text(meta_text)
                stats = "# Datalink statistics\n-- Flow 1:\nAverage throughput: 1.00 Mbit/s\n"
                if target == "stats":
                    stats = stats.replace("1.00", rng.choice(HOSTILE_NUMBERS))
                (d / "cubic_stats_run1.log").write_text(stats)
                out = case / "imp"
                result = h.call(["import", "pantheon", str(d), "--out", str(out)], 60)
                must_fail = target == "datalink" and any(
                    v in line.split() for line in lines for v in HOSTILE_NUMBERS
                )
                category = tally.outcome(reader, result, f"{target}", must_fail=must_fail)
                if category == "ok":
                    for problem in physical(out):
                        tally.note("garbage-import", reader, problem)
            else:
                thing = rng.choice(special)
                where = rng.choice(["scenario", "trace", "cdf", "mahimahi", "pantheon"])
                if where == "scenario":
                    args = ["validate", str(thing)]
                elif where == "trace":
                    path = case / "s.toml"
                    path.write_text(TRACE_SCENARIO.format(trace=thing))
                    args = ["validate", str(path)]
                elif where == "cdf":
                    path = case / "s.toml"
                    path.write_text(CDF_SCENARIO.format(cdf=thing, load="10Mbps"))
                    args = ["validate", str(path)]
                elif where == "mahimahi":
                    args = ["import", "mahimahi", str(thing), "--out", str(case / "imp")]
                else:
                    d = case / "data"
                    d.mkdir()
                    link = d / "cubic_datalink_run1.log"
                    link.symlink_to(thing)
                    args = ["import", "pantheon", str(d), "--out", str(case / "imp")]
                result = h.call(args, INPUT_TIMEOUT_S)
                tally.outcome(f"special-{where}", result, f"{thing}", must_fail=True)
            if (n + 1) % 100 == 0:
                print(f"  {n + 1} inputs: {dict(tally.counts)}", flush=True)
    finally:
        h.close()
    return tally


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    return set()


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has finished; only its exit status waits to be read)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def whole_experiment(out: Path, runs: int) -> bool:
    """Whether a directory marked complete holds every run it lists, each with its results."""
    manifest = json.loads((out / "experiment.json").read_text())
    entries = manifest.get("runs", [])
    return (
        manifest.get("complete") is True
        and len(entries) == runs
        and all((out / r["dir"] / "meta.json").exists() for r in entries if r["status"] == "ok")
    )


def kills(n: int, seed: int, work: Path, tally: Tally) -> None:
    """SIGKILL (and SIGTERM, SIGINT) of `cclab experiment` at random moments."""
    rng = random.Random(seed)
    scenario = work / "kill.toml"
    scenario.write_text(
        'name = "k"\nduration = "20s"\n[link]\nrate = "100Mbps"\ndelay = "10ms"\nqueue = "1bdp"\n'
        '[[flows]]\nscheme = "cubic"\ncount = 2\n'
    )
    cclab = Path(sys.executable).parent / "cclab"
    for i in range(n):
        out = work / f"kill{i}"
        p = subprocess.Popen(
            [str(cclab), "experiment", str(scenario), "--schemes", "cubic,bbr,vegas",
             "--runs", "2", "--jobs", "2", "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )  # fmt: skip
        moment = rng.uniform(0.2, 8.0)
        how = rng.choice([signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
        seen: set[int] = set()
        deadline = time.monotonic() + moment
        while time.monotonic() < deadline and p.poll() is None:
            seen |= descendants(p.pid)
            time.sleep(0.05)
        seen |= descendants(p.pid)
        if p.poll() is None:
            os.kill(p.pid, how)
        _, err = p.communicate(timeout=60)
        time.sleep(2.0)
        orphans = {w for w in seen if alive(w)}
        detail = f"{how.name} after {moment:.1f}s"
        for w in orphans:
            os.kill(w, signal.SIGKILL)
        tally.note("orphaned" if orphans else "ok-kill", "kill", f"{detail}: {sorted(orphans)}")
        if "Traceback" in err or "panicked" in err:
            tally.note("traceback", "kill", f"{detail}: {err[-400:]}")
        # A signal may land after the experiment finished (runs take a fraction of a second
        # each): a complete experiment.json is then right. Half-marked is one that claims
        # completion while a run it lists is missing.
        if (out / "experiment.json").exists() and not whole_experiment(out, runs=6):
            tally.note("half-marked", "kill", detail)


def disk_faults(work: Path, tally: Tally) -> None:
    """A full tmpfs and a read-only one under `run`, `experiment`, `import` and `runs`."""
    if os.geteuid() != 0:
        print("  disk faults skipped: needs root to mount a tmpfs")
        return
    cclab = str(Path(sys.executable).parent / "cclab")
    scenario = work / "disk.toml"
    scenario.write_text(
        'duration = "2s"\n[link]\nrate = "12Mbps"\ndelay = "10ms"\nqueue = "1bdp"\n'
        '[[flows]]\nscheme = "cubic"\n'
    )
    log = work / "disk.log"
    log.write_text("# base timestamp: 0\n1 + 1504\n2 - 1504 1\n3 # 1504\n")
    for options in ("size=64k", "size=1m", "size=1m,ro"):
        mount = work / f"mnt-{options.replace(',', '-').replace('=', '')}"
        mount.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=True)
        try:
            if "ro" not in options:
                with (mount / "filler").open("wb") as f, contextlib.suppress(OSError):
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
            commands = [
                ["run", str(scenario), "--out", str(mount / "r")],
                ["experiment", str(scenario), "--schemes", "cubic,bbr", "--out", str(mount / "e")],
                ["import", "mahimahi", str(log), "--out", str(mount / "i")],
                ["runs"],
            ]
            for args in commands:
                env = {**os.environ, "CCLAB_RUNS": str(mount / "archive")}
                p = subprocess.run([cclab, *args], capture_output=True, text=True, env=env)
                detail = f"{options} {args[0]}: {p.stderr.strip()[-300:]}"
                if p.returncode < 0:
                    tally.note("abort", "disk", detail)
                elif "Traceback" in p.stderr:
                    tally.note("traceback", "disk", detail)
                elif p.returncode != 0 and str(mount) not in p.stderr:
                    tally.note("unnamed-directory", "disk", detail)
                else:
                    tally.note("ok" if p.returncode == 0 else "refused", "disk", detail)
                for name in ("r", "e", "i"):
                    if (mount / name).exists() and p.returncode != 0:
                        tally.note("half-marked", "disk", detail)
        finally:
            subprocess.run(["umount", "-l", str(mount)], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=1200)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--harness", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.harness:
        harness()
        return 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cclab-campaign-") as tmp:
        work = Path(tmp)
        print(f"{args.inputs} mutated inputs (seed {args.seed})", flush=True)
        tally = campaign(args.inputs, args.seed, work)
        print(f"{args.kills} kills at random moments", flush=True)
        kills(args.kills, args.seed, work, tally)
        print("disk faults", flush=True)
        disk_faults(work, tally)
    print(f"\ninputs by reader: {dict(sorted(tally.by_reader.items()))}")
    print(f"campaign took {time.monotonic() - t0:.0f} s")
    bad = [
        "abort", "panic", "traceback", "hang", "orphaned", "half-marked", "garbage-import",
        "unnamed-directory",
    ]  # fmt: skip
    for category in bad:
        print(f"{category:18} {tally.counts.get(category, 0)}")
    for category in ("refused", "ok", "ok-kill", "run-time-limit"):
        print(f"{category:18} {tally.counts.get(category, 0)}")
    for category, examples in tally.examples.items():
        if category in bad:
            print(f"\n{category}:")
            for example in examples:
                print(f"  {example}")
    return sum(tally.counts.get(c, 0) for c in bad)


if __name__ == "__main__":
    sys.exit(min(main(), 100))
