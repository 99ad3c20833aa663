"""Declared analyses in ``mst`` (issue #31): the two-way marginals the domain's analyses need are
planned measurements at ``analysis_share`` of each set's ρ, forced into the tree before the
exponential mechanism chooses the rest; without analyses (or with the share 0) mst is unchanged,
bit for bit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import numpy as np
import pandas as pd
import pytest
from test_mst import DOMAIN, SIZES, chain
from test_mst import fitted as mst_fitted

import dipsy
from dipsy.audit import CASES, audit, format_table
from dipsy.domain import Domain
from dipsy.domain.analyses import Analysis
from dipsy.errors import DipsyError
from dipsy.methods.marginals.declared import ANALYSIS_SHARE, declared_split
from dipsy.methods.marginals.mst import MST, forced_edges, merged_counts
from dipsy.methods.marginals.sets import SetsModel
from dipsy.privacy import ZCDP
from dipsy.privacy.measurement import DiscreteGaussian


def declaring(domain: Domain, *formulas: str) -> Domain:
    return dataclasses.replace(domain, analyses=tuple(Analysis(f, "ols") for f in formulas))


def fitted(data: pd.DataFrame, domain: Domain, rho: float, seed: int = 0, sets: int = 1, **options):
    """test_mst's plan → session → fit: the plan, the session and the model."""
    return mst_fitted(data, domain, rho, seed, sets, **options)[:3]


def declared_of(plan) -> list:
    return [m for m in plan.measurements if "declared analysis" in m.label]


# -- the plan ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("sets", [1, 3])
@pytest.mark.parametrize("share", [None, 0.4])
def test_plan_measures_each_declared_pair_at_its_share_and_the_total_stays_rho(sets, share):
    rho = 0.7
    domain = declaring(DOMAIN, "x3 ~ x4 + x0", "x1 ~ x2")
    options = {} if share is None else {"analysis_share": share}
    plan = MST(ZCDP(rho), sets=sets, options=options).plan(None, domain)
    s = ANALYSIS_SHARE if share is None else share
    per = rho / sets
    split = declared_split(domain, s * per)
    # the pairs, then the whole table of the analysis naming two columns besides its response
    assert [p for p, _ in split] == [("x3", "x4"), ("x3", "x0"), ("x1", "x2"), ("x3", "x4", "x0")]
    assert math.isclose(sum(r for _, r in split), s * per, rel_tol=1e-12)
    declared = declared_of(plan)
    assert len(declared) == 4 * sets  # one per table and set
    assert all(m.published for m in declared)
    for k in range(sets):
        mine = [m for m in declared if m.set_index == (None if sets == 1 else k)]
        assert [m.query.columns for m in mine] == [p for p, _ in split]
        for m, (pair, r) in zip(mine, split):
            g = DiscreteGaussian.for_budget(ZCDP(r), 1)
            assert m.mechanism == g and m.cost.rho <= r and m.cost.rho == pytest.approx(r, rel=1e-3)
            what = f"two-way marginal {pair[0]} × {pair[1]}" if len(pair) == 2 else f"the whole {' × '.join(pair)} table"
            assert f"declared analysis: {what}, discrete Gaussian σ² = {g.sigma2}" in m.label
    # MST's own parts take (1 − s) of each set's ρ: one-ways (1 − s)/3, the chosen edge's choice and
    # two-way (1 − s)·2/3 (the three declared pairs are forced: 1 of the 4 edges is left to choose)
    one = [m for m in plan.measurements if "one-way" in m.label]
    assert len(one) == 5 * sets
    assert all(m.mechanism == DiscreteGaussian.for_budget(ZCDP((1 - s) * (1 / 3) * per / 5), 1) for m in one)
    assert plan.adaptive.rho == pytest.approx((1 - s) * (2 / 3) * rho, rel=1e-12)
    assert "the tree's other 1 edge chosen by 1 exponential mechanism among" in plan.mechanism
    intended = sets * (sum(r for _, r in split) + 5 * ((1 - s) * (1 / 3) * per / 5)) + plan.adaptive.rho
    assert intended == pytest.approx(rho, rel=1e-12)
    total = plan.declared(ZCDP(rho)).rho  # σ² rounded up: at most ρ, by the rounding only
    assert total <= rho and total == pytest.approx(rho, rel=1e-3)
    assert plan.parameters["declared_pairs"] == [["x3", "x4"], ["x3", "x0"], ["x1", "x2"]]
    assert plan.parameters["analysis_share"] == s
    assert plan.parameters["declared_left_out"] == []
    assert plan.parameters["declared_tables"] == [["x3", "x4", "x0"]]
    assert "declared analyses" in plan.mechanism and "declared analyses" in plan.composition


def test_every_edge_declared_leaves_no_selection():
    """d = 2 with the pair declared, or d = 3 with both edges declared: nothing is chosen, the one-ways
    take (1 − s) and nothing is adaptive."""
    for domain in (
        declaring(Domain.from_sizes({"y": 3, "x": 4}), "y ~ x"),
        declaring(Domain.from_sizes({"y": 3, "a": 2, "b": 4}), "y ~ a + b"),
    ):
        d, rho, s = len(domain.names), 0.5, ANALYSIS_SHARE
        plan = MST(ZCDP(rho)).plan(None, domain)
        assert plan.adaptive is None
        one = [m for m in plan.measurements if "one-way" in m.label]
        assert all(m.mechanism == DiscreteGaussian.for_budget(ZCDP((1 - s) * rho / d), 1) for m in one)
        assert sum(r for _, r in declared_split(domain, s * rho)) + d * (1 - s) * rho / d == pytest.approx(rho, rel=1e-12)
        data = pd.DataFrame({c: np.arange(600) % SIZE for c, SIZE in zip(domain.names, domain.shape(domain.names))})
        _, session, model = fitted(data, domain, rho)
        assert len(model.two_way) == d - 1
        pairs = {tuple(sorted(p)) for p, _ in declared_split(domain, 1.0) if len(p) == 2}  # a whole table is not an edge
        assert {tuple(sorted(e)) for e in model.edges} == pairs
        assert session.spent.rho == pytest.approx(plan.declared(ZCDP(rho)).rho, rel=1e-12)


def test_forced_edges_in_kruskal_order_and_cycles_left_out():
    assert forced_edges(("a", "b", "c"), [("a", "b"), ("b", "a")]) == (((0, 1),), (("b", "a"),))
    assert forced_edges(("y", "a", "b"), [("y", "b"), ("y", "a"), ("a", "b")]) == (((0, 2), (0, 1)), (("a", "b"),))


def test_merged_counts_sums_merged_cells():
    table = np.arange(12)  # 3 × 4, C order
    out = merged_counts(table, (3, 4), np.array([0, 1, 1]), np.array([0, 0, 1, 2]))
    assert out.tolist() == [[1, 2, 3], [4 + 5 + 8 + 9, 6 + 10, 7 + 11]]


def test_option_is_checked():
    with pytest.raises(DipsyError, match="analysis_share"):
        MST(ZCDP(1.0), options={"analysis_share": 0.95})


# -- the fit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_a_declared_pair_is_always_an_edge_of_the_tree(seed):
    """x3 × x4 is among the weakest pairs of the chain (x3 depends on x4 only through x0, x1, x2):
    mst alone never chooses it; declared, it is in every tree."""
    data = chain(1500, seed)
    _, _, plain = fitted(data, DOMAIN, 1.0, seed=seed)
    assert ("x3", "x4") not in plain.edges
    plan, session, model = fitted(data, declaring(DOMAIN, "x3 ~ x4"), 1.0, seed=seed)
    assert model.two_way[0].attributes == (3, 4) and ("x3", "x4") in model.edges
    assert len(model.edges) == 4 and model.declared_left_out == ()
    labels = [m.label for m in session.ran]
    assert sum("tree edge" in label for label in labels) == 3  # the exponential mechanism chose the other 3
    assert not any("two-way marginal x3 × x4 on the tree" in label for label in labels)  # not measured twice
    assert session.spent.rho <= plan.declared(ZCDP(1.0)).rho + 1e-12


def test_a_cycle_closing_declared_pair_is_recorded_as_left_out():
    domain = declaring(DOMAIN, "x0 ~ x1 + x2", "x1 ~ x2")
    plan, session, model = fitted(chain(1500, 0), domain, 1.0, seed=0)
    assert plan.parameters["declared_pairs"] == [["x0", "x1"], ["x0", "x2"], ["x1", "x2"]]
    assert plan.parameters["declared_left_out"] == [["x1", "x2"]]
    assert model.declared_left_out == (("x1", "x2"),)
    assert {("x0", "x1"), ("x0", "x2")} <= set(model.edges) and ("x1", "x2") not in model.edges
    assert len(declared_of(plan)) == 4 and "left out" in plan.mechanism  # the 3 pairs and x0 ~ x1 + x2's whole table
    assert sum("tree edge" in m.label for m in session.ran) == 2


def test_each_set_has_its_own_declared_measurements():
    plan, session, model = fitted(chain(1500, 2), declaring(DOMAIN, "x3 ~ x4"), 1.0, seed=2, sets=2)
    assert isinstance(model, SetsModel)
    assert [m.set_index for m in declared_of(plan)] == [0, 1]
    for part in model.parts:
        assert ("x3", "x4") in part.edges
    assert sum("declared analysis" in m.label for m in session.ran) == 2


# -- unchanged without analyses ---------------------------------------------------------------------

#: sha256 of the tables of seeded releases of chain(2000, 1) (seed 7) by the code before declared
#: analyses existed: (columns, sets, rho) → digest. That code drew records i.i.d. along the tree, so
#: the releases here ask for no local search after the draws (search=0), which keeps them bit for bit.
REFERENCE = {
    (None, 1, 1.0): "f42fad3d17a2c15d9d3215ad09f8c37febcf1484625b7a2a6573bda8beae6f18",
    (None, 3, 0.05): "333833eee383b4b1bfb89b8602e490bf18a9f5ea54219c58710a8817f0049f24",
    (("x0", "x1"), 1, 1.0): "7b4b3c15d56a462c0dccfeb7786e66eeabb430c039289b69bf93fc97780575af",
}


def digest(tables) -> str:
    h = hashlib.sha256()
    for t in tables:
        h.update(pd.util.hash_pandas_object(t, index=True).values.tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("key", list(REFERENCE))
def test_without_analyses_releases_are_bitwise_as_before(key):
    columns, sets, rho = key
    data = chain(2000, 1)
    domain = DOMAIN
    if columns is not None:
        data, domain = data[list(columns)], Domain.from_sizes({c: SIZES[c] for c in columns})
    iid = {"search": 0}
    plain = dipsy.synthesize(data, domain, "mst", rho=rho, sets=sets, seed=7, options=iid)
    assert digest(plain.tables) == REFERENCE[key]
    assert not any(k.startswith("declared") or k == "analysis_share" for k in plain.parameters)
    # the share 0 with analyses declared is the same release as no analyses
    declared = declaring(domain, f"{domain.names[0]} ~ {domain.names[1]}")
    zero = dipsy.synthesize(data, declared, "mst", rho=rho, sets=sets, seed=7, options={"analysis_share": 0, **iid})
    assert digest(zero.tables) == REFERENCE[key]
    assert zero.statement.to_dict() == plain.statement.to_dict() and zero.parameters == plain.parameters
    # and a share above 0 is not
    shared = dipsy.synthesize(data, declared, "mst", rho=rho, sets=sets, seed=7, options=iid)
    assert digest(shared.tables) != REFERENCE[key]
    # the default search moves the draws
    assert digest(dipsy.synthesize(data, domain, "mst", rho=rho, sets=sets, seed=7).tables) != REFERENCE[key]


# -- the statement ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sets", [1, 2])
def test_the_statement_lists_the_declared_measurements_and_adds_up_to_the_budget(sets):
    rho = 0.5
    release = dipsy.synthesize(chain(1500, 3), declaring(DOMAIN, "x3 ~ x4 + x0"), "mst", rho=rho, sets=sets, seed=1)
    claim = release.statement.to_dict()["if_unseeded"]
    spends = [m["rho"] for m in claim["measurements"]]
    declared = [m for m in claim["measurements"] if "declared analysis:" in m["label"]]
    assert len(declared) == 3 * sets  # the two pairs and the analysis's whole table, per set
    assert sum("the whole x3 × x4 × x0 table" in m["label"] for m in declared) == sets
    assert claim["rho_total"] <= rho and claim["rho_total"] == pytest.approx(rho, rel=1e-3)
    assert sum(spends) == pytest.approx(claim["rho_total"], rel=1e-9)  # every spend is listed, and they add up
    assert sum(m["rho"] for m in declared) == pytest.approx(ANALYSIS_SHARE * rho, rel=1e-3)
    assert claim["rho_per_set"] == pytest.approx(rho / sets, rel=1e-3)


# -- the point: a declared slope survives -------------------------------------------------------------


def tangled(n: int, seed: int) -> pd.DataFrame:
    """y depends on x1 directly (P(y = 1) = 0.35 + 0.3·x1), but MST's tree joins them through w and z:
    w = 4·x1' + u and z = 4·y' + u' (x1', y' noisy copies, u a shared 4-valued code), so the pairs
    x1 × w, y × z and w × z each score far above y × x1."""
    rng = np.random.default_rng(seed)
    x1 = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.35 + 0.3 * x1).astype(int)
    u = rng.integers(0, 4, n)
    x1c = np.where(rng.random(n) < 0.8, x1, rng.integers(0, 2, n))
    yc = np.where(rng.random(n) < 0.8, y, rng.integers(0, 2, n))
    uc = np.where(rng.random(n) < 0.9, u, rng.integers(0, 4, n))
    return pd.DataFrame({"y": y, "x1": x1, "w": 4 * x1c + u, "z": 4 * yc + uc})


def slope(df: pd.DataFrame) -> float:
    return float(np.polyfit(df["x1"].astype(float), df["y"].astype(float), 1)[0])


def test_a_declared_slope_survives_better():
    """ε = 1, δ = 1e-9, n = 5,000, six seeds: undeclared, the tree takes y to x1 through w and z and the
    slope of y on x1 (0.3) shrinks by the copies' attenuation (measured 0.19 off on average); declared,
    y × x1 is an edge and the slope is off by its noise alone (measured 0.014)."""
    base = Domain.from_sizes({"y": 2, "x1": 2, "w": 8, "z": 8})
    declared = declaring(base, "y ~ x1")
    bias: dict[str, list[float]] = {"plain": [], "declared": []}
    for seed in range(6):
        data = tangled(5000, 100 + seed)
        for key, domain in (("plain", base), ("declared", declared)):
            release = dipsy.synthesize(data, domain, "mst", epsilon=1.0, delta=1e-9, seed=seed)
            bias[key].append(abs(slope(release.tables[0]) - slope(data)))
            assert (["y", "x1"] in release.parameters["tree_edges"]) == (key == "declared")
    plain, mine = np.mean(bias["plain"]), np.mean(bias["declared"])
    # the attenuation is a bias of about 0.3·(1 − 0.8·0.8·…) ≈ 0.19; the declared slope's sd is about 0.02
    assert mine < plain / 3, (bias, plain, mine)
    assert mine < 0.05


def test_the_end_to_end_audit_finds_no_excess_loss_with_a_declared_pair():
    """The audit's mst case with z ~ x declared: the declared two-way is audited like every measurement."""
    case = dataclasses.replace(CASES["mst"], domain=declaring(CASES["mst"].domain, "z ~ x"))
    result = audit(case)
    assert sum("declared analysis: two-way marginal z × x" in c.label for c in result.checks) == 1
    assert sum("tree edge" in c.label for c in result.checks) == 1  # z × x is forced: one choice left
    assert not result.flagged and result.replay.same, format_table([result])
