"""The verdicts from yardsticks (dipsy.evaluation.yardsticks, numeric, relationships): the sampling
floor for the release's size and what a release without the joint structure gets at its budget, both
shown; for the marginals, the numeric columns and the relationships between columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.domain import Column, Domain
from dipsy.evaluation import verdicts as v
from dipsy.evaluation.numeric import numeric_summary
from dipsy.evaluation.relationships import relationships_section
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


# -- numeric columns: the sampling floor, the binning floor and a histogram at the same budget -----

NUMERIC = Domain(
    (
        Column("x", "numeric", lower=0, upper=100, bins=tuple(range(0, 101, 10))),
        Column("k", "integer", lower=0, upper=20),
    )
)


def skewed(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": np.minimum(rng.gamma(2.0, 10.0, n), 100.0), "k": rng.binomial(20, 0.3, n)})


def test_the_numeric_yardsticks_measure_what_they_say():
    original = skewed(4000, 3)
    y = numeric_summary(original, [original.iloc[:2000]], NUMERIC, seed=0)["x"]["yardsticks"]
    x = original["x"].to_numpy()
    assert y["rows"] == 2000 and y["noise"] is None and y["draws"] == 5
    # a resample of 2,000 moves the mean by one standard error of it, sd / sqrt(2000), in root mean square
    assert y["floor"]["mean_shift"] == pytest.approx(x.std() / math.sqrt(2000) / x.mean())
    # the KS distance of 2,000 resampled values from the 4,000 they come from: about 0.87 / sqrt(2000) = 0.019
    assert 0.012 < y["floor"]["U_m"] < 0.03
    # the exact histogram drawn uniformly inside its bins: the binning costs U_m, so more than sampling alone
    assert y["independent"]["U_m"] > y["floor"]["U_m"]
    noisy = numeric_summary(original, [original], NUMERIC, privacy={"rho_per_set": 1e-4, "relation": {"kind": "add-remove"}})
    assert noisy["x"]["yardsticks"]["noise"]["scale"] == pytest.approx(math.sqrt(2 / (2 * 1e-4)))  # ρ/2 per column
    assert noisy["x"]["yardsticks"]["independent"]["U_m"] > y["independent"]["U_m"]  # noise on top only loses more
    again = numeric_summary(original, [original.iloc[:2000]], NUMERIC, seed=0)["x"]["yardsticks"]
    assert again == y  # seeded: the same numbers every time


def test_a_resample_is_good_a_flat_column_is_poor_and_the_numbers_are_shown():
    original = skewed(3000, 4)
    rng = np.random.default_rng(5)
    resample = original.iloc[rng.integers(0, 3000, 3000)].reset_index(drop=True)  # seeded; passes 2 SE w.p. ≈ 0.95 a measure
    flat = resample.assign(x=rng.uniform(0, 100, 3000))  # x's values anywhere in its bounds
    privacy = {"rho_per_set": 0.5, "relation": {"kind": "add-remove"}}
    good = v.numeric(numeric_summary(original, [resample], NUMERIC, seed=0, privacy=privacy))
    assert good.level == "good", good.text
    # a resample lands past the band (2.24 floors for the column's two figures, Bonferroni at 5 %) on U_m
    # or the mean at times: over 30 resamples, never poor, and good about 19 times in 20 (28.5 expected)
    levels = []
    for k in range(30):
        again = original.iloc[np.random.default_rng([9, k]).integers(0, 3000, 3000)].reset_index(drop=True)
        levels.append(v.numeric(numeric_summary(original, [again], NUMERIC, seed=k, privacy=privacy)).level)
    assert "poor" not in levels and levels.count("good") >= 25, levels
    part = numeric_summary(original, [flat], NUMERIC, seed=0, privacy=privacy)
    poor = v.numeric(part)
    assert poor.level == "poor" and poor.text.startswith("Worst numeric column x: "), poor.text
    y = part["x"]["yardsticks"]
    for number in (y["floor"]["U_m"], y["independent"]["U_m"], part["x"]["floor"]["U_m"]):
        assert f"{number:.3g}" in poor.text
    assert "far is beyond 5 times" in poor.text  # the histogram at ρ = 0.5 is within twice the floor: the floor judges
    tiny = {"rho_per_set": 1e-5, "relation": {"kind": "add-remove"}}  # a histogram this noisy is off, the flat column more
    poor = v.numeric(numeric_summary(original, [flat], NUMERIC, seed=0, privacy=tiny))
    assert poor.level == "poor" and "no closer than the column's histogram alone" in poor.text, poor.text


def numeric_part(um: float, shift: float, floor: tuple, histogram: tuple | None, bins: dict | None = None) -> dict:
    y = {"rows": 1000, "floor": {"U_m": floor[0], "mean_shift": floor[1]}, "noise": None}
    y["independent"] = {"U_m": histogram[0], "mean_shift": histogram[1]} if histogram else None
    return {"x": {"U_m": [um], "mean_original": 100.0, "mean_synthetic": [100.0 * (1 + shift)], "floor": bins, "yardsticks": y}}


def test_the_numeric_verdict_reads_the_yardsticks_not_a_fixed_threshold():
    # U_m 0.12 failed the fixed 0.1; with sampling alone at 0.08 (a small set) it is near the floor: good
    assert v.numeric(numeric_part(0.12, 0.01, (0.08, 0.02), (0.3, 0.2))).level == "good"
    # U_m 0.04 and +2 % passed the fixed thresholds; against a floor of 0.003 and a histogram at 0.01: poor
    assert v.numeric(numeric_part(0.04, 0.02, (0.003, 0.003), (0.01, 0.01))).level == "poor"
    # closer than the histogram but three times the floor: caution, with the factor
    found = v.numeric(numeric_part(0.09, 0.0, (0.03, 0.02), (0.2, 0.1)))
    assert found.level == "caution" and "3.0 times" in found.text
    # closer than the histogram but six times the floor: far off, poor
    assert v.numeric(numeric_part(0.18, 0.0, (0.03, 0.02), (0.5, 0.1))).level == "poor"
    # without a histogram (a numeric column without bins): the floor alone
    assert v.numeric(numeric_part(0.09, 0.0, (0.03, 0.02), None)).level == "caution"


def test_a_mean_shift_the_bins_explain_is_put_down_to_the_bins():
    # CE's Income: +16 % against a binning floor of +17 % (most of it from 250k–1M), sampling ±3.4 %
    bins = {"U_m": 0.028, "expected_mean_shift": 0.17, "bins": [{"lower": 250_000, "upper": 1_000_000, "shift": 0.13}]}
    found = v.numeric(numeric_part(0.038, 0.16, (0.017, 0.034), (0.048, 0.21), bins))
    assert found.level == "good" and "250k–1M" in found.text and "narrower public bins" in found.text, found.text
    found = v.numeric(numeric_part(0.038, 0.40, (0.017, 0.034), (0.048, 0.21), bins))  # beyond twice the bins' +17 %
    assert found.level == "caution" and "+40 %" in found.text and "narrower public bins" not in found.text, found.text
    assert v.numeric(numeric_part(0.038, 0.90, (0.017, 0.034), (0.048, 0.21), bins)).level == "poor"  # 5.3 times


# -- relationships: the sampling floor, and independent columns losing every one ------------------

CATEGORIES = Domain(tuple(Column(c, "categorical", categories=tuple(range(k))) for c, k in (("a", 3), ("b", 3), ("c", 4))))


def test_relationships_of_a_resample_are_kept_and_of_shuffled_columns_lost():
    original = related(3000, 6)
    rng = np.random.default_rng(7)
    resample = original.iloc[rng.integers(0, 3000, 3000)].reset_index(drop=True)
    shuffled = pd.DataFrame({c: rng.permutation(original[c].to_numpy()) for c in "abc"})
    part = relationships_section(original, [resample], CATEGORIES, seed=0)
    material = part["floor"]["material"]
    assert material >= 6 and part["floor"]["rows"] == 3000 and len(part["floor"]["lost_by_draw"]) == 5
    good = v.relationships(part)
    assert good.level == "good" and f"would lose all {material}" in good.text, good.text
    poor = v.relationships(relationships_section(original, [shuffled], CATEGORIES, seed=0))
    assert poor.level == "poor" and f"{material} of the {material}" in poor.text and "every one" in poor.text, poor.text
    assert relationships_section(original, [resample], CATEGORIES, seed=0) == part  # seeded


def test_a_relationship_reversed_is_poor_and_named():
    original = related(3000, 8)
    flipped = original.assign(b=(original["b"] + 1) % 3)  # b follows a, one category on
    found = v.relationships(relationships_section(original, [flipped], CATEGORIES, seed=0))
    assert found.level == "poor" and "a=0 ~ b=0" in found.text and "(reversed)" in found.text, found.text
    assert "are reversed, though a resample of the original keeps their sign" in found.text


def indicator(x: str, slope: float, synthetic: float, resample: list[float]) -> dict:
    return {
        "x": x,
        "y": "b=1",
        "corr_original": 0.3,
        "slope_original": slope,
        "slope_synthetic": [synthetic],
        "slope_resample": resample,
    }


def test_the_relationship_verdict_counts_the_floor_and_names_every_lost_one():
    kept = [indicator(f"k{i}=1", 0.4, 0.4, [0.4] * 5) for i in range(5)]
    # one of six reversed: 17 % passed the share rule as caution; a reversal the resample keeps is poor
    part = {"indicators": {"pairs": [indicator("r=1", 0.4, -0.1, [0.4] * 5), *kept]}}
    found = v.relationships(part)
    assert found.level == "poor" and "r=1 ~ b=1 is reversed" in found.text, found.text
    # a weak one that resamples lose too (3 draws of 5), reversed: never good, caution
    part = {"indicators": {"pairs": [indicator("w=1", 0.4, -0.1, [0.1, 0.1, 0.1, 0.4, 0.4]), *kept]}}
    assert v.relationships(part).level == "caution"
    assert v.relationship_floor(part)["lost"] == pytest.approx(3 / 5)
    # two halved and one doubled: all three named, the largest change first
    lost = [indicator("h=1", 0.4, 0.1, [0.4] * 5), indicator("g=1", 0.4, 0.15, [0.4] * 5), indicator("d=1", 0.4, 1.0, [0.4] * 5)]
    found = v.relationships({"indicators": {"pairs": lost + kept + kept[:4]}})
    assert found.level == "poor" and "3 of the 12" in found.text and "25% of them lost beyond" in found.text, found.text
    assert found.text.index("d=1 ~ b=1") < found.text.index("h=1 ~ b=1") < found.text.index("g=1 ~ b=1")
    # one of eighteen halved where resamples lose none: more than twice the floor, under a fifth beyond it
    assert v.relationships({"indicators": {"pairs": lost[:1] + kept * 3 + kept[:2]}}).level == "caution"
    # a loss resamples make as often: near the floor, good
    loose = [indicator(f"l{i}=1", 0.4, 0.1 if i == 0 else 0.4, [0.1, 0.4, 0.4, 0.4, 0.4]) for i in range(6)]
    assert v.relationships({"indicators": {"pairs": loose}}).level == "good"
