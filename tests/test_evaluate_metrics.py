"""Utility metrics of ``dipsy evaluate``, against cases computed by hand.

Marginal TVDs, ECDF distances and indicator slopes are exact functions of small tables worked
out below; pMSE is checked against its analytic null (Snoke et al. 2018): for two independent
samples of one distribution the standardised logistic pMSE is approximately
``(chi2_{k-1} - (k - 1)) / sqrt(2 (k - 1))``, so |z| > 4 has probability well under 1e-3.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN, ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from dipsy.domain import Column, Domain
from dipsy.errors import DataError
from dipsy.evaluation.marginals import BASELINE_FRACTIONS, kway_marginals, marginal_tvd
from dipsy.evaluation.numeric import QUANTILES, binning_floor, ecdf_distances, numeric_summary, redraw_in_bins
from dipsy.evaluation.propensity import CART_CAVEAT, MAX_DESIGN_COLUMNS, independent_columns, pmse, pmse_all
from dipsy.evaluation.relationships import indicator_relationships, numeric_correlations

ADULT = ROOT / "tests" / "data" / "adult.csv"
ADULT_DOMAIN = ROOT / "tests" / "data" / "adult-domain.json"


def plain(value) -> bool:
    """Only dicts with str keys, lists, str, int, float, bool and None (what json writes)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


def cat(name: str, k: int) -> Column:
    return Column(name, "categorical", categories=tuple(range(k)))


# -- marginal TVD ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p, q, tvd",
    [
        ([3, 1], [1, 1], 0.25),  # 0.5 (|3/4 - 1/2| + |1/4 - 1/2|)
        ([5, 0], [0, 2], 1.0),  # disjoint point masses
        ([2, 2], [7, 7], 0.0),  # same proportions, different totals
        ([1, 2, 1], [0, 2, 2], 0.25),  # 0.5 (1/4 + 0 + 1/4)
        ([[1, 0], [0, 1]], [[0, 1], [1, 0]], 1.0),
    ],
)
def test_marginal_tvd_hand_cases(p, q, tvd):
    assert marginal_tvd(np.array(p), np.array(q)) == pytest.approx(tvd)


def test_marginal_tvd_rejects_mismatched_or_empty_counts():
    with pytest.raises(ValueError, match="same cells"):
        marginal_tvd(np.array([1, 2]), np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="no mass"):
        marginal_tvd(np.array([0, 0]), np.array([1, 2]))


# -- k-way marginals ------------------------------------------------------------------------------


def test_kway_hand_case_two_columns():
    # Original: the four cells of a 2x2 table once each. Synthetic: only the diagonal, twice.
    # 1-way marginals agree (TVD 0); the 2-way TVD is 0.5 (4 x |1/4 - 1/2 or 0| / 2); score 500.
    domain = Domain((cat("a", 2), cat("b", 2)))
    orig = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1]})
    syn = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 0, 1, 1]})
    out = kway_marginals(orig, [syn, orig], domain)
    assert out["1-way"]["mean_tvd"] == 0 and out["1-way"]["count"] == 2
    assert out["2-way"]["marginals"] == [{"columns": ["a", "b"], "tvd": [0.5, 0.0]}]
    assert out["2-way"]["mean_tvd"] == 0.25 and out["2-way"]["worst_columns"] == ["a", "b"]
    assert out["3-way"]["count"] == 0 and math.isnan(out["3-way"]["mean_tvd"])
    assert out["k_marginal_score"]["per_set"] == [500.0, 1000.0]
    assert out["k_marginal_score"]["score"] == 750.0
    assert plain(out)


def test_kway_known_one_way_counts_and_column_selection():
    # a: original 3:1, synthetic 2:2, TVD 0.25. A numeric column without bins cannot be counted,
    # and a domain column missing from the data is left out.
    domain = Domain((cat("a", 2), Column("x", "numeric", lower=0, upper=1), cat("absent", 3)))
    orig = pd.DataFrame({"a": [0, 0, 0, 1], "x": [0.1, 0.2, 0.3, 0.4]})
    syn = pd.DataFrame({"a": [0, 1, 0, 1], "x": [0.5, 0.5, 0.5, 0.5]})
    out = kway_marginals(orig, [syn], domain)
    assert out["1-way"]["marginals"] == [{"columns": ["a"], "tvd": [0.25]}]
    assert out["2-way"]["count"] == 0 and math.isnan(out["k_marginal_score"]["score"])


def test_kway_identical_data_scores_1000_and_baselines_rise_with_the_fraction():
    rng = np.random.default_rng(3)
    domain = Domain((cat("a", 3), cat("b", 4), cat("c", 5), cat("d", 2)))
    orig = pd.DataFrame(
        {
            "a": rng.integers(0, 3, 20_000),
            "b": rng.integers(0, 4, 20_000),
            "c": rng.integers(0, 5, 20_000),
            "d": rng.integers(0, 2, 20_000),
        }
    )
    out = kway_marginals(orig, [orig.copy(), orig.sample(frac=1, random_state=1)], domain, three_way=2, seed=5)
    for order in ("1-way", "2-way", "3-way"):
        assert out[order]["mean_tvd"] == 0 and out[order]["worst_tvd"] == 0
    assert out["3-way"]["count"] == 2 and out["3-way"]["available"] == 4
    triples = [tuple(m["columns"]) for m in out["3-way"]["marginals"]]
    every = list(combinations("abcd", 3))  # the brief's definition: choice over the sorted list
    assert triples == [every[i] for i in sorted(np.random.default_rng(5).choice(4, size=2, replace=False))]
    assert out["k_marginal_score"]["score"] == 1000 and out["k_marginal_score"]["per_set"] == [1000, 1000]
    base = out["k_marginal_score"]["baselines"]
    assert [b["fraction"] for b in base] == list(BASELINE_FRACTIONS)
    assert [b["rows"] for b in base] == [200, 1000, 2000, 5000, 10_000]
    scores = [b["score"] for b in base]
    # The expected TVD of a subsample shrinks like sqrt((1 - f) / (f n)): gaps far beyond noise.
    assert all(lo < hi for lo, hi in zip(scores, scores[1:])) and scores[-1] < 1000
    again = kway_marginals(orig, [orig], domain, three_way=2, seed=5)
    assert [tuple(m["columns"]) for m in again["3-way"]["marginals"]] == triples  # same seed, same sample


def test_kway_large_integer_domains_are_counted_exactly():
    # 10^9 + 1 codes per column: counted over occupied cells only, same TVD as by hand.
    big = Column("v", "integer", lower=0, upper=10**9)
    domain = Domain((big, Column("w", "integer", lower=0, upper=10**9)))
    orig = pd.DataFrame({"v": [5, 5, 10**9, 7], "w": [1, 2, 3, 4]})
    syn = pd.DataFrame({"v": [5, 7, 7, 7], "w": [1, 2, 3, 4]})
    out = kway_marginals(orig, [syn], domain)
    # v: original {5: 2, 1e9: 1, 7: 1}, synthetic {5: 1, 7: 3}: 0.5 (1/4 + 1/4 + 2/4) = 0.5
    assert out["1-way"]["marginals"][0]["tvd"] == [0.5]
    # (v, w): rows (5,1) and (7,4) shared, the other two cells differ: 0.5 (4 x 1/4) = 0.5
    assert out["2-way"]["marginals"][0]["tvd"] == [0.5]


def test_kway_drops_invalid_original_rows_with_a_warning(caplog):
    domain = Domain((cat("a", 2),))
    orig = pd.DataFrame({"a": [0, 1, 9]})
    with caplog.at_level(logging.WARNING, logger="dipsy.evaluation.marginals"):
        out = kway_marginals(orig, [pd.DataFrame({"a": [0, 1]})], domain)
    assert out["1-way"]["mean_tvd"] == 0 and "outside the domain" in caplog.text


def test_kway_needs_a_synthetic_set():
    with pytest.raises(DataError, match="no synthetic set"):
        kway_marginals(pd.DataFrame({"a": [0]}), [], Domain((cat("a", 2),)))


# -- ECDF distances -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, y, um, ua",
    [
        # pooled 1, 2, 2, 3: F_x = 1/2, 1, 1, 1; F_y = 0, 1/2, 1/2, 1
        ([1, 2], [2, 3], 0.5, 0.75 / 4),
        # pooled 0, 1, 2, 3, 1.5: gaps 1/4, 1/2, -1/4, 0, -1/2
        ([0, 1, 2, 3], [1.5], 0.5, (1 / 16 + 1 / 4 + 1 / 16 + 0 + 1 / 4) / 5),
        # point masses at 0 (three) and 1 (one): gap 1 at the three zeros, 0 at the one
        ([0, 0, 0], [1], 1.0, 3 / 4),
        ([2, 1, 3], [3, 2, 1], 0.0, 0.0),
    ],
)
def test_ecdf_distances_hand_cases(x, y, um, ua):
    got = ecdf_distances(np.array(x), np.array(y))
    assert got == pytest.approx((um, ua))


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 30), elements=st.integers(-5, 5).map(float)),
    arrays(np.float64, st.integers(1, 30), elements=st.integers(-5, 5).map(float)),
)
def test_ecdf_um_is_the_ks_statistic_and_both_are_symmetric(x, y):
    um, ua = ecdf_distances(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # SciPy's p-value of tiny samples; the statistic is exact
        ks = stats.ks_2samp(x, y, method="asymp").statistic
    assert um == pytest.approx(ks)
    assert 0 <= ua <= um**2 + 1e-15
    assert ecdf_distances(y, x) == pytest.approx((um, ua))


def test_ecdf_distances_reject_an_empty_sample():
    with pytest.raises(ValueError, match="at least one value"):
        ecdf_distances(np.array([]), np.array([1.0]))


def test_numeric_summary_keys_means_and_quantiles():
    domain = Domain((Column("x", "integer", lower=0, upper=10), cat("g", 2), Column("z", "numeric", lower=0, upper=1)))
    orig = pd.DataFrame({"x": [1, 2], "g": [0, 1], "z": [0.25, 0.5]})
    syn = pd.DataFrame({"x": [2, 3], "g": [1, 1], "z": [0.25, 0.5]})
    out = numeric_summary(orig, [syn, orig], domain)
    assert list(out) == ["x", "z"]
    x = out["x"]
    assert x["U_m"] == [0.5, 0.0] and x["U_a"] == [0.1875, 0.0] and x["ks"] == [0.5, 0.0]
    assert x["U_m_mean"] == 0.25 and x["mean_original"] == 1.5 and x["mean_synthetic"] == [2.5, 1.5]
    assert x["quantiles"] == list(QUANTILES)
    assert x["quantiles_original"] == pytest.approx(np.quantile([1, 2], QUANTILES).tolist())
    assert out["z"]["U_m"] == [0.0, 0.0] and plain(out)
    assert x["floor"] is None and out["z"]["floor"] is None  # no bins, no binning floor
    assert numeric_summary(orig[["g"]], [syn[["g"]]], domain) == {}


# -- the binning floor ----------------------------------------------------------------------------


def test_binning_floor_by_hand():
    # Bins [0, 10) and [10, 100]: rows 1, 2, 3 (mean 2, a uniform draw averages 5) and 20 (a
    # uniform draw averages 55). Expected mean shift (3 (5 − 2) + (55 − 20)) / 4 = 11 on a mean of
    # 6.5; the top bin alone moves it by 35 / 4.
    column = Column("v", "numeric", lower=0, upper=100, bins=(0, 10, 100))
    domain = Domain((column,))
    x = np.array([1.0, 2.0, 3.0, 20.0])
    redrawn = redraw_in_bins(pd.DataFrame({"v": x}), domain, seed=4)["v"].to_numpy()
    assert np.all((redrawn[:3] >= 0) & (redrawn[:3] < 10)) and 10 <= redrawn[3] <= 100  # each stays in its bin
    assert np.array_equal(redrawn, redraw_in_bins(pd.DataFrame({"v": x}), domain, seed=4)["v"].to_numpy())  # seeded
    floor = binning_floor(x, redrawn, column, seed=4)
    assert floor["expected_mean_shift"] == pytest.approx(11 / 6.5)
    assert floor["mean_shift"] == pytest.approx(redrawn.mean() / 6.5 - 1)
    top = floor["bins"][0]
    assert (top["bin"], top["rows"], top["mean_original"], top["mean_uniform"]) == (1, 1, 20.0, 55.0)
    assert top["shift"] == pytest.approx(35 / 4 / 6.5) and floor["bins"][1]["shift"] == pytest.approx(9 / 4 / 6.5)
    assert floor["U_m"] == ecdf_distances(x, redrawn)[0] and floor["seed"] == 4 and plain(floor)
    assert binning_floor(x, redrawn, Column("v", "numeric", lower=0, upper=100)) is None


def test_binning_floor_of_integer_bins_uses_their_integers():
    # Integer bins [0, 5) and [5, 9]: the uniform means are (0 + 4) / 2 and (5 + 9) / 2.
    column = Column("k", "integer", lower=0, upper=9, bins=(0, 5, 9))
    x = np.array([0.0, 0.0, 9.0, 9.0])
    redrawn = redraw_in_bins(pd.DataFrame({"k": x}), Domain((column,)), seed=1)["k"].to_numpy()
    assert np.all(redrawn == np.round(redrawn)) and np.all(redrawn[:2] <= 4) and np.all(redrawn[2:] >= 5)
    floor = binning_floor(x, redrawn, column)
    assert [b["mean_uniform"] for b in sorted(floor["bins"], key=lambda b: b["bin"])] == [2.0, 7.0]
    assert floor["expected_mean_shift"] == pytest.approx((2 * (2 - 0) + 2 * (7 - 9)) / 4 / 4.5)


def test_ce_income_floor_names_the_top_bin():
    # CE's Income bins end with 250k–1M: its few records average far below the bin's midpoint of
    # 625k, so a uniform draw inside it moves the mean most; the synthetic sets carry the floor.
    ce = pd.read_csv(CE_DATA)
    domain = Domain.load(CE_DOMAIN)
    out = numeric_summary(ce, [ce], domain, seed=0)
    floor = out["Income"]["floor"]
    assert floor["expected_mean_shift"] > 0.05 and floor["bins"][0]["lower"] == 250_000
    assert floor["bins"][0]["shift"] > floor["expected_mean_shift"] / 2
    again = numeric_summary(ce, [ce], domain, seed=0)["Income"]["floor"]
    assert again == floor  # the evaluate seed fixes the redraw
    # a column's redraw does not depend on the others redrawn with it (the report redraws one)
    alone = redraw_in_bins(ce, domain.project(["Expenditure"]), seed=0)["Expenditure"]
    assert np.array_equal(alone, redraw_in_bins(ce, domain, seed=0)["Expenditure"])
    assert not np.array_equal(alone, redraw_in_bins(ce, domain, seed=1)["Expenditure"])


# -- pMSE -----------------------------------------------------------------------------------------


def mixed(n: int, rng: np.random.Generator, shift: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "g": rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1]),
            "h": rng.integers(0, 2, n),
            "x": np.clip(rng.normal(50 + shift, 10, n), 0, 100),
        }
    )


MIXED = Domain((cat("g", 4), cat("h", 2), Column("x", "numeric", lower=0, upper=100)))


@pytest.mark.parametrize(
    "interactions, k",
    [
        (False, 6),  # 1 + (4 − 1) + (2 − 1) + 1: intercept, g, h, x
        # main effects 5, the square of x 1, products g×h 3, g×x 3, h×x 1 (g by its 3 indicators
        # after the most common, h by 1, x by its value): 1 + 5 + 1 + 7
        (True, 14),
    ],
)
def test_pmse_null_is_snoke_et_al_formula(interactions, k):
    # N = 3000, c = 1000 / 3000.
    rng = np.random.default_rng(0)
    out = pmse(mixed(2000, rng), mixed(1000, rng), MIXED, interactions=interactions)
    n, c = 3000, 1 / 3
    assert out["parameters"] == k and out["c"] == pytest.approx(c)
    assert out["design"]["columns"] == k - 1 and out["design"]["pairs"] == (3 if interactions else 0)
    assert out["null_mean"] == pytest.approx((k - 1) * (1 - c) ** 2 * c / n)
    assert out["null_sd"] == pytest.approx(math.sqrt(2 * (k - 1)) * (1 - c) ** 2 * c / n)
    assert out["ratio"] == pytest.approx(out["pmse"] / out["null_mean"])
    assert out["standardised"] == pytest.approx((out["pmse"] - out["null_mean"]) / out["null_sd"])
    assert out["rows_used"] == {"original": 2000, "synthetic": 1000} and out["converged"] and plain(out)


def test_pmse_k_is_the_rank_of_the_design():
    # b copies a: the main effects a=1 and b=1 are one column, and the product a=1 × b=1 equals
    # it too. One free parameter beside the intercept, so the null is that of k = 2.
    domain = Domain((cat("a", 2), cat("b", 2)))
    rng = np.random.default_rng(3)
    frames = [pd.DataFrame({"a": v, "b": v}) for v in (rng.integers(0, 2, 400), rng.integers(0, 2, 300))]
    out = pmse(*frames, domain)
    assert out["design"]["columns"] == 3 and out["parameters"] == 2
    assert out["null_mean"] == pytest.approx((2 - 1) * (1 - 3 / 7) ** 2 * (3 / 7) / 700)  # c = 300 / 700


def test_the_design_is_bounded_and_says_how():
    # 30 columns of 5 categories: main effects 120, and 435 pairs of columns even at one
    # indicator each: more than the bound, so a seeded sample of pairs fills it.
    rng = np.random.default_rng(8)
    names = [f"c{k}" for k in range(30)]
    domain = Domain(tuple(cat(n, 5) for n in names))
    frames = [pd.DataFrame(rng.integers(0, 5, (300, 30)), columns=names) for _ in range(2)]
    out = pmse(*frames, domain, seed=2)
    design = out["design"]
    assert design["main"] == 120 and design["indicators_per_column"] == 1 and design["pairs_available"] == 435
    assert design["pairs"] == MAX_DESIGN_COLUMNS - 120 and design["columns"] <= MAX_DESIGN_COLUMNS
    assert "a seeded sample" in design["description"] and f"at most {MAX_DESIGN_COLUMNS}" in design["description"]
    assert pmse(*frames, domain, seed=2)["pmse"] == out["pmse"]  # the sample of pairs follows the seed


def test_headline_pmse_tells_an_independent_columns_release_from_the_originals_own_subsample():
    # CE, each column shuffled on its own: every marginal kept exactly, the Income–Expenditure
    # correlation (0.51) and the rest broken. Main effects see only marginals, so they score it no
    # worse than a subsample (its pMSE is ~0: the one-hot and standardised columns are identical
    # on both sides). With the interactions the headline separates them: under the null the
    # ratio is chi2_21 / 21, above 2 with probability 0.4 %, and the shuffle scores about 10.
    ce = pd.read_csv(CE_DATA)
    domain = Domain.load(CE_DOMAIN)
    shuffled = independent_columns(ce, seed=0)
    subsample = ce.sample(frac=0.5, random_state=1).reset_index(drop=True)
    main = {
        name: pmse(ce, other, domain, interactions=False)["ratio"]
        for name, other in (("shuffled", shuffled), ("subsample", subsample))
    }
    assert main["shuffled"] < 2 and main["subsample"] < 2  # the old headline: neither looks worse than chance
    head = {name: pmse(ce, other, domain)["ratio"] for name, other in (("shuffled", shuffled), ("subsample", subsample))}
    assert head["subsample"] < 2 and head["shuffled"] > 5 and head["shuffled"] > 4 * head["subsample"]


def test_pmse_of_identical_data_is_zero():
    frame = mixed(500, np.random.default_rng(1))
    out = pmse(frame, frame.copy(), MIXED)
    assert out["pmse"] < 1e-12 and out["c"] == 0.5


def test_pmse_same_distribution_is_near_its_null_and_a_shift_is_far():
    rng = np.random.default_rng(2024)
    orig, same, shifted = mixed(5000, rng), mixed(5000, rng), mixed(5000, rng, shift=3.0)
    # A 0.3 SD shift in x moves p by about c (1 - c) 0.3 z, adding ~ (0.075)^2 = 5.6e-3 to the
    # pMSE. Logistic null (k = 6, N = 10,000): 6.3e-5 +- 4.0e-5, so z ~ 140. CART null (leaves of
    # 100 rows): about 5.6e-3 +- 4.4e-4, so z ~ 10. Thresholds sit well inside both.
    for model, z_far in (("logistic", 50), ("cart", 6)):
        null = pmse(orig, same, MIXED, model=model, seed=1)
        # chi2_5 (logistic) exceeds 5 + 5 sqrt(10) with probability ~ 1e-3.
        assert abs(null["standardised"]) < 5
        far = pmse(orig, shifted, MIXED, model=model, seed=1)
        assert far["standardised"] > z_far and far["ratio"] > 1.5
    assert far["null"] == "permutation" and far["permutations"] == 20 and far["caveat"] == CART_CAVEAT


def test_pmse_subsamples_each_side_and_rejects_unknown_models():
    rng = np.random.default_rng(5)
    out = pmse(mixed(300, rng), mixed(250, rng), MIXED, model="cart", max_rows=200, permutations=5)
    assert out["rows_used"] == {"original": 200, "synthetic": 200} and out["min_samples_leaf"] == 4
    with pytest.raises(DataError, match="unknown pMSE model"):
        pmse(mixed(10, rng), mixed(10, rng), MIXED, model="forest")


def test_pmse_all_matches_pmse_per_set():
    rng = np.random.default_rng(7)
    orig, sets = mixed(800, rng), [mixed(600, rng), mixed(700, rng, shift=5)]
    out = pmse_all(orig, sets, MIXED, seed=3, permutations=5)
    for k, t in enumerate(sets):
        assert out["logistic"]["pmse"][k] == pmse(orig, t, MIXED, seed=3)["pmse"]
        assert out["cart"]["standardised"][k] == pmse(orig, t, MIXED, "cart", seed=3, permutations=5)["standardised"]
    assert out["rows_used"] == [{"original": 800, "synthetic": 600}, {"original": 800, "synthetic": 700}]
    assert out["caveat"] == CART_CAVEAT and out["max_rows"] == 20_000 and plain(out)
    assert out["logistic"]["pmse_mean"] == pytest.approx(np.mean(out["logistic"]["pmse"]))
    assert out["headline"] == "logistic" and out["floor"] is None  # x has no bins: no binning floor
    assert out["independent"]["ratio"] == pmse(orig, independent_columns(orig, 3), MIXED, seed=3)["ratio"]


def test_pmse_all_floor_is_the_original_redrawn_in_its_bins():
    binned = Domain((cat("g", 4), Column("x", "numeric", lower=0, upper=100, bins=(0, 40, 50, 60, 100))))
    orig = mixed(600, np.random.default_rng(9))[["g", "x"]]
    out = pmse_all(orig, [orig], binned, seed=5, permutations=2)
    assert out["floor"]["ratio"] == pmse(orig, redraw_in_bins(orig, binned, 5), binned, seed=5)["ratio"]
    assert out["floor"]["seed"] == 5 and plain(out)


# -- indicator slopes and correlations ------------------------------------------------------------


def test_indicator_slopes_and_correlations_match_numpy():
    rng = np.random.default_rng(11)
    domain = Domain((cat("a", 3), Column("n", "integer", lower=0, upper=9), cat("b", 2)))
    orig = pd.DataFrame({"a": rng.integers(0, 3, 60), "n": rng.integers(0, 10, 60), "b": rng.integers(0, 2, 60)})
    syn = pd.DataFrame({"a": rng.integers(0, 2, 40), "n": rng.integers(0, 10, 40), "b": rng.integers(0, 2, 40)})
    out = indicator_relationships(orig, [syn], domain)
    # Indicators a=0, a=1, a=2 and one of b's two (its mirror left out); pairs across columns: 3 x 1.
    assert out["indicators"] == 4 and out["pairs_available"] == 3 == out["pairs_used"] and out["mirrors_dropped"] == 1
    for pair in out["pairs"]:
        (cx, vx), (cy, vy) = (s.split("=") for s in (pair["x"], pair["y"]))
        for frame, corr, slope in (
            (orig, pair["corr_original"], pair["slope_original"]),
            (syn, pair["corr_synthetic"][0], pair["slope_synthetic"][0]),
        ):
            x = (frame[cx] == int(vx)).to_numpy(float)
            y = (frame[cy] == int(vy)).to_numpy(float)
            if x.std() == 0:  # a=2 never occurs in the synthetic set
                assert math.isnan(corr) and math.isnan(slope)
                continue
            assert corr == pytest.approx(np.corrcoef(x, y)[0, 1])
            assert slope == pytest.approx(np.polyfit(x, y, 1)[0])
            # The Duke report's identity r = beta_1 sqrt(p_x (1 - p_x) / (p_y (1 - p_y))).
            assert corr == pytest.approx(slope * math.sqrt(x.var() / y.var()))
    diffs = [abs(p["corr_synthetic"][0] - p["corr_original"]) for p in out["pairs"] if not math.isnan(p["corr_synthetic"][0])]
    assert out["corr_mean_abs_diff"] == pytest.approx(np.mean(diffs)) and plain(out)


def test_indicators_skip_constant_categories_and_sample_pairs_by_seed():
    domain = Domain((cat("a", 3), cat("b", 3), cat("c", 4)))
    rng = np.random.default_rng(0)
    orig = pd.DataFrame(
        {
            "a": np.r_[np.zeros(10, int), np.ones(10, int)],  # a=2 never: no indicator
            "b": np.zeros(20, int),  # b constant: none
            "c": rng.integers(0, 4, 20),
        }
    )
    orig.loc[:3, "c"] = [0, 1, 2, 3]
    out = indicator_relationships(orig, [orig], domain, max_pairs=5, seed=9, one_per_binary=False)
    assert out["indicators"] == 6 and out["pairs_available"] == 8 and out["pairs_used"] == 5
    assert all(p["x"].startswith("a=") and p["y"].startswith("c=") for p in out["pairs"])
    assert out == indicator_relationships(orig, [orig], domain, max_pairs=5, seed=9, one_per_binary=False)
    assert out["corr_mean_abs_diff"] == 0 and out["slope_mean_abs_diff"] == 0


def test_a_two_category_column_keeps_one_indicator_not_its_mirror():
    # h has two categories; 1[h = 0] = 1 − 1[h = 1], so its pairs with g's indicators are the same
    # numbers with the sign flipped. One is kept: the rarer category (here h = 1, 30 % of rows).
    rng = np.random.default_rng(12)
    g = rng.integers(0, 3, 1000)
    h = (rng.random(1000) < np.where(g == 0, 0.5, 0.2)).astype(int)
    orig = pd.DataFrame({"g": g, "h": h})
    domain = Domain((cat("g", 3), cat("h", 2)))
    both = indicator_relationships(orig, [orig], domain, one_per_binary=False)
    by = {(p["x"], p["y"]): p for p in both["pairs"]}
    for k in range(3):
        zero, one = by[(f"g={k}", "h=0")], by[(f"g={k}", "h=1")]
        assert zero["slope_original"] == pytest.approx(-one["slope_original"])
        assert zero["corr_original"] == pytest.approx(-one["corr_original"])
    kept = indicator_relationships(orig, [orig], domain)
    assert [p["y"] for p in kept["pairs"]] == ["h=1"] * 3 and kept["mirrors_dropped"] == 1
    assert kept["pairs_used"] == both["pairs_used"] // 2


def test_numeric_correlations_match_corrcoef_and_constant_columns_are_nan():
    rng = np.random.default_rng(4)
    domain = Domain(tuple(Column(n, "numeric", lower=-100, upper=100) for n in "uvw"))
    orig = pd.DataFrame(rng.normal(size=(50, 3)), columns=list("uvw"))
    syn = orig.assign(w=1.0)
    out = numeric_correlations(orig, [syn], domain)
    assert np.allclose(out["original"], np.corrcoef(orig.to_numpy(), rowvar=False))
    uv = out["pairs"][0]
    assert (uv["x"], uv["y"]) == ("u", "v") and uv["corr_synthetic"][0] == pytest.approx(uv["corr_original"])
    assert math.isnan(out["pairs"][1]["corr_synthetic"][0])  # (u, w) with w constant
    assert out["mean_abs_diff"] == pytest.approx(0, abs=1e-12)
    assert json.loads(json.dumps(out))["columns"] == ["u", "v", "w"]


# -- Adult against a bootstrap resample -----------------------------------------------------------


def test_adult_against_a_bootstrap_resample():
    # The sizes-form domain makes every column integer; the small ones are categorical here, so
    # every metric has work to do (the domain is public, so this is a choice, not a leak).
    sizes = Domain.load(ADULT_DOMAIN)
    nominal = {
        "workclass",
        "education-num",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "native-country",
        "income>50K",
    }
    domain = Domain(tuple(cat(c.name, c.size) if c.name in nominal else c for c in sizes.columns))
    orig = pd.read_csv(ADULT)
    boot = orig.iloc[np.random.default_rng(0).integers(0, len(orig), len(orig))].reset_index(drop=True)
    results = {
        "kway_marginals": kway_marginals(orig, [boot], domain),
        "numeric_summary": numeric_summary(orig, [boot], domain),
        # A cap of 5,000 rows keeps the models quick; the default (20,000) and its use are checked on small frames.
        "pmse_all": pmse_all(orig, [boot], domain, max_rows=5_000),
        "indicator_relationships": indicator_relationships(orig, [boot], domain),
        "numeric_correlations": numeric_correlations(orig, [boot], domain),
    }
    marg = results["kway_marginals"]
    assert marg["2-way"]["count"] == 91 and marg["3-way"]["count"] == 64
    # A bootstrap resample is a sample of the original: it should score like its large subsamples.
    assert marg["k_marginal_score"]["baselines"][1]["score"] < marg["k_marginal_score"]["score"] < 1000
    assert results["pmse_all"]["rows_used"] == [{"original": 5_000, "synthetic": 5_000}]
    assert results["indicator_relationships"]["pairs_used"] == 300
    assert set(results["numeric_summary"]) == {"age", "fnlwgt", "capital-gain", "capital-loss", "hours-per-week"}
    assert all(plain(r) for r in results.values())
