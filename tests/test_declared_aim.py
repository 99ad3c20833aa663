"""Declared analyses in ``aim`` (issue #31): the two-way marginals the domain's analyses need are
measured first at the share ``analysis_share`` of ρ, the analyses' column sets weigh more in the
workload, and nothing changes without them.

Domains are tiny and the fits short (few rounds, few mirror-descent steps): every new model
structure costs a JAX compilation. The statistical check uses fixed seeds and a tolerance from the
slope's sampling distribution.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_aim import fitted as aim_fitted

import dipsy
from dipsy.domain import Domain
from dipsy.domain.analyses import Analysis
from dipsy.methods.marginals.aim import AIM, declared_weight, declared_workload, workload_weights
from dipsy.methods.marginals.declared import ANALYSIS_SHARE, declared_split
from dipsy.privacy import ZCDP
from dipsy.privacy.budget import of_kind
from dipsy.privacy.measurement import DiscreteGaussian

RHO = 1.0
#: One round after the one-way marginals (T = d leaves 0.1 of AIM's ρ: the first round is the last).
OPTIONS = {"rounds": 4, "iterations": 10, "final_iterations": 10}
NAMES = ("a", "b", "x", "y")


def domain(*formulas: str, names: tuple[str, ...] = NAMES) -> Domain:
    """Integer columns 0..3 (so ``y ~ x`` is an OLS slope) and the analyses given."""
    columns = tuple(dipsy.Column(n, "integer", lower=0, upper=3) for n in names)
    return Domain(columns, analyses=tuple(Analysis(f) for f in formulas))


def tiny(n: int = 800, seed: int = 0) -> pd.DataFrame:
    """a and b strongly tied (what AIM's round finds first); y rises with x."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 4, n))
    x = rng.integers(0, 4, n)
    y = np.clip(x // 2 + rng.integers(0, 3, n) - 1 + (rng.random(n) < 0.5), 0, 3)
    return pd.DataFrame({"a": a, "b": b, "x": x, "y": y})


def fitted(data: pd.DataFrame, dom: Domain, seed: int = 0, **options):
    """test_aim's plan → session → fit, with this module's smaller options."""
    return aim_fitted(data, dom, seed=seed, **{**OPTIONS, **options})


def release(data: pd.DataFrame, dom: Domain, seed: int, **options) -> dipsy.Release:
    return dipsy.synthesize(data, dom, method="aim", rho=RHO, seed=seed, ledger=False, options={**OPTIONS, **options})


# -- the plan ----------------------------------------------------------------------------------------


def test_the_plan_measures_each_declared_pair_and_totals_exactly_rho():
    dom = domain("y ~ x + C(a)")
    plan = AIM(ZCDP(RHO), options=OPTIONS).plan(None, dom)
    d, T, s = len(NAMES), OPTIONS["rounds"], ANALYSIS_SHARE
    costs = [of_kind(m.cost, ZCDP).rho for m in plan.measurements]
    # the one-way marginals first, at 0.9 (1 − s)ρ/T each (σ² rounded up: at most that)
    assert [m.query.columns for m in plan.measurements[:d]] == [(n,) for n in NAMES]
    assert all(0.999 * 0.9 * (1 - s) * RHO / T <= c <= 0.9 * (1 - s) * RHO / T for c in costs[:d])
    # then one measurement per declared pair, y first, at its share of sρ (∝ cells^(2/3): equal here)
    declared = plan.measurements[d:]
    # (and the analysis's whole table, its sufficient statistic, published), each at its share of sρ ∝ cells^(2/3)
    assert [m.query.columns for m in declared] == [("y", "x"), ("y", "a"), ("y", "x", "a")]
    split = declared_split(dom, s * RHO)
    assert split[0][1] == pytest.approx(split[1][1]) and sum(r for _, r in split) == pytest.approx(s * RHO)
    for m, (columns, rho_i) in zip(declared, split):
        noise = m.mechanism_as(DiscreteGaussian)
        what = f"two-way marginal {columns[0]} × {columns[1]}" if len(columns) == 2 else "the whole y × x × a table"
        assert m.label == f"aim: declared analysis: {what}, discrete Gaussian σ² = {noise.sigma2}" and m.published
        assert noise == DiscreteGaussian.for_budget(ZCDP(rho_i), 1)
        assert 0.999 * rho_i <= of_kind(m.cost, ZCDP).rho <= rho_i
    # the rounds get the rest: exactly ρ declared in all
    assert of_kind(plan.adaptive, ZCDP).rho + sum(costs) == pytest.approx(RHO, abs=1e-15)
    assert of_kind(plan.declared(ZCDP(RHO)), ZCDP).rho == pytest.approx(RHO, abs=1e-15)
    p = plan.parameters
    assert p["analysis_share"] == s and p["declared_pairs"] == [["y", "x"], ["y", "a"]]
    assert p["declared_tables"] == [["y", "x", "a"]]
    assert p["declared_workload"] == [["a", "x", "y"]] and p["declared_weight"] == declared_weight(d, 3, s, 1)
    assert "declared analyses" in plan.mechanism and "declared analyses" in plan.composition
    # the steward's share
    plan = AIM(ZCDP(RHO), options={**OPTIONS, "analysis_share": 0.5}).plan(None, dom)
    assert sum(of_kind(m.cost, ZCDP).rho for m in plan.measurements[d:]) == pytest.approx(0.5 * RHO, rel=1e-3)
    assert plan.parameters["analysis_share"] == 0.5


def test_a_run_measures_the_pairs_right_after_the_one_ways_and_spends_exactly_rho():
    plan, session, model = fitted(tiny(), domain("y ~ x"))
    labels = [s.label for s in session.spends]
    assert [lab.split(",")[0] for lab in labels[:5]] == [
        "aim: one-way marginal a",
        "aim: one-way marginal b",
        "aim: one-way marginal x",
        "aim: one-way marginal y",
        "aim: declared analysis: two-way marginal y × x",
    ]
    assert all("round" in lab for lab in labels[5:]) and model.rounds >= 1
    total = sum(s.budget.rho for s in session.spends)
    assert total <= RHO * (1 + 1e-12) and total >= RHO * (1 - 1e-9)
    assert [h for h in model.history if h.get("declared")] == [
        {
            "round": 0,
            "marginal": ["y", "x"],
            "sigma2": str(plan.measurements[4].mechanism_as(DiscreteGaussian).sigma2),
            "declared": True,
        }
    ]
    # the noisy pair is in the model's estimate: its junction tree holds y and x together
    assert any({2, 3} <= set(c) for c in model.model.cliques)  # x, y


# -- the workload ------------------------------------------------------------------------------------


def test_the_workload_holds_the_declared_sets_with_their_weight():
    dom = domain("y ~ x + C(a)", "x ~ b")
    # the analyses' column sets, in ascending column order; a set over the cell limit gives its pairs
    assert declared_workload(dom, 64) == ((0, 2, 3), (1, 2))
    assert declared_workload(dom, 63) == ((2, 3), (0, 3), (1, 2))
    # weight: the declared sets' share of the workload's weight is about s, and at least 2
    c = declared_weight(4, 3, 0.25, 2)
    assert c == 2 and declared_weight(14, 3, 0.25, 1) == math.ceil(364 / 3) and declared_weight(14, 3, 0.5, 4) == 91
    w, base = workload_weights(4, 3, [(0, 2, 3), (1, 2)], c), workload_weights(4, 3)
    assert set(w) == set(base)  # 3-way sets: no new candidates, only new weights
    for r in w:
        assert w[r] == base[r] + c * (len(set(r) & {0, 2, 3}) + len(set(r) & {1, 2}))
    assert w[(0, 2, 3)] > base[(0, 2, 3)] and w[(2, 3)] - base[(2, 3)] == 3 * c  # 2 from the first set, 1 from the second
    # a declared set larger than k: a new candidate (and its subsets) in the closure
    w2 = workload_weights(4, 2, [(0, 2, 3)], 5)
    assert (0, 2, 3) in w2 and (0, 2, 3) not in workload_weights(4, 2) and w2[(0, 2, 3)] == 3 * 3 + 5 * 3
    # the plan's weight reaches the rounds: the choice's sensitivity is θ · the largest weight
    plan, session, model = fitted(tiny(), domain("y ~ x + C(a)"))
    weights = workload_weights(4, 3, [(0, 2, 3)], plan.parameters["declared_weight"])
    choice = next(m for m in session.ran if "choice among" in m.label)
    assert choice.mechanism.sensitivity == max(weights.values()) > max(base.values())


# -- nothing changes without them ---------------------------------------------------------------------


def same(r1: dipsy.Release, r2: dipsy.Release) -> None:
    assert r1.tables[0].equals(r2.tables[0])
    assert r1.parameters == r2.parameters
    assert [(s.label, s.budget) for s in r1.spends] == [(s.label, s.budget) for s in r2.spends]
    assert (r1.statement.mechanism, r1.statement.composition) == (r2.statement.mechanism, r2.statement.composition)


def test_without_analyses_the_plan_is_aims_as_before():
    """The plan of a domain without analyses is the paper's AIM as the module stated it before #31:
    d one-way marginals at 0.9ρ/T, the rest adaptive, the same parameters and texts."""
    plan = AIM(ZCDP(RHO), options=OPTIONS).plan(None, domain())
    T = OPTIONS["rounds"]
    one_way = DiscreteGaussian.for_budget(ZCDP(0.9 * RHO / T), 1)
    assert [m.label for m in plan.measurements] == [
        f"aim: one-way marginal {n}, discrete Gaussian σ² = {one_way.sigma2}" for n in NAMES
    ]
    assert all(m.mechanism == one_way for m in plan.measurements)
    assert of_kind(plan.adaptive, ZCDP).rho == RHO - sum(of_kind(m.cost, ZCDP).rho for m in plan.measurements)
    assert set(plan.parameters) == {
        "theta",
        "workload",
        "rounds",
        "max_size_mb",
        "iterations",
        "final_iterations",
        "tolerance",
        "search",  # the local search after the draws: post-processing, not part of the mechanism
        "one_way_sigma2",
    }
    assert f"one-way marginals at 0.9ρ/{T} each" in plan.mechanism and "declared" not in plan.mechanism
    assert plan.composition == (
        "zCDP composition of the one-way marginals and the rounds, each round's choice and measurement "
        "adaptive: a privacy filter bounds them by the declared remainder of ρ"
    )
    # an option given for a domain without analyses changes nothing
    assert AIM(ZCDP(RHO), options={**OPTIONS, "analysis_share": 0.5}).plan(None, domain()) == plan


def test_analyses_the_release_drops_or_a_share_of_zero_change_nothing():
    data = tiny(400, seed=3)
    plain = release(data, domain(), seed=5)
    # analysis_share=0: the analyses are declared, and AIM runs as without them, bit for bit
    same(release(data, domain("y ~ x + C(a)"), seed=5, analysis_share=0.0), plain)
    # an analysis whose columns are not all released is not the scope's: the same release as without it
    sub = dipsy.synthesize(data, domain(), method="aim", rho=RHO, seed=5, ledger=False, columns=["a", "b", "y"], options=OPTIONS)
    sub_declared = dipsy.synthesize(
        data, domain("y ~ x"), method="aim", rho=RHO, seed=5, ledger=False, columns=["a", "b", "y"], options=OPTIONS
    )
    same(sub_declared, sub)
    # the control: with the share, the release differs
    declared = release(data, domain("y ~ x + C(a)"), seed=5)
    assert declared.parameters != plain.parameters and not declared.tables[0].equals(plain.tables[0])


# -- what it buys ------------------------------------------------------------------------------------


def slope(df: pd.DataFrame) -> float:
    x, y = df["x"].to_numpy(float), df["y"].to_numpy(float)
    return float(np.cov(x, y)[0, 1] / np.var(x, ddof=1))


def test_the_declared_slopes_bias_shrinks():
    """AIM's one round picks a × b (the strongest tie), so without the declaration the model has y
    independent of x and the synthetic slope of y on x is about 0: a bias of about −β. Declared,
    y × x is measured (σ ≈ 2 per cell against ~50 records) and the slope comes back. The synthetic
    slope's sampling sd with n = 2000 is about 0.8 / (1.1 · √2000) ≈ 0.017, so the mean of three
    seeds is within 0.03 of its expectation; mirror descent stopped at 200 steps adds a small bias
    toward independence (at most 0.04 in trials). The bounds: |bias| ≥ 0.6β without, ≤ 0.1 with."""
    data = tiny(2000, seed=1)
    beta = slope(data)
    assert beta > 0.25  # a slope worth keeping
    options = {"final_iterations": 200}
    without = [slope(release(data, domain(), seed=s, **options).tables[0]) - beta for s in range(3)]
    declared = [slope(release(data, domain("y ~ x"), seed=s, **options).tables[0]) - beta for s in range(3)]
    assert abs(np.mean(without)) >= 0.6 * beta
    assert abs(np.mean(declared)) <= 0.1
    assert abs(np.mean(declared)) < abs(np.mean(without)) / 3
