"""The language server knows arm names in scopes: rename, references, definition, hover, completion."""

from __future__ import annotations

import re

import pytest

from scoreaudit.lsp import features

from scopes_testutil import CLAIMS, HEAD

TEXT = HEAD + CLAIMS


def _apply(text, edits):
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def test_renaming_an_arm_renames_it_in_every_scope():
    doc = features.Document(TEXT)
    edits = features.rename(doc, TEXT.index("arm bodies") + 5, "torsos")
    out = _apply(TEXT, edits)
    # the definition, five scopes (sharp, torso, width, deformation, widen) and the claim
    assert len(edits) == 7
    assert not re.search(r"\bbodies\b(?!\.csv|\")", out.replace('"data/bodies', ""))
    assert "region torso = mask(column: torso_mask) on torsos" in out
    assert "operator widen = torso_warp(region: torso) doses 0.8, 0.9, 1.0, 1.1, 1.2 on torsos" in out
    assert "sharpness() on torsos label:" in out and "on torsos for each scorer" in out
    # still a valid spec with the same meaning
    from scopes_testutil import check

    c = check(out)
    assert c.ok and c.ir.operators["widen"].on == ("torsos",)


def test_renaming_from_a_scope_renames_the_arm():
    doc = features.Document(TEXT)
    at = TEXT.index("on faces", TEXT.index("scorer pick")) + 4
    assert features.prepare_rename(doc, at)[2] == "faces"
    out = _apply(TEXT, features.rename(doc, at, "portraits"))
    assert "arm portraits" in out and "pickscore(prompt: \"a photo of a person\") on portraits" in out
    assert "doses -10, -5, 0, 5, 10 on portraits" in out and "fidelity_index(light) > 0 on portraits" in out


def test_definition_references_and_hover_from_a_scope():
    doc = features.Document(TEXT)
    at = TEXT.index("on bodies", TEXT.index("region torso")) + 3
    start, end = features.definition(doc, at)
    assert TEXT[start - 4:end] == "arm bodies"
    refs = features.references(doc, at, include_declaration=False)
    assert (at, at + len("bodies")) in refs
    assert "arm bodies" in features.hover(doc, at)


def test_hover_on_a_scope_keyword_says_what_it_means():
    doc = features.Document(TEXT)
    at = TEXT.index(" on bodies", TEXT.index("region torso")) + 1
    assert "scope" in features.hover(doc, at)


@pytest.mark.parametrize("before,expected", [
    ("scorer t = planted() ", {"on"}),
    ("scorer t = planted() on ", {"faces", "bodies", "wide"}),
    ("scorer t = planted() on faces, ", {"faces", "bodies", "wide"}),
    ("region r = skin() ", {"on"}),
    ("measure m = ita(region: skin) ", {"on"}),
    ("covariate c = gamut_clip() on ", {"faces", "bodies", "wide"}),
    ("operator o = hue_rotate(region: skin) doses -10, 0, 10 ", {"on"}),
    ("operator o = hue_rotate(region: skin) doses -10, 0, 10 on ", {"faces", "bodies", "wide"}),
    ("placebo p = lab_shift(channel: L, region: rest) of light ", {"on"}),
    ("placebo p = lab_shift(channel: L, region: rest) of light on ", {"faces", "bodies", "wide"}),
])
def test_completion_of_a_scope(before, expected):
    text = HEAD + before
    start, items = features.complete(text, len(text))
    assert start == len(text)
    assert {c.label for c in items} == expected
