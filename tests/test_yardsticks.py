"""The marginal verdict from yardsticks (dipsy.evaluation.yardsticks): the sampling floor for the
release's size and independent columns at the release's budget, both shown."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.domain import Domain
from dipsy.evaluation import verdicts as v
from dipsy.evaluation.yardsticks import noise_per_column, two_way_yardsticks
from dipsy.privacy.conversions import zcdp_to_epsilon

DOMAIN = Domain.from_sizes({"a": 3, "b": 3, "c": 4})


def related(n: int, seed: int) -> pd.DataFrame:
    """b follows a nine times in ten, c is its own: a joint structure one-way tables lack."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 3, n))
    return pd.DataFrame({"a": a, "b": b, "c": rng.integers(0, 4, n)})


def test_the_noise_of_each_budget_form_and_relation():
    zcdp = noise_per_column({"rho_per_set": 0.5, "relation": {"kind": "substitute"}}, 4)
    assert zcdp["kind"] == "gaussian" and zcdp["scale"] == pytest.approx(math.sqrt(2) * math.sqrt(4 / 1.0))
    pure = noise_per_column({"definition": "pure-DP", "epsilon_per_set": 2.0, "relation": {"kind": "add-remove", "theta": 3}}, 4)
    assert pure["kind"] == "laplace" and pure["scale"] == pytest.approx(3 * 1 * 4 / 2.0)
    approx = noise_per_column({"epsilon_per_set": 1.0, "delta_per_set": 1e-9, "relation": {"kind": "add-remove"}}, 2)
    rho = approx["scale"] ** -2  # σ² = d / (2ρ) with d = 2
    assert zcdp_to_epsilon(rho, 1e-9) == pytest.approx(1.0)  # converts back to the release's ε at its δ
    assert noise_per_column({"differentially_private": False, "epsilon_per_set": 1.0}, 3) is None
    assert noise_per_column({"definition": "local-DP", "epsilon_per_set": 1.0}, 3) is None


def test_the_yardsticks_measure_what_they_say():
    original = related(4000, 0)
    y = two_way_yardsticks(original, [original.iloc[:2000]], DOMAIN, {})

    # independence loses each pair's relation: the TVD between its joint table and the product of its margins
    def lost(x: str, z: str) -> float:
        p = pd.crosstab(original[x], original[z], normalize=True).to_numpy()
        return 0.5 * np.abs(p - np.outer(p.sum(1), p.sum(0))).sum()

    assert y["noise"] is None and y["rows"] == 2000 and y["pairs"] == 3
    assert y["independent"] == pytest.approx(np.mean([lost("a", "b"), lost("a", "c"), lost("b", "c")]))
    assert lost("a", "b") > 0.5 > 0.02 > lost("a", "c")
    # the floor of 2,000 resampled rows over 9- and 12-cell tables: E TVD ≈ ½ sqrt(2K / (π n)) ≈ 0.02-0.03
    assert 0.01 < y["floor"] < 0.04
    noisy = two_way_yardsticks(original, [original], DOMAIN, {"rho_per_set": 1e-4, "relation": {"kind": "add-remove"}})
    assert noisy["independent"] > y["independent"]  # noise on top of independence only loses more


def test_a_resample_is_good_independent_columns_are_poor_and_both_numbers_are_shown():
    original = related(3000, 1)
    rng = np.random.default_rng(2)
    resample = original.iloc[rng.integers(0, 3000, 3000)].reset_index(drop=True)
    independent = pd.DataFrame({c: rng.permutation(original[c].to_numpy()) for c in "abc"})  # exact margins, no relation
    for table, level in ((resample, "good"), (independent, "poor")):
        release = dipsy.synthesize(table, DOMAIN, method="dirichlet-multinomial", epsilon=1e4, seed=0, accept_noise=True)
        found = dipsy.evaluate(original, release, DOMAIN)
        verdict, y = found["verdicts"]["marginals"], found["marginals"]["yardsticks"]
        assert verdict["level"] == level, verdict["text"]
        assert f"{y['floor']:.3g}" in verdict["text"] and f"{y['independent']:.3g}" in verdict["text"]


def test_the_verdict_reads_the_yardsticks_not_a_fixed_threshold():
    # a mean TVD of 0.04 passed the old fixed 0.05; against a floor of 0.005 and independence at 0.03 it is poor
    part = {"2-way": {"mean_tvd": 0.04}, "yardsticks": {"floor": 0.005, "independent": 0.03, "rows": 10**5, "noise": None}}
    assert v.marginals(part).level == "poor"
    # 0.12 failed the fixed 0.10; with 50 rows sampling alone costs 0.08 and independence 0.3: good
    part = {"2-way": {"mean_tvd": 0.12}, "yardsticks": {"floor": 0.08, "independent": 0.3, "rows": 50, "noise": None}}
    assert v.marginals(part).level == "good"
    part["2-way"]["mean_tvd"] = 0.2  # closer than independence, 2.5 × sampling's
    assert v.marginals(part).level == "caution" and "2.5 times" in v.marginals(part).text


def test_columns_released_as_they_are_are_judged_over_the_synthesized_pairs():
    # over every pair the release looks good (its repeated pairs are exact); over the synthesized pairs it is poor
    part = {
        "2-way": {"mean_tvd": 0.01},
        "synthesized": {"score": 920.0, "repeated": ["a", "b"]},
        "yardsticks": {
            "floor": 0.01,
            "independent": 0.05,
            "rows": 1000,
            "noise": None,
            "synthesized": {"floor": 0.01, "independent": 0.06, "pairs": 2},
        },
    }
    found = v.marginals(part)
    assert found.level == "poor" and "0.08" in found.text and "a, b released as they are" in found.text
