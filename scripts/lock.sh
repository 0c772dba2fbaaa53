#!/usr/bin/env bash
# Refresh the committed locks (`make lock`): the exact versions `make demo`, `make test` and the
# official venvs install. Run it on purpose, in its own commit, when a dependency changes.
#   lock/main.txt                 every extra of pyproject.toml (make test), under lock/pins.in;
#                                 make demo installs its subset of it as constraints
#   lock/shared.txt               torch, torchvision and their closure at lock/main.txt's versions: what the
#                                 official venvs take from the main venv (scripts/official_venvs.sh)
#   lock/official-<name>.txt      each official venv (lock/official-<name>.in) resolved under lock/shared.txt
# The resolver is uv (pinned here, in its own tool venv .venv-tools); it resolves for the Python
# and platform of the machines that run make test (CPython 3.11, Linux x86_64, manylinux_2_28).
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.8
PY=${PYTHON:-python3}
if [ ! -x .venv-tools/bin/uv ] || [ "$(.venv-tools/bin/uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  "$PY" -m venv .venv-tools
  .venv-tools/bin/python -m pip install -q "uv==$UV_VERSION"
fi
# The package indexes pip is configured with here (extra indexes, local wheel folders) are the ones
# the locks must resolve from too; uv does not read pip's configuration, so they are passed on.
idx=()
for url in $(pip config get global.extra-index-url 2>/dev/null || true); do idx+=(--extra-index-url "$url"); done
for dir in $(pip config get global.find-links 2>/dev/null || true) ${PIP_FIND_LINKS:-}; do idx+=(--find-links "$dir"); done
common=(--python-version 3.11 --python-platform x86_64-manylinux_2_28
        --index-strategy unsafe-best-match  # as pip: the best version over all indexes
        --no-emit-index-url --no-emit-find-links --custom-compile-command "make lock" -q)
uv=.venv-tools/bin/uv
"$uv" pip compile pyproject.toml --all-extras -c lock/pins.in "${common[@]}" "${idx[@]}" -o lock/main.txt
"$uv" pip compile lock/shared.in -c lock/main.txt "${common[@]}" "${idx[@]}" -o lock/shared.txt
for in in lock/official-*.in; do
  "$uv" pip compile "$in" -c lock/shared.txt "${common[@]}" "${idx[@]}" -o "${in%.in}.txt"
done
echo "locks written: lock/main.txt $(ls lock/official-*.txt | tr '\n' ' ')"
