"""Which prompt a generated arm's images were scored with (spec/generation.md): the generation prompt by
default, or the arm's `score_prompt:` (a template whose placeholders take each image's levels, or plain
text). A reader of a gap between "man" and "woman" images must know whether the scorer read those words;
the sentence says which factors the scored prompt leaves out, with one image's two prompts as an example
from the arm's manifest in the bundle (generated/ARM/manifest.csv) when it is there."""

from __future__ import annotations

import csv
import re
from pathlib import PurePath

from scoreaudit import registry

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _generation_text(prompts) -> tuple[str, list[str]]:
    """('the template "…"', its factors) or ('the prompts in FILE', []) for a generate() call's `prompts`."""
    if isinstance(prompts, dict) and isinstance(prompts.get("template"), str):
        factors = list((prompts.get("factors") or {}).keys())
        return f"the template \u201c{prompts['template']}\u201d", factors
    if isinstance(prompts, str):
        return f"the prompts in {PurePath(prompts).name}", []  # a file: its name, never a local folder
    if isinstance(prompts, list):
        return f"{len(prompts)} listed prompt{'s' if len(prompts) != 1 else ''}", []
    return "its prompts", []


def _example(bundle_dir, arm: str) -> tuple[str, str] | None:
    """The first image's (generation prompt, scored prompt) from the arm's manifest in the bundle."""
    path = bundle_dir / "generated" / arm / "manifest.csv"
    if not path.is_file():
        return None
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            row = next(csv.DictReader(fh), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not row or not row.get("prompt"):
        return None
    return row["prompt"], row.get("score_prompt") or row["prompt"]


def generated_arms(ctx) -> list[dict]:
    """One entry per generated arm: {arm, generated, scored, example} sentences (plain text, escaped later)."""
    out = []
    for name, arm in (ctx.ir.get("arms") or {}).items():
        call = (arm or {}).get("call") or {}
        if not registry.generated_arm(str(call.get("plugin"))):
            continue
        params = call.get("params") or {}
        generated, factors = _generation_text(params.get("prompts"))
        score = params.get("score_prompt")
        if not isinstance(score, str):
            scored = "its generation prompt (the default: no score_prompt declared)"
        else:
            used = _PLACEHOLDER.findall(score)
            left_out = [f for f in factors if f not in used]
            scored = f"\u201c{score}\u201d (score_prompt)"
            if used:
                scored += f", each image's level{'s' if len(used) != 1 else ''} of {', '.join(dict.fromkeys(used))} filled in"
            else:
                scored += ", the same text for every image"
            if left_out:
                scored += f"; the scored prompt leaves out {', '.join(left_out)}"
        ex = _example(ctx.bundle_dir, name)
        example = (f"e.g. generated with \u201c{ex[0]}\u201d, scored with \u201c{ex[1]}\u201d" if ex else "")
        out.append({"arm": ctx.label("arm", name), "generated": generated, "scored": scored, "example": example})
    return out
