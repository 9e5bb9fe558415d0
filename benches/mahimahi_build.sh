#!/usr/bin/env bash
# Build mahimahi (https://github.com/ravinet/mahimahi) from source into a scratch directory, so
# that benches/emu_bench.py can run every case through mm-delay + mm-link beside cclab-emu.
#
#   sudo benches/mahimahi_build.sh [--prefix DIR] [--src DIR] [--no-apt]
#
#   --prefix DIR  where it goes (default ${XDG_CACHE_HOME:-~/.cache}/cclab/mahimahi): the build in
#                 DIR/build, the programs in DIR/bin (emu_bench.py looks there, and on PATH)
#   --src DIR     build from this source tree (copied, never written to) instead of
#                 `git clone https://github.com/ravinet/mahimahi`
#   --no-apt      do not install the build dependencies (they are already there)
#
# Why from source: mahimahi is not packaged for Debian 12. It is a benchmark's comparison point
# only, never a test dependency: nothing in `make test` or the test suites needs it.
#
# Needs root: the build dependencies come from apt-get (autotools, pkg-config, protobuf, OpenSSL,
# xcb/cairo/pango for mm-link's live graphs, apache2 headers and apxs, dnsmasq, iptables, iproute2,
# ssl-cert: what mahimahi's configure checks for), and `make install` makes the shells setuid root
# (mahimahi's own install hook). Running its shells also needs net.ipv4.ip_forward=1 (they NAT
# their namespace to the outside); emu_bench.py sets it for its run and restores it.
#
# Upstream's code builds unchanged on Debian 12 (GCC 12, protobuf 3.21, OpenSSL 3: no warning
# even under its -Werror). One change to its build files, only where needed: a source tree whose
# traces/ lacks some of the recorded cellular traces (a snapshot without its large files) builds
# without installing them, as their absence would stop `make install`; the benchmark writes its
# own constant-rate traces.
set -euo pipefail

prefix="${XDG_CACHE_HOME:-$HOME/.cache}/cclab/mahimahi"
src=""
apt=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --src) src="$2"; shift 2 ;;
        --no-apt) apt=0; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; $d'; exit 0 ;;
        *) echo "mahimahi_build.sh: unknown argument '$1' (accepted: --prefix DIR, --src DIR, --no-apt, --help)" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ]; then
    echo "mahimahi_build.sh: needs root (apt-get, and mahimahi installs its shells setuid root)" >&2
    exit 1
fi
if [ -n "$src" ] && [ ! -f "$src/configure.ac" ]; then
    echo "mahimahi_build.sh: --src $src has no configure.ac (expected a mahimahi source tree)" >&2
    exit 1
fi

if [ "$apt" = 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends \
        git ca-certificates build-essential autoconf automake libtool pkg-config \
        protobuf-compiler libprotobuf-dev libssl-dev \
        libxcb-present-dev libcairo2-dev libpango1.0-dev \
        apache2-dev apache2-bin ssl-cert dnsmasq-base iptables iproute2
fi

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
build="$prefix/build"
rm -rf "$build"
if [ -n "$src" ]; then
    mkdir -p "$build"
    cp -a "$src/." "$build/"
else
    git clone --depth 1 https://github.com/ravinet/mahimahi "$build"
fi
cd "$build"

missing=0
for f in $(sed -n '/dist_trace_DATA/,/^$/p' traces/Makefile.am | tr -d '\134' | cut -d= -f2-); do
    [ -f "traces/$f" ] || missing=1
done
if [ "$missing" = 1 ]; then
    echo "mahimahi_build.sh: traces/ is incomplete; building without the recorded traces"
    sed -i 's/^\(dist_trace_DATA = \).*/\1README/; /^\t.*driving\|^\t.*short/d' traces/Makefile.am
    [ -f traces/README ] || echo "Recorded traces were not in this source tree." >traces/README
fi

autoreconf -fi
./configure --prefix="$prefix" -q
make -j"$(nproc)"
make install
echo "mahimahi_build.sh: installed $(cd "$prefix/bin" && echo mm-*) in $prefix/bin"
