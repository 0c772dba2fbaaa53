"""An image's content hash is the one content-address scheme (keys.hash_array), not a copy of it (issue 29).

plugins/base.py used to carry its own copy of the hashing code; a change to the key scheme in keys.py would
have left images hashed the old way while masks and cache keys moved on.
"""

from __future__ import annotations

import numpy as np

from scoreaudit import keys
from scoreaudit.plugins import base


def test_content_hash_follows_the_key_scheme(monkeypatch):
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    assert base.content_hash(image) == keys.hash_array(image)
    assert base.content_hash(image) != base.content_hash(image.astype(np.uint16))  # dtype is part of it
    assert base.content_hash(image) != base.content_hash(image.reshape(3, 2, 3))  # and shape
    monkeypatch.setattr(base, "hash_array", lambda a: "changed scheme")
    assert base.content_hash(image) == "changed scheme"
