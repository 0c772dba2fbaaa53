#!/usr/bin/env bash
# Build the two virtual environments in which tests/models runs the official packages
# `image-reward` and `hpsv2` (differential tests against scoreaudit's scorers).
# Usage: scripts/official_venvs.sh [MAIN_VENV]   (default .venv; run by scripts/bootstrap.sh test)
#
# Each venv installs exactly its lock, lock/official-<name>.txt (the official package with its
# declared dependencies, and what it imports without declaring; see lock/official-<name>.in),
# except the distributions of lock/shared.txt: torch, torchvision and their closure (~5 GB) are
# not installed again but linked from the main venv into .venv-official/shared-site
# (scripts/share_site.py), the only outside folder on the venvs' path. So the official venvs see
# nothing else of the main venv (its transformers 5 pulled `kernels`, which the official
# transformers 4.55.4 imported and broke on), and `pip check` must pass in each.
# Packaging defects of the wheels are repaired, nothing in their code:
# - hpsv2 1.2.0 ships without its CLIP BPE vocabulary (bpe_simple_vocab_16e6.txt.gz): it is
#   copied from open_clip (the same file) into hpsv2/src/open_clip/.
set -euo pipefail
cd "$(dirname "$0")/.."
main=${1:-.venv}
py=$(readlink -f "$main/bin/python")
shared=$PWD/.venv-official/shared-site
key=$(cat lock/shared.txt scripts/share_site.py | sha256sum | cut -c1-12)
if [ ! -f "$shared/.built-$key" ]; then
  "$main/bin/python" scripts/share_site.py lock/shared.txt "$shared"
  touch "$shared/.built-$key"
fi

make_venv() {  # name
  local dir=.venv-official/$1 lock=lock/official-$1.txt
  local stamp="$dir/.built-$(cat "$lock" lock/shared.txt "$0" | sha256sum | cut -c1-12)"
  [ -f "$stamp" ] && return 0
  rm -rf "$dir"
  "$py" -m venv --without-pip "$dir"
  local site
  site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$shared" > "$site/zz-scoreaudit-shared.pth"  # after the venv's own packages
  # the lock without what the shared folder provides (pinned names, canonical form)
  local own
  own=$(mktemp)
  "$main/bin/python" - "$lock" "$own" <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from share_site import canonical, pins
from pathlib import Path
shared = set(pins(Path("lock/shared.txt")))
keep = [l for l in Path(sys.argv[1]).read_text().splitlines()
        if (m := re.match(r"([A-Za-z0-9_.\-]+)==", l)) and canonical(m.group(1)) not in shared]
Path(sys.argv[2]).write_text("\n".join(keep) + "\n")
PY
  "$main/bin/python" -m pip --python "$dir/bin/python" install -q --no-deps -r "$own"
  rm -f "$own"
  "$main/bin/python" -m pip --python "$dir/bin/python" check
  touch "$stamp"
}

make_venv image-reward
make_venv hpsv2
hps_site=$(.venv-official/hpsv2/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
bpe=$("$main/bin/python" -c 'import open_clip, os; print(os.path.join(os.path.dirname(open_clip.__file__), "bpe_simple_vocab_16e6.txt.gz"))')
cp -n "$bpe" "$hps_site/hpsv2/src/open_clip/" 2>/dev/null || true
