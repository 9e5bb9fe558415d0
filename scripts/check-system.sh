#!/usr/bin/env bash
# Checks (and where it can, installs) what cclab needs from the system before `make install`
# builds it: the Debian packages it uses, Python >= 3.11 and a Rust toolchain >= 1.85.
# Fast when everything is there: it only installs packages that are missing.
#
# Usage: check-system.sh [--test]
#   --test  also what only the tests need (`make test`): chromium, the headless browser the
#           report test renders reports in. `make install` and `make demo` never install it.
set -euo pipefail

APT_PACKAGES=(build-essential pkg-config python3-dev python3-venv)
case "${1:-}" in
    "") ;;
    --test) APT_PACKAGES+=(chromium) ;;
    *)
        echo "usage: $0 [--test]" >&2
        exit 2
        ;;
esac
MIN_PYTHON="3.11"
MIN_RUST="1.85"

fail() {
    echo "error: $*" >&2
    exit 1
}

missing=()
if command -v dpkg-query >/dev/null; then
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
else
    echo "note: not a Debian-like system; make sure a C toolchain and Python's venv module exist" >&2
fi
if ((${#missing[@]})); then
    echo "installing Debian packages: ${missing[*]}" >&2
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null; then
        sudo=(sudo)
    else
        fail "missing Debian packages ${missing[*]}; install them as root: apt-get install ${missing[*]}"
    fi
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

command -v python3 >/dev/null || fail "python3 not found; cclab needs Python >= $MIN_PYTHON"
python3 - "$MIN_PYTHON" <<'PY' || fail "cclab needs Python >= $MIN_PYTHON; python3 is $(python3 --version 2>&1)"
import sys
need = tuple(int(x) for x in sys.argv[1].split("."))
sys.exit(0 if sys.version_info[:2] >= need else 1)
PY

if ! command -v cargo >/dev/null; then
    fail "the Rust toolchain (cargo) is not on PATH. Install it with rustup, the supported way:
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y
    . \"\$HOME/.cargo/env\"
then run make again. (Debian's rustc package is usually older than the $MIN_RUST cclab needs.)"
fi
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$MIN_RUST" "$have" | sort -V | head -n1)" != "$MIN_RUST" ]; then
    fail "Rust $have is older than the $MIN_RUST cclab needs; update it with: rustup update stable"
fi
for component in fmt clippy; do
    cargo "$component" --version >/dev/null 2>&1 \
        || fail "cargo $component is missing; add it with: rustup component add rustfmt clippy"
done
