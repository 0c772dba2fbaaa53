"""Score images with the official `hpsv2` package (run by its own venv's Python).

usage: python official_hpsv2.py VERSION IMAGES_DIR PROMPTS_JSON TINY_CFG_DIR   (VERSION: v2.0 or v2.1)
Prints one JSON list of scores, one per IMAGES_DIR/<i>.png.

The user's call runs unchanged: `hpsv2.score(images, prompt, hps_version=VERSION)`, which
builds `ViT-H-14` with the `laion2B-s32B-b79K` weights from the Hugging Face cache (the caller
puts a tiny checkpoint there), fetches xswu/HPSv2's checkpoint through `hf_hub_download` (from
the same cache), loads its `state_dict` strictly, and scores one image per
forward with the package's own preprocessing (`preprocess_val`) and tokenizer. The only
change: the package's vendored open_clip gets a tiny `ViT-H-14` config (TINY_CFG_DIR/ViT-H-14.json)
through its own `add_model_config`, so the architecture is ViT-H-14's with fewer, narrower layers.
"""

import json
import sys
from pathlib import Path

from PIL import Image

version, images, prompts, cfg_dir = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]

from hpsv2.src.open_clip import add_model_config  # noqa: E402

add_model_config(cfg_dir)
import hpsv2  # noqa: E402

out = []
for i, p in enumerate(prompts):
    out.append(float(hpsv2.score([Image.open(images / f"{i}.png")], p, hps_version=version)[0]))
print(json.dumps(out))
