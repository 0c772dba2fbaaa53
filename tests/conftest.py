"""Session-wide: offline, on a throwaway Hugging Face cache.

huggingface_hub and transformers read these variables once, when first
imported, so they are set here, before any test module is collected (a test
module that imports open_clip or transformers would otherwise freeze the
user's real cache for the whole session). Tests that need their own cache run
the CLI in a subprocess with their own environment.

Ray likewise reads its authentication settings (RAY_AUTH_MODE, RAY_AUTH_TOKEN)
once per process, when first imported. Every Ray process the tests start (local
instances, the two-node 127.0.0.1 cluster, crash-test drivers) shares one random
token set here: a test module that imports ray at collection time must not freeze
the driver at 'disabled' while a later module's cluster demands a token.
"""

import os
import secrets
import tempfile
from pathlib import Path

SESSION_ROOT = Path(tempfile.mkdtemp(prefix="scoreaudit-tests-"))
os.environ.update({"HF_HUB_CACHE": str(SESSION_ROOT / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                   "XDG_CACHE_HOME": str(SESSION_ROOT / "xdg"),
                   "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
