# semfuzz — set-up, fuzzing and tests. `make fuzz` and `make test` each set everything up first.

HOURS ?= 8
OUT ?= out
CARGO ?= cargo

.PHONY: setup fuzz test lint bench fuzz-self fixtures lock

## Create the pinned Python environment (cached, keyed by the lock) and build the release binary.
## With KERAS=3.x.y [TF=2.y.z], or TARGET=nightly [REFRESH=1]: another target's environment
## (cached; prints its --python), see scripts/target_env.sh.
setup:
	@KERAS="$(KERAS)" TF="$(TF)" TARGET="$(TARGET)" REFRESH="$(REFRESH)" scripts/setup.sh

## The older release the test suite runs beside the pinned one (cases adapted to it).
TEST_KERAS ?= 3.3.3

## Set up, then fuzz for $(HOURS) hours into $(OUT)/ (continuing the campaign found there).
fuzz: setup
	$(CARGO) run --release -- fuzz --hours $(HOURS) --out $(OUT) $(if $(wildcard $(OUT)/corpus),--resume,)

## Set up, then run the whole test suite (formatting, lints, unit and integration tests).
test: setup lint
	@KERAS=$(TEST_KERAS) TF= TARGET= scripts/setup.sh >/dev/null
	$(CARGO) test --release --workspace

## Set up, then run the benchmarks (results in target/bench-results/).
bench: setup
	$(CARGO) bench --workspace

## Set up, then fuzz semfuzz's own readers for $(MINUTES) minutes (findings in target/fuzz-self/).
MINUTES ?= 10
fuzz-self: setup
	$(CARGO) run --release -- fuzz-self --minutes $(MINUTES)

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --all-targets --workspace --quiet -- -D warnings

## Regenerate the Keras fixtures of the case format (needs the environment).
fixtures: setup
	.venv/bin/python scripts/make_fixtures.py

## Regenerate python/requirements.lock from python/requirements.in.
lock:
	python3 scripts/lock_python.py
