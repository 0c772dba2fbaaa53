"""A scorer written in Python: how red an image is (mean R minus mean G, 0..255 units).

Imported by `run.py` directly, or by scoreaudit itself through the
`scoreaudit.plugins` entry-point group when this folder is installed as a
package (see pyproject.toml): either way the spec can say `redness()`.
"""

import numpy as np

from scoreaudit import api


def redness(image: np.ndarray) -> float:
    """Mean red minus mean green of an RGB uint8 image (higher = redder)."""
    rgb = image[..., :3].astype(np.float64)
    return float(rgb[..., 0].mean() - rgb[..., 1].mean())


api.register_scorer("redness", redness, version="1")
