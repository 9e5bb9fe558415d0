#!/usr/bin/env bash
# Installs the newest wheel in target/wheels (or the one given) into a fresh virtual environment
# with no Rust toolchain on PATH, times `pip install` + the quick start (`cclab run` of a shipped
# scenario, by name: a wheel user has no checkout), and runs a subset of the tests against the
# installed package (not the source tree). Called by `make test-wheel`; CI runs it from `make test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD

wheel=${1:-$(ls -t "${CARGO_TARGET_DIR:-target}"/wheels/cclab-*.whl 2>/dev/null | head -1)}
[[ -n "$wheel" && -f "$wheel" ]] || { echo "check-wheel: no wheel found; run make wheel" >&2; exit 2; }
wheel=$(realpath "$wheel")

work=$(mktemp -d "${TMPDIR:-/tmp}/cclab-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"

# Only the venv and the system's own folders: no ~/.cargo/bin, so a source build would fail.
export PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin"
unset VIRTUAL_ENV CARGO_TARGET_DIR PYO3_PYTHON
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "check-wheel: a Rust toolchain is still on PATH ($(command -v cargo rustc))" >&2
    exit 2
fi

cd "$work"
start=$EPOCHREALTIME
# The README's command: --no-compile, so pip does not byte-compile every module of every
# dependency (pandas' 1,143 test files among them); Python compiles what cclab imports on first use.
pip install --quiet --disable-pip-version-check --no-compile "$wheel"
installed=$EPOCHREALTIME
cclab run pantheon-1flow --out "$work/run" >"$work/run.log"
finished=$EPOCHREALTIME
tail -n 1 "$work/run.log"
awk -v a="$start" -v b="$installed" -v c="$finished" 'BEGIN { printf \
    "check-wheel: pip install %.1f s + cclab run pantheon-1flow %.1f s = %.1f s\n", b - a, c - b, c - a }'

# The package must come from the venv, with its data inside it.
python - <<'PY'
import cclab, cclab.data, cclab.reproduce
assert "/site-packages/cclab/" in cclab.__file__, cclab.__file__
assert cclab.data.shipped_scenarios(), "no scenarios shipped in the wheel"
assert cclab.reproduce.scenario_path("copa-fairness").is_file()
print("check-wheel: package at", cclab.__file__.rsplit("/", 1)[0])
PY

# A subset of the tests against the installed wheel. pytest puts tests/ (not python/) on
# sys.path, so `import cclab` is the wheel's.
# pytest, and scapy for the capture tests' independent pcapng reader (the dev extras' own).
pip install --quiet --disable-pip-version-check 'pytest>=8' 'scapy>=2.5'
python -m pytest -q -p no:cacheprovider --rootdir "$repo" -c "$repo/pyproject.toml" \
    "$repo/tests/test_api.py" "$repo/tests/test_run_cli.py" "$repo/tests/test_schemes_cli.py" \
    "$repo/tests/test_validate_cli.py" "$repo/tests/test_wheel_data.py" \
    "$repo/tests/test_portability.py"
