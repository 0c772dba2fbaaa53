"""Score images with the official `image-reward` package (run by its own venv's Python).

usage: python official_imagereward.py CHECKPOINT MED_CONFIG IMAGES_DIR PROMPTS_JSON TINY_VIT_JSON
Prints one JSON list of rewards, one per IMAGES_DIR/<i>.png.

The package's public path runs: `ImageReward.utils.load(path, device, med_config=...)` builds
the model and loads the checkpoint, `model.score(prompt, PIL image)` scores it (the tokenizer is
`bert-base-uncased` from the Hugging Face cache the caller sets up). Three things differ from a
user's call, each because the test uses a tiny random checkpoint or avoids unrelated imports:
- `create_vit` (BLIP) is wired to ViT-L/16 at 224 px; it is replaced by the same
  VisionTransformer class built at the tiny checkpoint's shape, and `preprocess` by the
  package's own `_transform` at that size.
- the package's `__init__` imports its training code (ReFL → accelerate, datasets, diffusers);
  the package directory is registered without running it.
- `load` uses strict=False; this driver fails when any key was missing or unexpected, so a
  silently ignored weight cannot make the comparison pass.
"""

import importlib.util
import json
import sys
import types
from pathlib import Path

import torch
from PIL import Image

ckpt, med, images, prompts, vit = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5])
spec = importlib.util.find_spec("ImageReward")
pkg = types.ModuleType("ImageReward")
pkg.__path__ = list(spec.submodule_search_locations)
sys.modules["ImageReward"] = pkg
import ImageReward.ImageReward as ir_module  # noqa: E402
import ImageReward.models.BLIP.blip_pretrain as bp  # noqa: E402
from ImageReward.models.BLIP.vit import VisionTransformer  # noqa: E402
from ImageReward.utils import load  # noqa: E402


def tiny_vit(name, image_size, *a, **k):
    return VisionTransformer(img_size=vit["image_size"], patch_size=vit["patch"], embed_dim=vit["dim"],
                             depth=vit["depth"], num_heads=vit["heads"]), vit["dim"]


bp.create_vit = tiny_vit
captured = {}
original = torch.nn.Module.load_state_dict


def recording_load(self, state_dict, strict=True, **kw):
    msg = original(self, state_dict, strict=strict, **kw)
    if isinstance(self, ir_module.ImageReward):
        captured["msg"] = msg
    return msg


torch.nn.Module.load_state_dict = recording_load
model = load(ckpt, device="cpu", med_config=med)
torch.nn.Module.load_state_dict = original
msg = captured["msg"]
bad = [k for k in list(msg.missing_keys) + list(msg.unexpected_keys) if not k.endswith("position_ids")]
if bad:
    sys.exit(f"the checkpoint does not match the official module: {bad[:10]}")
model.preprocess = ir_module._transform(vit["image_size"])
model.eval()
with torch.no_grad():
    out = [float(model.score(p, Image.open(images / f"{i}.png"))) for i, p in enumerate(prompts)]
print(json.dumps(out))
