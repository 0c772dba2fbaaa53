"""Score images with the official `image-reward` package (run in an environment that has it).

usage: python official_imagereward.py WEIGHTS_DIR IMAGES_DIR PROMPTS_JSON TINY_VIT_JSON
Prints one JSON list of rewards. The package's ViT is hard-wired to ViT-L/16; the tiny test
checkpoint's ViT shape is given by patching its `create_vit` (the only change), the package's
__init__ (which imports ReFL's training dependencies) is bypassed, and the checkpoint is loaded
with strict=True, not the package's strict=False.
"""

import importlib.util
import json
import sys
import types
from pathlib import Path

import torch
from PIL import Image

weights, images, prompts, vit = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
spec = importlib.util.find_spec("ImageReward")
pkg = types.ModuleType("ImageReward")
pkg.__path__ = list(spec.submodule_search_locations)
sys.modules["ImageReward"] = pkg
import ImageReward.models.BLIP.blip_pretrain as bp  # noqa: E402
from ImageReward.ImageReward import ImageReward  # noqa: E402
from ImageReward.models.BLIP.vit import VisionTransformer  # noqa: E402


def tiny_vit(name, image_size, *a, **k):
    return VisionTransformer(img_size=vit["image_size"], patch_size=vit["patch"], embed_dim=vit["dim"],
                             depth=vit["depth"], num_heads=vit["heads"]), vit["dim"]


bp.create_vit = tiny_vit
model = ImageReward(med_config=str(weights / "med_config.json"), device="cpu")
model.preprocess = __import__("ImageReward.ImageReward", fromlist=["_transform"])._transform(vit["image_size"])
model.load_state_dict(torch.load(weights / "ImageReward.pt", map_location="cpu", weights_only=True), strict=True)
model.eval()
with torch.no_grad():
    out = [model.score(p, Image.open(images / f"{i}.png")) for i, p in enumerate(prompts)]
print(json.dumps(out))
