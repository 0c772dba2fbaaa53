"""`simulate --truth FILE` (issue 27): every key checked and located, truths merged over the spec's own.

Before: a misspelled key (`fidelty`) was ignored with exit 0, and a file naming one scorer dropped the
`planted(...)` parameters of every other scorer (they simulated the null truth, 0).
"""

from __future__ import annotations

import json
import math

import pytest

from scoreaudit import api, cli
from scoreaudit.diagnostics import DiagnosticError
from scoreaudit.exitcodes import Exit
from scoreaudit.stats.truthfile import check_truth, merged_truth

SPEC = '''audit "s" { version: 1 seed: 1 bootstrap: 200 }
scorer a = planted(fidelity: 0.8, noise: 0.1, seed: 1)
scorer b = planted(fidelity: 0.4, noise: 0.2, seed: 2)
scorer sharp = sharpness()
arm syn = images("data/syn", manifest: "data/syn.csv", kind: synthetic, cluster: prompt_id)
operator light = lab_shift(channel: L) doses -10..10 step 5
hypothesis H "h" { fidelity_index(light) > 0 on syn for each scorer }
'''


def _fidelity_truth(f: float, noise: float) -> float:
    """fidelity_index of −F·u² on doses −10..10 step 5 (u = d/10), in SD units sqrt(1 + noise²):
    F·mean(u²) over the positive doses = F·(0.25 + 1)/2."""
    return f * 0.625 / math.sqrt(1 + noise ** 2)


@pytest.fixture()
def spec(tmp_path):
    p = tmp_path / "s.audit"
    p.write_text(SPEC, encoding="utf-8")
    return p


def _truths(spec, tmp_path, truth: dict | None) -> dict[str, float]:
    args = ["simulate", str(spec), "--reps", "2", "--bootstrap", "50", "--quiet", "--out", str(tmp_path / "sim")]
    if truth is not None:
        (tmp_path / "t.json").write_text(json.dumps(truth), encoding="utf-8")
        args += ["--truth", str(tmp_path / "t.json")]
    assert cli.main(args) == Exit.OK
    rows = json.loads((tmp_path / "sim" / "simulation.json").read_text())["cells"]
    return {r["cell"].split("/")[1]: r["truth"] for r in rows}


def test_a_truth_file_keeps_the_planted_parameters_of_the_other_scorers(spec, tmp_path):
    got = _truths(spec, tmp_path, {"a": {"noise": 0.5}})
    assert got["a"] == pytest.approx(_fidelity_truth(0.8, 0.5))  # the file's noise over the spec's fidelity
    assert got["b"] == pytest.approx(_fidelity_truth(0.4, 0.2))  # the spec's own planted(...) parameters
    assert got["sharp"] == pytest.approx(0.0)  # a scorer of another kind: the null truth


def test_star_is_laid_over_every_scorer_key_by_key(spec, tmp_path):
    got = _truths(spec, tmp_path, {"*": {"noise": 1.0}, "b": {"fidelity": 1.0}})
    assert got["a"] == pytest.approx(_fidelity_truth(0.8, 1.0))
    assert got["b"] == pytest.approx(_fidelity_truth(1.0, 1.0))


def test_without_a_file_the_spec_truths_are_planted(spec, tmp_path):
    got = _truths(spec, tmp_path, None)
    assert got["a"] == pytest.approx(_fidelity_truth(0.8, 0.1))


def test_a_misspelled_key_is_a_located_error_with_did_you_mean(spec, tmp_path, capsys):
    text = '{\n  "a": {"noise": 0.5},\n  "b": {"fidelty": 0.5}\n}\n'
    (tmp_path / "t.json").write_text(text, encoding="utf-8")
    rc = cli.main(["simulate", str(spec), "--reps", "2", "--quiet", "--truth", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC, err
    assert f"{tmp_path / 't.json'}:3:9: error[E0740]" in err  # file, line, column of "fidelty"
    assert 'did you mean "fidelity"?' in err and "valid keys: fidelity, asymmetry, noise" in err


@pytest.mark.parametrize("truth,where,needle", [
    ({"c": {}}, '["c"]', 'unknown scorer or probe "c"'),
    ({"b": {"arms": {"sny": {"fidelity": 1}}}}, '["b"]["arms"]["sny"]', 'did you mean "syn"?'),
    ({"b": {"arms": {"syn": {"seed": 3}}}}, '["b"]["arms"]["syn"]["seed"]', 'unknown key "seed"'),
    ({"b": {"strata": {"tone": {}}}}, '["b"]["strata"]["tone"]', "is not a stratum"),
    ({"b": {"noise": -1}}, '["b"]["noise"]', "-1 is negative"),
    ({"b": {"fidelity": "high"}}, '["b"]["fidelity"]', "is not a finite number"),
    ({"b": {"fidelity": True}}, '["b"]["fidelity"]', "is not a finite number"),
    ({"b": {"factor": 3}}, '["b"]["factor"]', "is not a name"),
    ({"b": 0.5}, '["b"]', "is not an object"),
    ([1, 2], "", "not a JSON object"),
])
def test_every_bad_name_and_value_is_an_error(spec, truth, where, needle):
    ir = api.check(str(spec)).ir
    diags = check_truth(ir, truth)
    assert len(diags) == 1 and diags[0].code == "E0740", diags
    assert diags[0].message.startswith(f"truth{where}: ") and needle in diags[0].message + diags[0].help


def test_valid_keys_pass(spec):
    ir = api.check(str(spec)).ir
    good = {"*": {"noise": 1}, "a": {"fidelity": 0.3, "slope_by": None, "level": "1", "step": 0.5,
                                    "arms": {"syn": {"asymmetry": 0.2}}, "strata": {"tone=dark": {"effect": 0.1}}}}
    assert check_truth(ir, good) == []
    merged = merged_truth(ir, good)
    assert merged["a"]["fidelity"] == 0.3 and merged["b"]["fidelity"] == 0.4 and merged["b"]["noise"] == 1


def test_a_mapping_truth_is_checked_too(spec):
    with pytest.raises(DiagnosticError) as e:
        api.simulate(str(spec), reps=1, truth={"a": {"fidelty": 1}}, progress=False)
    assert "fidelty" in str(e.value)


def test_a_truth_file_that_is_not_json_is_located(spec, tmp_path, capsys):
    (tmp_path / "t.json").write_text('{"a": {"noise": 0.5,}}', encoding="utf-8")
    rc = cli.main(["simulate", str(spec), "--reps", "2", "--quiet", "--truth", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC and "t.json:1:21: error[E0740]: the truth file is not JSON" in err, err


@pytest.mark.parametrize("n,needle", [("1000000000000", "of memory for arms of 50 clusters and 3 cell(s)"),
                                      ("10", "cannot resolve the spec's alpha 0.05")])
def test_simulate_bootstrap_is_checked_like_the_specs(spec, capsys, n, needle):
    """`--bootstrap 1000000000000` asked numpy for 364 TiB (a traceback); 10 resamples cannot resolve alpha."""
    rc = cli.main(["simulate", str(spec), "--reps", "1", "--quiet", "--bootstrap", n])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC and "simulate --bootstrap: error[E0251]" in err and needle in err, err
    assert "Traceback" not in err
