# The two commands of the README. Everything else is behind them.
.PHONY: demo test lock

demo:
	@scripts/bootstrap.sh core
	@.venv/bin/python scripts/make_demo_data.py
	@.venv/bin/scoreaudit run examples/demo.audit --out out/demo

test:
	@scripts/bootstrap.sh test
	@HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q -p no:cacheprovider --timeout=900

# Refresh lock/*.txt (the exact versions demo and test install) after a dependency changes; commit it alone.
lock:
	@scripts/lock.sh
