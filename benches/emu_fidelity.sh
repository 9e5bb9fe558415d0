#!/usr/bin/env bash
# The simulator's fidelity against real Linux TCP (issue 4): Cubic and BBR on the shipped
# Pantheon scenarios and on a 46 Mbit/s x 20 ms x 1 BDP link, each scheme run by the simulator
# (cclab's own controller) and by the emulator (the kernel's), with the Pantheon's replication
# error per scenario. Needs root (the emulator); about 5 minutes per run (N runs: N x 5 min).
#
#   benches/emu_fidelity.sh [RUNS] [OUT_DIR]
#
# Every run directory lands under OUT_DIR (default: a fresh folder in /tmp) for a closer look:
# compare the two engines' packets.parquet, timeseries.parquet and the kernel's TCP_INFO RTTs in
# meta.json; OUT_DIR/<scenario>/compare.json holds each comparison's numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1}
out=${2:-$(mktemp -d /tmp/cclab-fidelity.XXXXXX)}
cclab=${CCLAB:-.venv/bin/cclab}
schemes="cubic=kernel:cubic,bbr=kernel:bbr"
for scenario in scenarios/pantheon-1flow.toml scenarios/pantheon-3flows.toml \
    scenarios/calibrated-mexico-cellular.toml scenarios/calibrated-nepal-wifi.toml \
    benches/fidelity/link-46mbps.toml; do
    name=$(basename "$scenario" .toml)
    echo "== $scenario (load average $(cut -d' ' -f1 /proc/loadavg))"
    COLUMNS=100 "$cclab" compare "$scenario" --schemes "$schemes" --runs "$runs" --out "$out/$name"
done
echo "run directories: $out"
