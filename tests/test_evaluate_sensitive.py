"""S-004's utility outputs for synthetic sensitive columns (dipsy.evaluation.sensitive) and their
report section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.domain import Column, Domain
from dipsy.evaluation import evaluate
from dipsy.evaluation.report import render
from dipsy.evaluation.sensitive import sensitive_utility
from dipsy.errors import DipsyError

DOMAIN = Domain((
    Column("p", "categorical", categories=(0, 1)),
    Column("s", "categorical", categories=(0, 1)),
))


def test_hand_computed_proportions_tvd_and_slopes():
    original = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 0, 1, 1]})  # s follows p
    synthetic = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 1, 1, 1]})
    out = sensitive_utility(original, [synthetic], DOMAIN, ["s"])
    # cells (s, p) in C order: original (0.5, 0, 0, 0.5), synthetic (0.25, 0, 0.25, 0.5)
    assert out["proportions"]["original"] == [0.5, 0.0, 0.0, 0.5]
    assert out["proportions"]["synthetic"] == [[0.25, 0.0, 0.25, 0.5]]
    assert out["tables"] == [{"columns": ["s", "p"], "tvd": [0.25]}]
    assert out["proportions"]["r"][0] == pytest.approx(np.corrcoef([0.5, 0, 0, 0.5], [0.25, 0, 0.25, 0.5])[0, 1])
    pair = next(q for q in out["indicators"]["pairs"] if q["x"] == "s=1" and q["y"] == "p=1")
    # original: slope of 1[p=1] on 1[s=1] = P(p=1 | s=1) − P(p=1 | s=0) = 1 − 0; synthetic: 2/3 − 0
    assert pair["slope_original"] == pytest.approx(1.0) and pair["slope_synthetic"][0] == pytest.approx(2 / 3)


def ten_columns(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
    s = (rng.random(n) < np.where(a < 2, 0.7, 0.3)).astype(int)
    r = np.where(s == 1, rng.integers(0, 2, n), rng.integers(1, 3, n))
    return pd.DataFrame({"a": a, "b": b, "s": s, "r": r})


WIDE = Domain((Column("a", "categorical", categories=(0, 1, 2, 3)), Column("b", "categorical", categories=(0, 1, 2)),
               Column("s", "categorical", categories=(0, 1)), Column("r", "categorical", categories=(0, 1, 2))))


def test_an_exact_copy_agrees_everywhere():
    original = ten_columns(2000, 1)
    out = sensitive_utility(original, [original.copy()], WIDE, ["s", "r"])
    assert all(t["tvd"] == [0.0] for t in out["tables"])
    assert out["proportions"]["r"] == [pytest.approx(1.0)] and out["indicators"]["slope_r"] == [pytest.approx(1.0)]
    assert {tuple(t["columns"]) for t in out["tables"]} >= {("s", "a"), ("r", "b"), ("s", "r"), ("s", "r", "a")}
    logit = out["logit"]["s"]
    assert logit["response"] == "s = 0"  # the rarer category of a binary column
    for c in logit["coefficients"]:
        assert c["synthetic"]["estimate"] == pytest.approx(c["original"]["estimate"], rel=1e-6, abs=1e-9)
    assert "error" in out["logit"]["r"]  # three categories: not modelled


def test_a_level_missing_from_a_synthetic_set_is_reported_not_fatal():
    original = ten_columns(2000, 2)
    synthetic = original.copy()
    synthetic.loc[synthetic["a"] == 3, "a"] = 2  # a level of a predictor disappears
    out = sensitive_utility(original, [synthetic], WIDE, ["s"])
    assert "coefficients" in out["logit"]["s"] or "error" in out["logit"]["s"]


def test_an_rdt_release_gets_the_section_in_its_report(tmp_path):
    data = ten_columns(3000, 3)
    structure = tmp_path / "structure.csv"
    ten_columns(3000, 4).to_csv(structure, index=False)
    release = dipsy.synthesize(data, WIDE, method="rdt", epsilon=20.0, seed=1,
                               options={"sensitive": "s,r", "structure": str(structure), "n_b": 100, "leaf_min": 10})
    ev = evaluate(data, release)
    assert ev["sensitive"]["sensitive"] == ["s", "r"] and ev["sensitive"]["public"] == ["a", "b"]
    assert ev["sensitive"]["proportions"]["r"][0] > 0.9  # ε = 20: the trees keep the joint shares
    page = render(ev, data, release.tables, WIDE)
    section = page[page.find('id="sensitive"'):page.find('id="inference"')]
    assert "Sensitive attributes" in section and section.count("<img") >= 3 and "Not applicable" not in section
    other = dipsy.synthesize(data, WIDE, method="dirichlet-multinomial", epsilon=5.0, seed=1)
    plain = evaluate(data, other)
    assert plain["sensitive"] is None
    page = render(plain, data, other.tables, WIDE)
    assert "Not applicable: the release names no sensitive columns" in page
    asked = evaluate(data, other, sensitive=["s"])  # any release, sensitive columns named by the steward
    assert asked["sensitive"]["public"] == ["a", "b", "r"]
    with pytest.raises(DipsyError, match="'colour'"):
        evaluate(data, other, sensitive=["colour"])
