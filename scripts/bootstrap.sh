#!/usr/bin/env bash
# Create .venv and install scoreaudit into it, every package at the version lock/main.txt pins
# (refresh it with `make lock`). Usage: scripts/bootstrap.sh [core|test]
#   core: the package with the PDF and demo extras (enough for `make demo`)
#   test: also the test tools, the models extra (torch 2.14.1, lock/pins.in), the lsp, ray and generate extras,
#         the official image-reward and hpsv2 packages in .venv-official/ (scripts/official_venvs.sh),
#         and the Debian packages the report tests use (poppler-utils, chromium, chromium-driver).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-core}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python - <<'PY' || { echo "the lock (lock/main.txt) is for CPython 3.11 on Linux x86_64; set PYTHON=python3.11, or install CPython 3.11 and run with PYTHON=python3.11" >&2; exit 3; }
import platform, sys
sys.exit(0 if sys.version_info[:2] == (3, 11) and sys.platform == "linux" and platform.machine() == "x86_64" else 1)
PY

need_apt=()
dpkg -s libharfbuzz-subset0 >/dev/null 2>&1 || need_apt+=(libharfbuzz-subset0)
if [ "$what" = test ]; then
  command -v pdftotext >/dev/null 2>&1 || need_apt+=(poppler-utils)
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${need_apt[*]}"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "note: missing Debian packages (${need_apt[*]}); PDF/browser features may be skipped" >&2
  fi
fi

if [ "$what" = test ]; then
  .venv/bin/pip install -q -c lock/main.txt -e '.[pdf,demo,test,models,lsp,ray,generate,niqe,nsfw,view]'
  # The official image-reward and hpsv2 packages, each in its own venv (older transformers; its own
  # lock), for the differential tests in tests/models.
  scripts/official_venvs.sh .venv
else
  .venv/bin/pip install -q -c lock/main.txt -e '.[pdf,demo]'
fi
