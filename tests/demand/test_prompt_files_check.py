"""E0852 at check (issue 26): a prompts file the run could not expand is refused by `check`, at `prompts:`."""

from __future__ import annotations

from scoreaudit.api import check

SPEC = ('audit "t" { version: 1 }\nscorer s = sharpness()\n'
        'arm gen = generate("tiny/pipe", prompts: template("a photo of a {job}", job: column(job, "jobs.csv")), '
        'seeds: 0..1, kind: synthetic)\n'
        'hypothesis H "t" {\n  factor_effect(job) < 0.5 on gen for s\n}\n')


def _codes(tmp_path, jobs: str | None):
    if jobs is not None:
        (tmp_path / "jobs.csv").write_text(jobs, encoding="utf-8")
    (tmp_path / "a.audit").write_text(SPEC, encoding="utf-8")
    checked = check(tmp_path / "a.audit", tables=False)
    return [(d.code, d.span.line, d.span.column) for d in checked.diagnostics if d.is_error]


def test_an_empty_prompts_column_is_refused_at_the_prompts_argument(tmp_path):
    assert _codes(tmp_path, "job\n") == [("E0852", 3, 33)]


def test_a_prompts_file_not_there_yet_passes_like_a_missing_manifest(tmp_path):
    assert _codes(tmp_path, None) == []


def test_a_readable_prompts_file_passes(tmp_path):
    assert _codes(tmp_path, "job\nnurse\ndoctor\n") == []
