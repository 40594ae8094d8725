# Entry points for developers and CI (.ci/run calls `make ci`).
#
#   make deps   install ZooKeeper, the C CLI and the kazoo venv (idempotent)
#   make test   deps + build the testkeeper binary + the whole test suite,
#               with external prerequisites *required* (missing = failure)
#   make lint   formatting and clippy, warnings as errors
#   make ci     lint, then test: what CI runs
#   make sim-nightly  the nightly-sized simulation sweep (docs/sim.md):
#               SEEDS=0..2000 per workload, JOBS=every core, SHARD=K/N
#               optional, a JUnit file per workload under target/sim/

CARGO ?= cargo

.PHONY: test deps build lint ci sim-nightly

SEEDS ?= 0..2000
SHARD ?=
WORKLOADS := register set ids counter queue lock

deps:
	scripts/install-test-deps.sh

# The integration tests in tests/ run target/<profile>/testkeeper as a child
# process; cargo only builds a package's binary for its *own* integration
# tests, so build it explicitly (same dev profile as the test run).
build:
	$(CARGO) build --workspace --bins

# TESTKEEPER_REQUIRE_EXTERNAL=1: tests that need ZooKeeper/kazoo/CLIs fail
# instead of skipping, so CI cannot go green by not testing.
test: deps build
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		echo "TESTKEEPER_REQUIRE_EXTERNAL=1 $(CARGO) nextest run --workspace --no-fail-fast"; \
		TESTKEEPER_REQUIRE_EXTERNAL=1 $(CARGO) nextest run --workspace --no-fail-fast; \
	else \
		echo "cargo-nextest not found; falling back to cargo test"; \
		TESTKEEPER_REQUIRE_EXTERNAL=1 $(CARGO) test --workspace --no-fail-fast; \
	fi

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Lint first: a formatting slip fails in seconds, not after the whole suite.
ci: lint test

# Every workload over SEEDS; stops at the first workload with a violation (its
# replay commands are printed) and exits non-zero.
sim-nightly:
	$(CARGO) build --release --bin testkeeper
	mkdir -p target/sim
	for w in $(WORKLOADS); do \
		./target/release/testkeeper sim --workload $$w --seeds $(SEEDS) \
			$(if $(SHARD),--shard $(SHARD)) $(if $(JOBS),--jobs $(JOBS)) \
			--junit target/sim/sim-$$w.xml --json target/sim/sim-$$w.json || exit 1; \
	done
