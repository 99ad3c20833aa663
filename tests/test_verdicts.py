"""The sections' verdicts (dipsy.evaluation.verdicts): levels on each side of every threshold, and
sentences that state the threshold they apply."""

from __future__ import annotations

import math

import pytest

from dipsy.evaluation import verdicts as v
from dipsy.evaluation.verdicts import Verdict


def two_way(tvd: float) -> dict:
    return {"2-way": {"mean_tvd": tvd, "worst_tvd": 2 * tvd, "worst_columns": ["a", "b"]}}


@pytest.mark.parametrize(
    "tvd, level, stated",
    [
        (0.03, "good", f"≤ {v.MARGINAL_TVD_OK}"),
        (v.MARGINAL_TVD_OK, "good", f"≤ {v.MARGINAL_TVD_OK}"),
        (0.084, "caution", f"> {v.MARGINAL_TVD_OK}"),
        (0.12, "poor", f"> {v.MARGINAL_TVD_FLAG}"),
    ],
)
def test_marginals(tvd, level, stated):
    got = v.marginals(two_way(tvd))
    assert got.level == level and stated in got.text and "a × b" in got.text


def test_marginals_fall_back_to_one_way_and_say_nothing_without_numbers():
    one = {"2-way": {"mean_tvd": math.nan}, "1-way": {"mean_tvd": 0.2, "worst_columns": ["a"]}}
    assert v.marginals(one).level == "poor" and v.marginals(one).text.startswith("One-way")
    assert v.marginals({}) is None and v.marginals({"2-way": {"mean_tvd": None}}) is None


def column(um: float, mean_syn: float, floor: dict | None = None, mean: float = 100.0) -> dict:
    return {"U_m": [um], "mean_original": mean, "mean_synthetic": [mean_syn], "floor": floor}


def floor(shift: float, um: float = 0.02, top: tuple = (250_000, 1_000_000, 0.8)) -> dict:
    lower, upper, share = top
    return {
        "U_m": um,
        "expected_mean_shift": shift,
        "mean_shift": shift,
        "bins": [{"bin": 9, "lower": lower, "upper": upper, "rows": 33, "shift": share * shift}],
    }


@pytest.mark.parametrize(
    "stats, level, stated",
    [
        # within both thresholds
        ({"x": column(0.03, 101.0)}, "good", f"U_m ≤ {v.NUMERIC_UM_FLAG}"),
        # the ECDF gap alone, no bins to blame
        ({"x": column(0.2, 100.0)}, "poor", f"U_m {v.NUMERIC_UM_FLAG}"),
        # CE's Income: the synthetic mean +7.7 %, the original redrawn in its bins +17 %, most of it
        # from the 250k–1M bin: the bins set the limit
        ({"Income": column(0.04, 107.7, floor(0.17))}, "caution", "250k–1M"),
        # far beyond the floor's own shift: the method, not the bins
        ({"x": column(0.04, 140.0, floor(0.10))}, "poor", "beyond what the bins explain"),
    ],
)
def test_numeric(stats, level, stated):
    got = v.numeric(stats)
    assert got.level == level and stated in got.text, got.text
    assert f"{v.MEAN_SHIFT_FLAG:.0%}" in got.text


def test_numeric_names_the_worst_column():
    got = v.numeric({"a": column(0.05, 102.0), "b": column(0.01, 130.0)})
    assert got.level == "poor" and got.text.startswith("b: ") and "+30 %" in got.text


def propensity(ratio: float, independent: float | None = None, floor: float | None = None, pairs: int = 6) -> dict:
    out = {"headline": "logistic", "logistic": {"ratio": [ratio], "design": [{"pairs": pairs}]}}
    if independent is not None:
        out["independent"] = {"ratio": independent}
    if floor is not None:
        out["floor"] = {"ratio": floor}
    return out


@pytest.mark.parametrize(
    "part, level, stated",
    [
        (propensity(1.4, 30.0), "good", f"≤ {v.PMSE_RATIO_OK:g}"),
        (propensity(5.6, 30.0), "caution", f"5.6 > {v.PMSE_RATIO_OK:g}"),
        # (20 − 1) / (30 − 1) = 0.66 of the way to the independent-columns yardstick
        (propensity(20.0, 30.0), "poor", f"{v.PMSE_INDEPENDENT_SHARE:.0%} of the way"),
        (propensity(5.6), "caution", f"> {v.PMSE_RATIO_OK:g}"),
        (propensity(3.0, 30.0, floor=2.6), "caution", "what the binning alone costs"),
    ],
)
def test_propensity(part, level, stated):
    got = v.propensity(part)
    assert got.level == level and stated in got.text, got.text
    assert "logistic with interactions" in got.text


def test_propensity_names_a_main_effects_model_as_such():
    assert "(logistic)" in v.propensity(propensity(1.2, pairs=0)).text and v.propensity({}) is None


def pair(corr: float, slope: float, slope_syn: float, x: str = "a=1", y: str = "b=1") -> dict:
    return {"x": x, "y": y, "corr_original": corr, "slope_original": slope, "slope_synthetic": [slope_syn]}


@pytest.mark.parametrize(
    "pairs, level",
    [
        ([pair(0.3, 0.4, 0.3)], "good"),  # kept (0.75 of the slope)
        ([pair(0.3, 0.4, 0.15)], "poor"),  # halved: one of one lost
        ([pair(0.3, 0.4, -0.1)], "poor"),  # reversed
        ([pair(0.3, 0.4, 0.9)], "poor"),  # more than doubled
        ([pair(0.05, 0.4, 0.0)], None),  # under the material correlation: not judged
        ([pair(0.3, 0.4, 0.15)] + [pair(0.3, 0.4, 0.4)] * 5, "caution"),  # 1 of 6 lost: 17 % ≤ 20 %
    ],
)
def test_relationships_flag_a_slope_halved(pairs, level):
    got = v.relationships({"indicators": {"pairs": pairs}})
    assert (got.level if got else None) == level
    if got:
        assert f"|r| ≥ {v.MATERIAL_CORRELATION}" in got.text and f"under {v.SLOPE_KEPT:g}×" in got.text


def test_relationships_judge_numeric_pairs_by_their_correlation():
    num = {"pairs": [{"x": "u", "y": "w", "corr_original": 0.5, "corr_synthetic": [0.2]}]}
    got = v.relationships({"numeric": num})
    assert got.level == "poor" and "u ~ w: corr 0.5 → 0.2" in got.text


def coefficient(term: str, est: float, se: float, syn: float) -> dict:
    return {"term": term, "original": {"estimate": est, "se": se}, "synthetic": {"estimate": syn}, "std_diff": (syn - est) / se}


@pytest.mark.parametrize(
    "coefs, level, stated",
    [
        ([coefficient("Intercept", 10, 1, 10.5), coefficient("x", 2, 0.5, 1.8)], "good", f"within {v.STD_DIFF_FLAG}"),
        (
            [coefficient("Intercept", 10, 1, 13), coefficient("x", 2, 0.5, 1.8)],
            "caution",
            f"more than {v.STD_DIFF_FLAG} original SEs",
        ),
        # a significant slope halved: 2 → 0.9 (4 SE away, 45 % of the original)
        ([coefficient("x", 2, 0.5, 0.9)], "poor", "halved"),
        # the intercept's ratio is not a slope: far, but not "halved"
        ([coefficient("Intercept", 10, 1, 4)], "caution", "Intercept"),
        # an insignificant slope halved is noise: judged by its standardised difference only
        ([coefficient("x", 0.5, 0.5, 0.2)], "good", "within"),
    ],
)
def test_inference(coefs, level, stated):
    got = v.inference({"coefficients": coefs, "rule": "reiter2003-partial"})
    assert got.level == level and stated in got.text, got.text
    assert "one synthetic set" not in got.text


def test_every_failing_term_is_named():
    """Two slopes reversed and a third far off: the verdict names all three, the farthest first."""
    coefs = [
        coefficient("Intercept", 10, 1, 10.2),
        coefficient("age", 2, 0.5, -1.0),
        coefficient("C(sex)[T.M]", -1.13, 0.1, 0.02),
        coefficient("income", 1.0, 0.25, 1.8),  # 3.2 SE away, not lost (under twice the original)
    ]
    got = v.inference({"coefficients": coefs, "rule": "reiter2003-partial"})
    assert got.level == "poor" and got.text.startswith("2 slopes significant in the original are halved")
    assert got.text.index("age") < got.text.index("C(sex)[T.M]")  # the larger change first (reversed: 1.5 against 1.02)
    assert got.text.index("Also more than") < got.text.index("income (1 → 1.8, 3.2 SE)")


def test_one_set_intervals_say_what_they_ignore():
    got = v.inference({"coefficients": [coefficient("x", 2, 0.5, 1.9)], "rule": "single"})
    assert "one synthetic set" in got.text and "variance of synthesis and of the privacy noise" in got.text
    assert v.single_set("single") and not v.single_set("reiter2003-partial") and not v.single_set(None)
    assert v.single_set("reiter2003-partial", sets=1) and not v.single_set("reiter2003-partial", sets=3)
    found = v.verdicts({"dataset": {"sets": 1}, "inference": {"coefficients": [coefficient("x", 2, 0.5, 1.9)], "rule": "x"}})
    assert "one synthetic set" in found["inference"].text


def test_sensitive_takes_the_worse_of_slopes_and_tables():
    part = {"indicators": {"pairs": [pair(0.3, 0.4, 0.35, x="sex=1")]}, "tvd_mean": {"2-way": 0.02, "3-way": 0.2}}
    got = v.sensitive(part)
    assert got.level == "poor" and f"> {v.MARGINAL_TVD_FLAG}" in got.text  # mean TVD 0.11
    assert v.sensitive({"tvd_mean": {"2-way": 0.01}}).level == "good"
    assert v.sensitive({}) is None


def test_verdicts_of_an_evaluation_and_their_levels():
    found = v.verdicts({"marginals": two_way(0.03), "propensity": propensity(9.0, 10.0), "inference": {}})
    assert {k: x.level for k, x in found.items()} == {"marginals": "good", "propensity": "poor"}
    assert found["marginals"].to_dict() == {"level": "good", "text": found["marginals"].text}
    with pytest.raises(ValueError, match="level"):
        Verdict("fine", "no such level")
