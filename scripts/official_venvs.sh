#!/usr/bin/env bash
# Build the two small virtual environments in which tests/models runs the official packages
# `image-reward` and `hpsv2` (differential tests against scoreaudit's scorers).
# Usage: scripts/official_venvs.sh [MAIN_VENV]   (default .venv; run by scripts/bootstrap.sh test)
#
# Why separate environments: image-reward 1.5 needs transformers<=4.55.4 (and with it
# huggingface_hub<1 and tokenizers<0.22), timm==0.6.13 and fairscale; the main environment
# has current transformers. Each official venv installs only what differs from the main one and
# sees the main venv's packages (torch, torchvision, numpy, Pillow, ...) through a .pth line
# appended AFTER its own site-packages, so its pinned versions win and torch (~5 GB) is not
# installed twice. Packaging defects of the wheels are repaired, nothing in their code:
# - hpsv2 1.2.0 ships without its CLIP BPE vocabulary (bpe_simple_vocab_16e6.txt.gz): it is
#   copied from open_clip (the same file) into hpsv2/src/open_clip/.
# - image-reward 1.5's __init__ imports its training code (ReFL: accelerate, datasets,
#   diffusers); the test driver imports only the scoring
#   modules (ImageReward.ImageReward, ImageReward.models), so those are not installed. The
#   undeclared `clip` module that ImageReward.models imports is installed (clip-anytorch, which
#   needs pkg_resources: setuptools<81).
set -euo pipefail
cd "$(dirname "$0")/.."
main=${1:-.venv}
main_site=$("$main/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
py=$(readlink -f "$main/bin/python")

make_venv() {  # name, then pip arguments
  local dir=.venv-official/$1; shift
  local stamp="$dir/.built-$(echo "$*" | sha256sum | cut -c1-12)"
  [ -f "$stamp" ] && return 0
  rm -rf "$dir"
  "$py" -m venv --without-pip "$dir"
  local site
  site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$main_site" > "$site/zz-scoreaudit-main.pth"  # after the venv's own packages
  "$main/bin/python" -m pip --python "$dir/bin/python" install -q --no-deps "$@"
  touch "$stamp"
}

# image-reward: its pinned stack, no dependencies resolved against the main venv's newer ones.
make_venv image-reward image-reward==1.5 "transformers==4.55.4" "tokenizers>=0.21,<0.22" \
  "huggingface_hub>=0.34,<1.0" timm==0.6.13 fairscale==0.4.13 clip-anytorch==2.6.0 "setuptools<81"
# hpsv2: the package itself (it vendors its own open_clip) and clint, which its scorer imports.
make_venv hpsv2 hpsv2==1.2.0 clint==0.5.1 args==0.1.0
hps_site=$(.venv-official/hpsv2/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
bpe=$("$main/bin/python" -c 'import open_clip, os; print(os.path.join(os.path.dirname(open_clip.__file__), "bpe_simple_vocab_16e6.txt.gz"))')
cp -n "$bpe" "$hps_site/hpsv2/src/open_clip/" 2>/dev/null || true
