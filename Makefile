# The two commands of the README. Everything else is behind them.
.PHONY: demo test test-fast lock

demo:
	@scripts/bootstrap.sh core
	@.venv/bin/python scripts/make_demo_data.py
	@.venv/bin/scoreaudit run examples/demo.audit --out out/demo

test:
	@scripts/bootstrap.sh test
	@HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=900

# The inner loop: everything but the tests marked slow (fuzz, calibration, model and Ray runs, PDF renders,
# mypy's cold run); `make test` still runs them all, ruff and mypy included.
test-fast:
	@scripts/bootstrap.sh test
	@HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=900 -m "not slow"

# Refresh lock/*.txt (the exact versions demo and test install) after a dependency changes; commit it alone.
lock:
	@scripts/lock.sh
