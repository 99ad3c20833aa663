"""dipsy.evaluate and `dipsy evaluate`: the glue around the metrics, the regression comparison."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.cli import main
from dipsy.errors import DipsyError

FORMULA = "Expenditure ~ Income + C(UrbanRural)"


@pytest.fixture(scope="module")
def ce():
    return pd.read_csv(CE_DATA)


def copy_release(folder, frame, sets=1):
    """A 'release' whose sets are the original itself: every distance must be zero."""
    folder.mkdir()
    for k in range(1, sets + 1):
        frame.to_csv(folder / f"synthetic_{k}.csv", index=False)
    dipsy.Domain.load(CE_DOMAIN).save(folder / "domain.yaml")
    privacy = {"definition": "none", "neighbouring": "-", "public": [], "mechanism": "copy", "composition": "-", "sets": sets}
    meta = {
        "release": "records",
        "method": "copy",
        "sets": sets,
        "privacy": privacy,
        "combining_rule": "single" if sets == 1 else "reiter2003-partial",
    }
    (folder / "release.json").write_text(json.dumps(meta))
    return folder


@pytest.fixture(scope="module")
def copied(tmp_path_factory, ce):
    """CE evaluated against a copy of itself by ``dipsy.evaluate(..., report=PATH)``: one evaluation (seconds
    of CPU) for the two tests that read its metrics and its page. Its ledger and record of ledgers are its
    own, as the autouse fixture gives each test (a module's fixture is set up before it)."""
    folder = tmp_path_factory.mktemp("copied")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DIPSY_LEDGER", str(folder / "ledger.sqlite"))
        env.setenv("DIPSY_CONFIG_DIR", str(folder / "config"))
        metrics = dipsy.evaluate(ce, copy_release(folder / "copy", ce), formula=FORMULA, report=folder / "r" / "report.html")
    return metrics, folder


def test_identical_data_score_perfectly(copied):
    metrics = copied[0]
    assert metrics["marginals"]["2-way"]["worst_tvd"] == 0
    assert metrics["marginals"]["k_marginal_score"]["score"] == 1000
    assert all(v == 0 for col in metrics["numeric"].values() for v in col["U_m"])
    for row in metrics["inference"]["coefficients"]:
        assert row["synthetic"]["estimate"] == pytest.approx(row["original"]["estimate"])
        assert row["ci_overlap"] == pytest.approx(1.0) and row["std_diff"] == pytest.approx(0.0, abs=1e-9)
    assert metrics["inference"]["rule"] == "single"


def test_the_api_writes_the_report_with_the_metrics(tmp_path, ce, copied, private_ledger):
    """dipsy.evaluate(..., report=PATH) writes the same HTML report as `dipsy evaluate --report`."""
    metrics, written = copied
    page = (written / "r" / "report.html").read_text(encoding="utf-8")
    assert metrics["release"]["method"] == "copy" and "Privacy" in page and FORMULA.split(" ~ ")[0] in page
    folder = written / "copy"
    for target in (folder / "release.json", private_ledger):  # a file of the release; the test's $DIPSY_LEDGER
        before = target.read_bytes() if target.exists() else None
        with pytest.raises(DipsyError, match="report= names"):
            dipsy.evaluate(ce, folder, report=target)
        assert (target.read_bytes() if target.exists() else None) == before


def test_columns_released_as_they_are_get_a_score_of_their_own(tmp_path, ce):
    """A release that repeats Race and UrbanRural (its relation's public columns) and shuffles the
    rest: the whole-file score counts the repeated pair at TVD 0; the synthesized score leaves it out."""
    shuffled = ce.copy()
    for c in ("Income", "Expenditure"):
        shuffled[c] = shuffled[c].sample(frac=1.0, random_state=1).to_numpy()
    folder = copy_release(tmp_path / "rel", shuffled)
    meta = json.loads((folder / "release.json").read_text())
    meta["privacy"]["relation"] = {"kind": "substitute-values", "public": ["Race", "UrbanRural"]}
    (folder / "release.json").write_text(json.dumps(meta))
    marginals = dipsy.evaluate(ce, folder, report=tmp_path / "report.html")["marginals"]
    part = marginals["synthesized"]
    assert "All-pairs score over the synthesized columns" in (tmp_path / "report.html").read_text(encoding="utf-8")
    pairs = [m for m in marginals["2-way"]["marginals"] if set(m["columns"]) != {"Race", "UrbanRural"}]
    assert part["repeated"] == ["UrbanRural", "Race"] or part["repeated"] == ["Race", "UrbanRural"]
    assert part["pairs"] == len(pairs) == marginals["2-way"]["count"] - 1
    assert part["score"] == pytest.approx(1000 * (1 - sum(m["tvd"][0] for m in pairs) / len(pairs)))
    assert part["score"] < marginals["k_marginal_score"]["score"]
    assert "synthesized" not in dipsy.evaluate(ce, copy_release(tmp_path / "plain", shuffled))["marginals"]


def test_two_identical_sets_combine_with_no_between_variance(tmp_path, ce):
    metrics = dipsy.evaluate(ce, copy_release(tmp_path / "copy2", ce, sets=2), formula=FORMULA)
    row = metrics["inference"]["coefficients"][1]
    assert metrics["inference"]["rule"] == "reiter2003-partial"
    assert row["synthetic"]["variance"] == pytest.approx(row["original"]["se"] ** 2)


def test_a_dp_release_is_evaluated_with_its_statement(tmp_path, ce):
    release = dipsy.synthesize(ce, CE_DOMAIN, epsilon=10.0, sets=2)
    metrics = dipsy.evaluate(ce, release, formula=FORMULA)
    assert metrics["privacy"]["epsilon_total"] == 10.0 and metrics["dataset"]["sets"] == 2
    assert 0 < metrics["marginals"]["1-way"]["mean_tvd"] < 0.5
    assert len(metrics["inference"]["coefficients"]) == 3
    json.dumps(dipsy.evaluation.jsonable(metrics), allow_nan=False)  # JSON-ready


def test_bad_formula_and_table_release_are_clear_errors(tmp_path, ce):
    with pytest.raises(DipsyError, match="cannot fit"):
        dipsy.evaluate(ce, copy_release(tmp_path / "c", ce), formula="Nope ~ Income")
    rel = tmp_path / "table"
    dipsy.synthesize(ce, CE_DOMAIN, method="laplace-sanitizer", epsilon=1.0, columns=["Race"], release="table").save(rel)
    with pytest.raises(DipsyError, match="is a table"):
        dipsy.evaluate(ce, rel)


def test_cli_writes_metrics_and_report(tmp_path, capsys):
    rel = tmp_path / "rel"
    assert main(["synth", str(CE_DATA), "--domain", str(CE_DOMAIN), "--epsilon", "10", "--seed", "1", "--out", str(rel)]) == 0
    code = main(
        [
            "evaluate",
            str(CE_DATA),
            str(rel),
            "--formula",
            FORMULA,
            "--json",
            str(tmp_path / "m.json"),
            "--report",
            str(tmp_path / "r.html"),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "all-pairs score (dipsy's)" in out.out
    assert json.loads((tmp_path / "m.json").read_text())["inference"]["formula"] == FORMULA
    assert (tmp_path / "r.html").read_text().count("data:image/png;base64") >= 3
    assert main(["evaluate", str(CE_DATA), str(tmp_path / "missing")]) == 2
