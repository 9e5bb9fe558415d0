#!/usr/bin/env bash
# cclab's simulator against ns-3 on the same dumbbell: 100 bulk TCP flows (NewReno, then Cubic)
# through 1 Gbit/s, 20 ms RTT, a one-BDP drop-tail buffer, 10 simulated seconds
# (benches/ns3/dumbbell.toml for cclab, benches/ns3/dumbbell.cc for ns-3).
#
#     benches/ns3_dumbbell.sh [--reps N] [--duration SECONDS] [--schemes newreno,cubic]
#                             [--topology shared|dumbbell]
#
# It installs ns-3.37 from Debian (`ns3 libns3-dev`) if missing (as root or through sudo),
# compiles dumbbell.cc into target/ns3-bench/, then times both engines, alternating, and prints
# wall and CPU seconds, simulated seconds per CPU second, the ratio, and each engine's packets
# across the bottleneck, drops and throughput (benches/ns3/measure.py). Nothing else in cclab
# needs ns-3: `make bench` does not run this script (it installs system packages).
# `CCLAB=path/to/cclab` picks the cclab command (default: the checkout's .venv/bin/cclab).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cclab=${CCLAB:-$root/.venv/bin/cclab}
build=$root/target/ns3-bench
libs=(-lns3-applications -lns3-internet -lns3-point-to-point -lns3-traffic-control
    -lns3-network -lns3-core)

have_ns3() {
    dpkg-query -W -f='${Status}' libns3-dev 2>/dev/null | grep -q "install ok installed"
}

if ! have_ns3; then
    echo "ns3_dumbbell: installing ns-3 from Debian (ns3 libns3-dev)" >&2
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y ns3 libns3-dev
fi

if [[ ! -x $cclab ]]; then
    echo "ns3_dumbbell: no cclab command at $cclab; run \`make install\` or set CCLAB" >&2
    exit 1
fi

# ns-3's pkg-config files (Debian 3.37-2) carry a malformed include flag, so the libraries are
# named here; the headers are in /usr/include/ns3.
mkdir -p "$build"
if [[ ! -x $build/dumbbell || $root/benches/ns3/dumbbell.cc -nt $build/dumbbell ]]; then
    echo "ns3_dumbbell: compiling benches/ns3/dumbbell.cc" >&2
    g++ -std=c++17 -O2 -o "$build/dumbbell" "$root/benches/ns3/dumbbell.cc" "${libs[@]}"
fi

# The Python of cclab's own environment reads its run directories (meta.json).
python=$(dirname "$cclab")/python
if [[ ! -x $python ]]; then
    python=python3
fi
exec "$python" "$root/benches/ns3/measure.py" --ns3 "$build/dumbbell" --cclab "$cclab" \
    --scenario "$root/benches/ns3/dumbbell.toml" "$@"
