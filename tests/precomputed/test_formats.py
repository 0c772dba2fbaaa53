"""Every file format gives the same cells; unreadable files are E0801/E0806 diagnostics, never tracebacks."""

from __future__ import annotations

import hashlib
import math

import pytest

from scoreaudit.runtime.precomputed import read_frame, read_long_table, read_records

from precomputed_helpers import frame_rows, write_table

ROWS = [
    {"id": "007", "operator": "light", "dose": -5, "scorer": "ir", "score": 0.25},
    {"id": "007", "operator": "light", "dose": 5, "scorer": "ir", "score": -1.5},
    {"id": "008", "operator": "original", "dose": 0, "scorer": "ir", "score": 2.0},
    {"id": "009", "operator": "light", "dose": 0.1, "scorer": "ir", "score": 3.125},
]
EXPECTED = [
    ("real", "007", "light", -5.0, "ir", 0.25, "s.{fmt}", 1),
    ("real", "007", "light", 5.0, "ir", -1.5, "s.{fmt}", 2),
    ("real", "008", "original", 0.0, "ir", 2.0, "s.{fmt}", 3),
    ("real", "009", "light", 0.1, "ir", 3.125, "s.{fmt}", 4),
]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl", "json"])
def test_each_format_gives_the_same_cells(folder, fmt):
    path = write_table(folder / f"s.{fmt}", ROWS)
    t = read_long_table(f"s.{fmt}", "scores", spec_dir=folder, arm="real")
    assert t.ok and not t.exclusions and not t.unused
    assert frame_rows(t.frame) == [tuple(x.format(fmt=fmt) if isinstance(x, str) else x for x in e)
                                   for e in EXPECTED]
    assert t.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert t.n_rows == 4 and t.path == f"s.{fmt}"


def test_ids_keep_their_text_in_csv(folder):
    # "007" must not become 7: ids are text in every format.
    write_table(folder / "s.csv", ROWS)
    assert list(read_long_table("s.csv", "scores", spec_dir=folder, arm="a").frame["image_id"])[:1] == ["007"]


def test_integer_ids_in_json_read_as_text(folder):
    write_table(folder / "s.json", [{"id": 7, "scorer": "ir", "score": 1}, {"id": 8.0, "scorer": "ir", "score": 2}])
    t = read_long_table("s.json", "scores", spec_dir=folder, arm="a")
    assert list(t.frame["image_id"]) == ["7", "8"]
    assert list(t.frame["operator"]) == ["original", "original"] and list(t.frame["dose"]) == [0.0, 0.0]


def test_json_lines_under_a_json_name(folder):
    write_table(folder / "s.json", ROWS, fmt="jsonl")
    t = read_long_table("s.json", "scores", spec_dir=folder, arm="real")
    assert len(t.frame) == 4 and t.ok


def test_jsonl_rows_are_line_numbers(folder):
    (folder / "s.jsonl").write_text('{"id": "a", "scorer": "ir", "score": 1}\n\n'
                                    '{"id": "b", "scorer": "ir", "score": null}\n')
    t = read_long_table("s.jsonl", "scores", spec_dir=folder, arm="real")
    assert [e.reason for e in t.exclusions] == [
        "s.jsonl row 3: the score is missing for scorer ir, original image; fix the value or remove the row "
        "(the image is left out wherever this score is needed)"]


def test_records_keep_raw_values(folder):
    write_table(folder / "r.json", [{"id": "p1", "x": 1.5, "y": None}, {"id": "p2", "z": "t"}])
    rec = read_records(folder / "r.json")
    assert rec.columns == ("id", "x", "y", "z") and rec.format == "json"
    assert rec.rows == ((1, {"id": "p1", "x": 1.5, "y": None}), (2, {"id": "p2", "z": "t"}))


def test_read_frame_for_json_manifests(folder):
    write_table(folder / "m.jsonl", [{"id": 1, "s": 0.5}, {"id": "x", "s": None}])
    df = read_frame(folder / "m.jsonl", text_columns=["id"])
    assert list(df["id"]) == ["1", "x"] and df["s"].iloc[0] == 0.5 and math.isnan(df["s"].iloc[1])


@pytest.mark.parametrize("name,content,message,help_part", [
    ("s.xlsx", "x", "cannot use scores table of arm 'real': s.xlsx: unsupported table format '.xlsx'",
     "JSON lines (.jsonl)"),
    ("s.json", '{"id": 1}', "cannot use scores table of arm 'real': s.json holds a JSON object, not a list of records",
     "JSON list"),
    ("s.json", '[{"id": 1}, 3]', "cannot use scores table of arm 'real': s.json record 2 is not a JSON object",
     "{...}"),
    ("s.jsonl", '{"id": 1}\n{"id": 2,\n', "cannot use scores table of arm 'real': s.jsonl line 2: not valid JSON "
     "(Expecting property name enclosed in double quotes at line 1, column 10)", "fix the JSON"),
    ("s.parquet", "not parquet", "cannot use scores table of arm 'real': cannot read s.parquet as parquet",
     "use CSV"),
])
def test_unreadable_files_are_e0801(folder, name, content, message, help_part):
    (folder / name).write_text(content)
    t = read_long_table(name, "scores", spec_dir=folder, arm="real")
    (d,) = t.diagnostics
    assert d.code == "E0801" and d.severity == "error" and d.path == name
    assert d.message.startswith(message), d.message
    assert help_part in d.help
    assert not t.ok and len(t.frame) == 0


def test_missing_file_is_e0801(folder):
    (d,) = read_long_table("results/none.csv", "measures", spec_dir=folder).diagnostics
    assert (d.code, d.message, d.help) == (
        "E0801", "cannot use measures table of the audit block: results/none.csv not found",
        "check the path (it is relative to the spec's folder)")


def test_outside_the_project_is_e0806(folder):
    inner = folder / "proj"
    inner.mkdir()
    write_table(folder / "s.csv", ROWS)
    (d,) = read_long_table("../s.csv", "scores", spec_dir=inner, arm="real", root=inner).diagnostics
    assert (d.code, d.message) == ("E0806", "scores table ../s.csv (arm 'real') is outside the project folder")
    assert read_long_table("../s.csv", "scores", spec_dir=inner, arm="real", root=None).ok
