"""load_manifest: every problem a user can cause gets the exact message, before any scoring."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scoreaudit.compiler import ir
from scoreaudit.plugins.arms import ImagesParams, PairsParams
from scoreaudit.runtime.images import Exclusion, decode_record, exclusion_errors
from scoreaudit.runtime.manifests import load_manifest


def images_arm(name="real", **params) -> ir.ArmIR:
    p = ImagesParams(**params)
    strata = p.strata if isinstance(p.strata, list) else ([p.strata] if p.strata else [])
    return ir.ArmIR(name=name, call=ir.PluginCall(plugin="images", version="1", params=p.model_dump()),
                    source="images", kind=p.kind, cluster=p.cluster, strata=tuple(strata),
                    factors=tuple(p.factors))


def pairs_arm(name="wide", **params) -> ir.ArmIR:
    p = PairsParams(**params)
    return ir.ArmIR(name=name, call=ir.PluginCall(plugin="pairs", version="1", params=p.model_dump()),
                    source="pairs", kind=p.kind, cluster=p.cluster)


def write_images(folder, names, size=(8, 10)):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for n in names:
        Image.fromarray(rng.integers(0, 256, size + (3,), dtype=np.uint8)).save(folder / n)


@pytest.fixture
def project(tmp_path):
    write_images(tmp_path / "data" / "real", ["a.png", "b.png", "c.png"])
    pd.DataFrame({
        "id": ["007", "b", "c"], "path": ["a.png", "b.png", "c.png"],
        "race": ["x", "y", "x"], "prompt_id": [1, 1, 2], "rating": [0.5, None, 2.0],
    }).to_csv(tmp_path / "data" / "real.csv", index=False)
    return tmp_path


def test_good_manifest_gives_records_with_rows_clusters_and_columns(project):
    arm = images_arm(folder="data/real", manifest="data/real.csv", cluster="prompt_id", strata="race")
    res = load_manifest(arm, project, columns=["rating"])
    assert res.ok and not res.exclusions and res.diagnostics == ()
    assert [r.image_id for r in res.records] == ["007", "b", "c"]  # '007' stays a string
    assert [r.row for r in res.records] == [1, 2, 3]
    assert [r.cluster for r in res.records] == ["1", "1", "2"]
    assert res.records[1].columns["rating"] is None and res.records[2].columns["rating"] == 2.0
    assert res.records[0].display_path == "data/real/a.png"
    assert res.base_dir == project / "data" / "real"
    decoded = decode_record(res.records[0])
    assert decoded.image.shape == (8, 10, 3) and len(decoded.content_hash) == 64


def test_missing_column_names_manifest_column_existing_columns_and_a_guess(project):
    arm = images_arm(folder="data/real", manifest="data/real.csv", strata="Race", factors=["gender"])
    res = load_manifest(arm, project, columns=["torso_mask"])
    assert not res.ok and res.records == ()
    codes = [d.code for d in res.diagnostics]
    assert codes == ["E0702", "E0702", "E0702"]
    first = res.diagnostics[0]
    assert first.message == "column 'Race' not found in manifest 'data/real.csv' (arm 'real', strata)"
    assert first.path == "data/real.csv"
    assert first.help == "did you mean 'race'?"
    assert first.notes == ("the manifest's columns are: id, path, race, prompt_id, rating",)
    assert res.diagnostics[1].message == "column 'gender' not found in manifest 'data/real.csv' (arm 'real', factors)"
    assert res.diagnostics[1].help == "add the column to the manifest, or name an existing column in the spec"
    assert res.diagnostics[2].message == ("column 'torso_mask' not found in manifest 'data/real.csv' "
                                          "(arm 'real', a column the spec refers to)")


def test_duplicate_ids_name_both_rows(project):
    pd.DataFrame({"id": ["a", "b", "a"], "path": ["a.png", "b.png", "c.png"]}).to_csv(
        project / "dup.csv", index=False)
    res = load_manifest(images_arm(folder="data/real", manifest="dup.csv"), project)
    assert [d.code for d in res.diagnostics] == ["E0703"]
    assert res.diagnostics[0].message == "duplicate image id 'a' in manifest 'dup.csv': row 1 and row 3"


def test_missing_file_is_excluded_with_row_and_path_or_fails(project):
    pd.DataFrame({"id": ["a", "b"], "path": ["a.png", "gone.png"]}).to_csv(project / "m.csv", index=False)
    res = load_manifest(images_arm(folder="data/real", manifest="m.csv"), project)
    assert res.ok and [r.image_id for r in res.records] == ["a"]
    assert res.exclusions == (Exclusion("real", "b", 2, "manifest",
                                        "image file not found (row 2, data/real/gone.png)"),)
    failing = load_manifest(images_arm(folder="data/real", manifest="m.csv"), project, on_error="fail")
    assert not failing.ok and failing.exclusions == ()
    d = failing.diagnostics[0]
    assert (d.code, d.message) == ("E0704", "arm 'real': image file not found (row 2, data/real/gone.png)")
    assert d.help == "fix the path in the manifest (paths are relative to 'data/real') or remove the row"
    # the arm's own policy wins over the audit's
    arm_skip = images_arm(folder="data/real", manifest="m.csv", on_error="skip")
    assert load_manifest(arm_skip, project, on_error="fail").ok


def test_unreadable_file_and_bomb_are_caught_by_the_header_probe(project):
    (project / "data" / "real" / "text.png").write_text("not an image")
    write_images(project / "data" / "real", ["big.png"], size=(40, 50))
    pd.DataFrame({"id": ["a", "t", "g"], "path": ["a.png", "text.png", "big.png"]}).to_csv(
        project / "m.csv", index=False)
    res = load_manifest(images_arm(folder="data/real", manifest="m.csv", max_pixels=1000), project)
    assert [r.image_id for r in res.records] == ["a"]
    assert [e.reason for e in res.exclusions] == [
        "not a readable image file (unknown or corrupt format) (row 2, data/real/text.png)",
        "image is 50×40 = 2,000 pixels, more than max_pixels (1,000); refused as a possible "
        "decompression bomb (raise max_pixels on the arm if you trust this file) (row 3, data/real/big.png)",
    ]
    assert {e.stage for e in res.exclusions} == {"manifest"}
    errors = exclusion_errors(res.exclusions, path="m.csv")
    assert errors[0].code == "E0706"
    assert errors[0].message == ("arm 'real': image 't' cannot be used: not a readable image file "
                                 "(unknown or corrupt format) (row 2, data/real/text.png)")


def test_decode_failure_after_the_probe_becomes_a_decode_exclusion(project):
    res = load_manifest(images_arm(folder="data/real", manifest="data/real.csv"), project)
    data = (project / "data" / "real" / "b.png").read_bytes()
    (project / "data" / "real" / "b.png").write_bytes(data[:60])  # header intact, pixels cut
    out = decode_record(res.records[1])
    assert isinstance(out, Exclusion) and (out.stage, out.row, out.image_id) == ("decode", 2, "b")
    assert out.reason.startswith("image data is corrupt or truncated (")
    assert out.reason.endswith("(row 2, data/real/b.png)")


def test_empty_and_missing_manifests(project):
    pd.DataFrame({"id": [], "path": []}).to_csv(project / "empty.csv", index=False)
    res = load_manifest(images_arm(folder="data/real", manifest="empty.csv"), project)
    assert [(d.code, d.message) for d in res.diagnostics] == [
        ("E0705", "manifest 'empty.csv' of arm 'real' has no images")]
    res = load_manifest(images_arm(folder="data/real", manifest="nope.csv"), project)
    assert [(d.code, d.message) for d in res.diagnostics] == [
        ("E0701", "manifest 'nope.csv' of arm 'real' not found")]
    (project / "empty_folder").mkdir()
    res = load_manifest(images_arm(folder="empty_folder"), project)
    assert [(d.code, d.message) for d in res.diagnostics] == [
        ("E0705", "folder 'empty_folder' of arm 'real' has no images")]


def test_paths_may_not_leave_the_project(project):
    write_images(project.parent / f"{project.name}_outside", ["x.png"])
    pd.DataFrame({"id": ["x"], "path": [f"../../../{project.name}_outside/x.png"]}).to_csv(
        project / "m.csv", index=False)
    res = load_manifest(images_arm(folder="data/real", manifest="m.csv"), project, root=project)
    assert res.exclusions[0].reason.startswith("image path in row 1 leaves the project folder: ")
    assert load_manifest(images_arm(folder="data/real", manifest="m.csv"), project).ok  # root=None


def test_folder_without_manifest_uses_file_stems(project):
    res = load_manifest(images_arm(folder="data/real"), project)
    assert res.ok and [(r.image_id, r.row) for r in res.records] == [("a", 1), ("b", 2), ("c", 3)]
    write_images(project / "data" / "real", ["a.jpg"])
    res = load_manifest(images_arm(folder="data/real"), project)
    assert [d.message for d in res.diagnostics] == [
        "duplicate image id 'a' in folder 'data/real': a.jpg and a.png"]


def test_pairs_become_two_images_relative_to_the_manifest(project):
    write_images(project / "data" / "wide" / "img", ["f1.png", "p1.png", "f2.png", "p2.png"])
    pd.DataFrame({"id": ["q1", "q2"], "faithful": ["img/f1.png", "img/f2.png"],
                  "polished": ["img/p1.png", "img/p2.png"], "wide_prompt": ["a cat", "a dog"]}
                 ).to_parquet(project / "data" / "wide" / "pairs.parquet")
    arm = pairs_arm(manifest="data/wide/pairs.parquet", preferred="faithful", other="polished",
                    prompt="wide_prompt")
    res = load_manifest(arm, project)
    assert res.ok
    got = [(r.image_id, r.side, r.pair_id, r.cluster, r.prompt, r.row, r.display_path) for r in res.records]
    assert got == [
        ("q1:preferred", "preferred", "q1", "q1", "a cat", 1, "data/wide/img/f1.png"),
        ("q1:other", "other", "q1", "q1", "a cat", 1, "data/wide/img/p1.png"),
        ("q2:preferred", "preferred", "q2", "q2", "a dog", 2, "data/wide/img/f2.png"),
        ("q2:other", "other", "q2", "q2", "a dog", 2, "data/wide/img/p2.png"),
    ]
    bad = pairs_arm(manifest="data/wide/pairs.parquet", preferred="faithfull", other="polished")
    res = load_manifest(bad, project)
    assert res.diagnostics[0].message == ("column 'faithfull' not found in manifest "
                                          "'data/wide/pairs.parquet' (arm 'wide', preferred)")
    assert res.diagnostics[0].help == "did you mean 'faithful'?"


def test_a_pair_with_a_missing_side_is_excluded_whole(project):
    write_images(project / "pairs", ["f1.png", "p1.png", "f2.png"])
    pd.DataFrame({"id": ["q1", "q2"], "faithful": ["f1.png", "f2.png"], "polished": ["p1.png", "p2.png"]}
                 ).to_csv(project / "pairs" / "pairs.csv", index=False)
    res = load_manifest(pairs_arm(manifest="pairs/pairs.csv", preferred="faithful", other="polished"), project)
    assert [r.image_id for r in res.records] == ["q1:preferred", "q1:other"]
    assert [(e.image_id, e.row, e.reason) for e in res.exclusions] == [
        ("q2:other", 2, "image file not found (row 2, pairs/p2.png)"),
        ("q2:preferred", 2, "pair 'q2' (row 2) is incomplete: its other image was excluded"),
    ]


def test_folder_arm_asking_for_manifest_columns(project):
    res = load_manifest(images_arm(folder="data/real", cluster="prompt_id"), project)
    assert [d.message for d in res.diagnostics] == [
        "column 'prompt_id' not found in the listing of folder 'data/real' (an arm without a manifest "
        "has only id and path) (arm 'real', cluster)"]
