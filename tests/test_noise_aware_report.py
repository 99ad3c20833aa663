"""The noise-aware intervals in what an evaluation shows: the HTML report's per-term conclusions and
the lines `dipsy evaluate` prints, for a release that published the noisy table of a declared model."""

from __future__ import annotations

import dataclasses
import html

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.cli import _print_conclusions, main
from dipsy.domain import Domain
from dipsy.domain.analyses import Analysis
from dipsy.evaluation.report import _conclusions, fmt

PLAIN = Domain.from_sizes({"y": 2, "x": 4, "z": 3})
DECLARED = dataclasses.replace(PLAIN, analyses=(Analysis("y ~ x", "ols"),))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One declared release and its evaluation (report written), and one without analyses, built once."""
    tmp = tmp_path_factory.mktemp("noise_aware")
    rng = np.random.default_rng(0)
    n = 3000
    x = rng.integers(0, 4, n)
    y = (rng.random(n) < 0.2 + 0.15 * x).astype(int)
    z = rng.integers(0, 3, n)
    df = pd.DataFrame({"y": y, "x": x, "z": z})
    kwargs = dict(method="privsyn", epsilon=1, delta=1e-9, seed=1, ledger=False, accept_noise=True, sets=2)
    declared = dipsy.synthesize(df, DECLARED, **kwargs)
    metrics = dipsy.evaluate(df, declared, report=tmp / "r.html")
    plain = dipsy.synthesize(df, PLAIN, **kwargs)
    plain_metrics = dipsy.evaluate(df, plain, formula="y ~ x", report=tmp / "plain.html")
    df.to_csv(tmp / "data.csv", index=False)
    declared.save(tmp / "rel")
    plain.save(tmp / "plain")
    return {"tmp": tmp, "metrics": metrics, "plain_metrics": plain_metrics}


def _model(metrics):
    (model,) = metrics["inference"]["models"]
    return model


def _term(model, term):
    return next(c for c in model["coefficients"] if c["term"] == term)


def _interval(part):
    return f"[{fmt(part['lower'])}, {fmt(part['upper'])}]"


def test_the_report_shows_the_noise_aware_interval_beside_the_original(built):
    model = _model(built["metrics"])
    assert model["noise_aware_rule"] and "noise_aware_error" not in model
    x = _term(model, "x")
    assert x["conclusion"] == {"original": "positive", "synthetic": "positive", "noise_aware": "positive"}
    page = html.unescape((built["tmp"] / "r.html").read_text(encoding="utf-8"))
    # the row of x: original estimate and interval, synthetic interval, noise-aware estimate and interval, in order
    row = (
        f'<td>x</td><td class="num">{fmt(x["original"]["estimate"])}</td><td class="num">{_interval(x["original"])}</td>'
        f'<td class="num">{_interval(x["synthetic"])}</td><td>same (positive)</td>'
        f'<td class="num">{fmt(x["noise_aware"]["estimate"])}</td><td class="num">{_interval(x["noise_aware"])}</td>'
        "<td>same (positive)</td>"
    )
    assert row in page
    assert "<th>noise-aware: conclusion</th>" in page
    assert f"Noise-aware intervals: {model['noise_aware_rule']}." in page
    assert "count the DP noise and the sampling of the confidential data" in page
    assert "holds only as far as the synthesizer kept the relationship" in page


def test_a_release_without_declared_analyses_shows_no_noise_aware_text(built):
    model = _model(built["plain_metrics"])
    assert not any(k.startswith("noise_aware") for k in model)
    assert not any("noise_aware" in c for c in model["coefficients"])
    page = (built["tmp"] / "plain.html").read_text(encoding="utf-8").lower()
    assert "noise-aware" not in page and "noise_aware" not in page
    assert "synthetic: conclusion" not in page  # the model renders as before


def test_the_table_says_where_a_conclusion_differs_and_shows_a_failed_fit():
    row = {
        "term": "x",
        "original": {"estimate": 0.5, "se": 0.1, "lower": 0.3, "upper": 0.7},
        "synthetic": {"estimate": 0.1, "variance": 0.04, "df": 30.0, "lower": -0.3, "upper": 0.5},
        "noise_aware": {"estimate": 0.4, "variance": 0.01, "lower": 0.2, "upper": 0.6},
        "conclusion": {"original": "positive", "synthetic": "unclear", "noise_aware": "positive"},
    }
    shown = _conclusions({"formula": "y ~ x", "coefficients": [row], "noise_aware_rule": "a <rule>"})
    assert "<td>differs: positive → unclear</td>" in shown and "<td>same (positive)</td>" in shown
    assert "Noise-aware intervals: a &lt;rule&gt;." in shown  # escaped
    failed = _conclusions({"formula": "y ~ x", "coefficients": [dict(row, noise_aware=None)], "noise_aware_error": "no <cells>"})
    assert "No noise-aware intervals: no &lt;cells&gt;." in failed and "noise-aware 95% CI" not in failed
    assert "<td>differs: positive → unclear</td>" in failed
    # without a conclusion recorded, it is read off the intervals
    bare = {k: v for k, v in row.items() if k != "conclusion"}
    assert "<td>differs: positive → unclear</td>" in _conclusions({"coefficients": [bare], "noise_aware_rule": "r"})
    assert _conclusions({"formula": "y ~ x", "coefficients": [row]}) == ""  # no new keys: nothing added


def test_the_cli_prints_a_noise_aware_line_per_term(built, capsys):
    tmp = built["tmp"]
    capsys.readouterr()
    assert main(["evaluate", str(tmp / "data.csv"), str(tmp / "rel")]) == 0
    said = capsys.readouterr().out
    model = _model(built["metrics"])
    x = _term(model, "x")
    line = next(s for s in said.splitlines() if s.startswith("  noise-aware  y ~ x  x: "))
    o = x["original"]
    assert line.endswith(f"(original {o['estimate']:.3g} [{o['lower']:.3g}, {o['upper']:.3g}]; conclusion same)"), line
    assert len([s for s in said.splitlines() if s.startswith("  noise-aware  y ~ x  ")]) == 2  # Intercept and x
    assert "conclusion differs" not in said
    capsys.readouterr()
    assert main(["evaluate", str(tmp / "data.csv"), str(tmp / "plain"), "--formula", "y ~ x"]) == 0
    assert "noise-aware" not in capsys.readouterr().out


def test_the_cli_says_where_a_conclusion_differs(capsys):
    row = {
        "term": "x",
        "original": {"estimate": 0.5, "lower": 0.3, "upper": 0.7},
        "synthetic": {"estimate": 0.1, "lower": -0.3, "upper": 0.5},
        "noise_aware": {"estimate": -0.4, "lower": -0.6, "upper": -0.2},
        "conclusion": {"original": "positive", "synthetic": "unclear", "noise_aware": "negative"},
    }
    capsys.readouterr()
    _print_conclusions({"formula": "y ~ x", "coefficients": [row]})
    said = capsys.readouterr().out.splitlines()
    assert said == [
        "  noise-aware  y ~ x  x: -0.4 [-0.6, -0.2] (original 0.5 [0.3, 0.7]; conclusion differs)",
        "  conclusion differs  y ~ x  x: synthetic unclear, original positive",
    ]
    _print_conclusions({"formula": "y ~ x", "coefficients": [], "noise_aware_error": "no cells"})
    assert capsys.readouterr().out.splitlines() == ["  noise-aware  y ~ x: not fitted (no cells)"]


def test_the_relationships_section_names_what_the_declared_analyses_protect():
    """The marginal methods' relationships are protected only where declared; a release of the whole table
    (dirichlet-multinomial) gets no such note."""
    from dipsy.evaluation.report import _relationships

    declared = {"indicators": {}, "numeric": {"pairs": []}, "protected": [["y", "x"]]}
    assert "Protected: y × x" in _relationships(declared)
    assert "Not protected: the domain declares no analysis" in _relationships(declared | {"protected": []})
    assert "rotected" not in _relationships({"indicators": {}, "numeric": {"pairs": []}})


def test_the_evaluation_lists_the_protected_pairs(built):
    assert built["metrics"]["relationships"]["protected"] == [["y", "x"]]
    assert built["plain_metrics"]["relationships"]["protected"] == []
    html = (built["tmp"] / "plain.html").read_text(encoding="utf-8")
    assert "Not protected: the domain declares no analysis" in html


def test_the_report_marks_a_model_the_release_did_not_measure_for_as_not_protected(built):
    assert built["metrics"]["inference"]["models"][0]["measured_for"] is True
    assert built["plain_metrics"]["inference"]["models"][0]["measured_for"] is False
    assert "Not protected: the release did not measure" in (built["tmp"] / "plain.html").read_text(encoding="utf-8")
    assert "Not protected" not in (built["tmp"] / "r.html").read_text(encoding="utf-8")


def test_each_terms_panel_draws_the_noise_aware_interval_below_the_others():
    from matplotlib.figure import Figure

    from dipsy.evaluation.plots import _term_panel

    part = {"estimate": 0.5, "lower": 0.4, "upper": 0.6}
    for term, rows in (
        ({"term": "x", "original": part, "synthetic": part}, ["synthetic", "original"]),
        ({"term": "x", "original": part, "synthetic": part, "noise_aware": part}, ["noise-aware", "synthetic", "original"]),
    ):
        ax = Figure().subplots()
        _term_panel(ax, term)
        assert [t.get_text() for t in ax.get_yticklabels()] == rows
        assert len(ax.lines) == 2 * len(rows)  # an interval and an estimate per row
