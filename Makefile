# cclab's two commands: `make demo` (install, then run an experiment) and `make test` (install,
# then every check CI runs). `make install` is idempotent and returns at once when nothing
# changed since the last build.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
# The interpreter pyo3 builds against, for maturin and for cargo (clippy) alike.
export PYO3_PYTHON := $(abspath $(BIN)/python)

INSTALLED := $(VENV)/.cclab-installed
RUST_INPUTS := Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml)
PY_DIRS := python tests
DEMO_SCENARIO := scenarios/calibrated-mexico-cellular.toml
DEMO_SCHEMES := cubic,newreno,bbr,copa,vegas

.PHONY: help install test-system demo test bench wheel test-wheel check-portable

help:
	@echo "make install  system packages (if missing), .venv, the cclab package and its Rust core"
	@echo "make demo     install, then an experiment ($(DEMO_SCHEMES) on $(DEMO_SCENARIO)) and its report"
	@echo "make test     install, then rustfmt, clippy, cargo test, ruff and pytest (what CI runs)"
	@echo "make bench    run the performance benchmarks in benches/"
	@echo "make wheel    build the installable wheel (target/wheels/cclab-*.whl) with maturin"

install: $(INSTALLED)

# Rebuilt when the Rust sources or the packaging change; the Python sources are installed
# editable, so edits to them need no reinstall.
$(INSTALLED): $(RUST_INPUTS) pyproject.toml scripts/check-system.sh
	@scripts/check-system.sh
	@test -x $(BIN)/python || python3 -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet 'maturin>=1.9,<2'
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --extras dev
	@touch $@

# Every scheme three times over the Pantheon's calibrated Mexico cellular path (Poisson
# deliveries, a 130-packet buffer: each repetition draws another path), then the HTML report.
demo: install
	@dir="$${CCLAB_RUNS:-cclab-runs}/$$(date +%Y%m%d-%H%M%S)-demo"; \
	$(BIN)/cclab experiment $(DEMO_SCENARIO) --schemes $(DEMO_SCHEMES) --runs 3 --out "$$dir" && \
	$(BIN)/cclab report "$$dir"

# What only the tests need from the system (chromium, for the report test): `make test` checks
# it, `make install` and `make demo` do not.
test-system:
	@scripts/check-system.sh --test

test: install test-system
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --profile test-release --workspace --exclude cclab-py
	$(BIN)/ruff check $(PY_DIRS)
	$(BIN)/ruff format --check $(PY_DIRS)
	$(BIN)/pytest -q --durations=15
	$(MAKE) check-portable test-wheel

# The wheel: the Rust core and the Python package with its data (scenarios, traces), stripped of
# debug information, for manylinux2014 (glibc 2.17): maturin links through zig (the `ziglang`
# package) against that glibc's symbols, whatever the build machine's glibc. Zig's compiler
# and linker make different artifacts than `make install`'s, so the wheel builds in a target
# folder of its own (the first `make wheel` compiles everything once).
WHEEL_DIR := $(or $(CARGO_TARGET_DIR),target)/wheels
WHEEL_TARGET := $(or $(CARGO_TARGET_DIR),target)/manylinux2014
WHEEL_POLICY := manylinux2014
wheel: install
	@$(BIN)/python -m pip install --quiet 'ziglang>=0.17,<0.18'
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/maturin build --release --strip --zig \
		--compatibility $(WHEEL_POLICY) --target-dir $(WHEEL_TARGET) --out $(WHEEL_DIR)

# The newest wheel installed into a fresh venv with no Rust toolchain: the quick start, timed,
# and a subset of the tests against the installed package.
test-wheel: wheel
	scripts/check-wheel.sh

# The package without the emulator (what a non-Linux build gets): the bindings must still build.
check-portable:
	cargo check -p cclab-py --no-default-features

# The Rust benchmarks (`[[bench]]` targets of the crates, some kept in benches/) and every
# Python benchmark script in benches/.
bench: install
	cargo bench --workspace --exclude cclab-py
	@set -e; for script in $(wildcard benches/*.py); do echo "== $$script"; $(BIN)/python $$script; done
