"""SDNist 2.x's k-marginal score, checked on fixtures whose numbers are derived by hand from its
definition (dipsy.evaluation.sdnist's module docstring)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dipsy.domain import Column, Domain
from dipsy.domain.missing import Missing
from dipsy.evaluation.sdnist import percentile_bins, sdnist_kmarginal

DOMAIN = Domain.from_sizes({"g": 2, "a": 2, "b": 2, "c": 2})
#: g a b c, four records: two in each group
ORIGINAL = pd.DataFrame([[0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 1, 1], [1, 0, 1, 1]], columns=list("gabc"))


def test_the_score_and_each_group_s_score_by_hand():
    synthetic = pd.DataFrame([[0, 0, 0, 0], [0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 1]], columns=list("gabc"))
    r = sdnist_kmarginal(ORIGINAL, [synthetic], DOMAIN, ["g"])
    # Densities over the whole file (N = M = 4). Pair (a, b): the cells g1·a0·b1 (.5 against .25) and
    # g1·a1·b1 (0 against .25) differ: L1 = .5, all in g1. Pair (a, c): g0·a1·c0, g0·a1·c1, g1·a0·c1,
    # g1·a1·c1 each .25 apart: L1 = 1, half in each group. Pair (b, c): g0·b1·c0 and g0·b1·c1: L1 = .5,
    # in g0. Mean L1 = 2/3: score 500 · (2 − 2/3).
    assert r["columns"] == ["a", "b", "c"] and r["pairs"] == 3
    assert r["score"] == pytest.approx(500 * (2 - 2 / 3))
    # Per group (share .5, so L1_g · 2, capped at 1): g0 0, 1, 1 and g1 1, 1, 0: each 1000 · (1 − 2/3).
    assert r["by_group"]["mean"] == [pytest.approx(1000 / 3)]
    assert [g["score"] for g in r["by_group"]["worst_groups"]] == [pytest.approx(1000 / 3)] * 2


def test_a_group_s_difference_is_capped_at_its_share():
    # Two synthetic records, both g0·a0·b0·c0: in every pair the g0 cells differ by .75 and .25 (L1 in g0
    # is 1, twice g0's share .5) and g1's cell by .5. Whole-file L1 1.5: score 250. Capped at .5 and
    # scaled by 2, each group's difference is 1 in every pair: both groups score 0 (uncapped, g0 -1000).
    synthetic = pd.DataFrame([[0, 0, 0, 0]] * 2, columns=list("gabc"))
    r = sdnist_kmarginal(ORIGINAL, [synthetic], DOMAIN, ["g"])
    assert r["score"] == pytest.approx(250.0)
    assert r["by_group"]["mean"] == [pytest.approx(0.0)] and r["by_group"]["worst"] == [pytest.approx(0.0)]


def test_synthetic_records_in_a_group_the_original_lacks_count_in_the_whole_score_only():
    domain = Domain.from_sizes({"g": 3, "a": 2, "b": 2})
    original = pd.DataFrame([[0, 0, 0], [1, 1, 1]], columns=list("gab"))
    synthetic = pd.DataFrame([[0, 0, 0], [2, 1, 1]], columns=list("gab"))
    r = sdnist_kmarginal(original, [synthetic], domain, ["g"])
    # one pair: g1·a1·b1 .5 against 0 and g2·a1·b1 0 against .5: L1 = 1, score 500
    assert r["score"] == pytest.approx(500.0) and r["by_group"]["groups_scored"] == 2
    by = {g["group"]["g"]: g["score"] for g in r["by_group"]["worst_groups"]}
    assert by == {"0": pytest.approx(1000.0), "1": pytest.approx(0.0)}


def test_percentile_bins_follow_sdnists_ranks_with_ties():
    # 10 values, ranks averaged over ties: 1 1 → 1.5/10 = .15 → bin 3; 2 → .3 → 6; 3 3 3 → .5 → 10;
    # 4 → .7 → 14; 5 → .8 → 16; 6 → .9 → 18; 7 → 1 → 19.
    o = np.array([1, 1, 2, 3, 3, 3, 4, 5, 6, 7], dtype=float)
    expected = [3, 3, 6, 10, 10, 10, 14, 16, 18, 19]
    ranks = pd.Series(o).rank(pct=True)
    assert [min(int(20 * x), 19) for x in ranks] == expected  # SDNist's formula, as written
    b, s = percentile_bins(o, np.array([-5, 1, 1.5, 2, 2.01, 6.5, 7, 100, np.nan]))
    assert b.tolist() == expected
    # by the original's bin tops: ≤ 1 → 3, (1, 2] → 6, (3, 4]… , beyond 6 (the last top but one) → 19
    assert s.tolist() == [3, 3, 6, 6, 10, 19, 19, 19, -1]


def test_numbers_are_binned_and_each_missing_state_is_a_bin_of_its_own():
    x = Column("x", "integer", lower=0, upper=100, missing=Missing(empty="not asked", codes=((-8, "refused"),)))
    domain = Domain((Column("g", "categorical", categories=("u", "v")), Column("a", "categorical", categories=("p", "q")), x))
    rng = np.random.default_rng(0)
    values = pd.Series(rng.integers(0, 101, 400), dtype=object)
    values[:40], values[40:60] = None, -8
    original = pd.DataFrame({"g": rng.choice(["u", "v"], 400), "a": rng.choice(["p", "q"], 400), "x": values})
    assert sdnist_kmarginal(original, [original.copy()], domain, ["g"])["score"] == pytest.approx(1000.0)
    # refused read as "not asked": the two states' cells swap mass, so the score falls by exactly
    # their L1 = 2 · 20/400 (the pair (a, x) alone: one pair), whatever the numbers' bins
    moved = original.copy()
    moved.loc[40:59, "x"] = None
    assert sdnist_kmarginal(original, [moved], domain, ["g"])["score"] == pytest.approx(500 * (2 - 40 / 400))
    # every number replaced by the top of its bin (the original's largest number in it) changes nothing
    numbers = pd.to_numeric(original["x"].where(original.index >= 60)).to_numpy(dtype=float)
    bins, _ = percentile_bins(numbers, numbers)
    tops = {b: numbers[bins == b].max() for b in set(bins.tolist()) - {-1}}
    topped = original.copy()
    topped.loc[60:, "x"] = [int(tops[b]) for b in bins[60:]]
    assert sdnist_kmarginal(original, [topped], domain, ["g"])["score"] == pytest.approx(1000.0)
    # one number moved from the lowest bin to the highest moves 1/400 of density, twice over
    low = int(np.flatnonzero(bins == bins[60:].min())[0])
    topped.loc[low, "x"] = 100
    assert sdnist_kmarginal(original, [topped], domain, ["g"])["score"] == pytest.approx(500 * (2 - 2 / 400))


def test_subsample_baselines_rise_with_the_fraction_and_name_the_nearest():
    rng = np.random.default_rng(3)
    domain = Domain.from_sizes({"g": 4, "a": 5, "b": 5, "c": 3})
    original = pd.DataFrame({n: rng.integers(0, s, 4000) for n, s in zip("gabc", (4, 5, 5, 3))})
    r = sdnist_kmarginal(original, [original.sample(frac=0.4, random_state=1)], domain, ["g"])
    scores = [s["score"] for s in r["subsamples"]]
    assert scores[0] < scores[3] < scores[-1] < 1000  # 1 % of the rows against 20 % and 90 %
    assert 0.2 <= r["equivalent_fraction"][0] <= 0.6  # a 40 % sample scores like one
    assert r["by_group"]["baseline_fraction"] == 0.4
    assert 820 < r["by_group"]["baseline_mean"] < 950  # about 880 here; the full original would give 1000
    for group in r["by_group"]["worst_groups"]:  # a 40 % sample scores about as its 40 % baseline (sd ≈ 20)
        assert abs(group["score"] - group["baseline"]) < 70
