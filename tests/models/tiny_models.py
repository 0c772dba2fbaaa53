"""The tiny test models live in scoreaudit.testing.tiny_models (shared with bench/ and scripts/)."""

from scoreaudit.testing.tiny_models import *  # noqa: F401,F403
from scoreaudit.testing.tiny_models import (  # noqa: F401
    COMMIT,
    OPENAI_MEAN,
    OPENAI_STD,
    PROMPTS,
    TINY_IMAGE,
    TINY_VIT,
    build_all,
    register_tiny_open_clip,
    restore_open_clip,
    test_images,
)
