"""Tests of the ``mst`` method (dipsy.methods.marginals.mst) and its tree model (.tree).

Budget arithmetic through the session's filter, the edge choice's distribution (with stated power),
the score's sensitivity, the tree model and its sampler (exact marginals, conditional independence
off the tree), compression, the statement, m sets, charge-before-read, the end-to-end audit and bad
input. Statistical checks use fixed seeds and tolerances from the sampling distribution.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dipsy
from dipsy.audit import CASES, audit, format_table
from dipsy.domain import Domain
from dipsy.engine import engine_for
from dipsy.engine.numpy_engine import NumpyEngine
from dipsy.errors import DipsyError, PrivacyError
from dipsy.methods import REGISTRY
from dipsy.methods.marginals.consistency import make_consistent
from dipsy.methods.marginals.marginal import Marginal
from dipsy.methods.marginals.mst import MST, MSTModel, compress, pair_scores, shares
from dipsy.methods.marginals.privsyn import MergedTable, expand
from dipsy.methods.marginals.sets import SetsModel
from dipsy.methods.marginals.tree import TreeDistribution
from dipsy.privacy import ZCDP
from dipsy.privacy.accountant import Accountant
from dipsy.privacy.measurement import ACTIVE, Measurement
from dipsy.privacy.relation import individual
from dipsy.privacy.rng import Randomness
from dipsy.privacy.selection import ExponentialSelection, exponential_choice, grid_scores
from dipsy.privacy.session import Session

SIZES = {"x0": 3, "x1": 4, "x2": 3, "x3": 2, "x4": 5}
DOMAIN = Domain.from_sizes(SIZES)


def chain(n: int, seed: int) -> pd.DataFrame:
    """x0 → x1 → x2 → x3 strongly (copy w.p. 0.8, 0.7, 0.8), x4 → x0 weakly (w.p. 0.5)."""
    rng = np.random.default_rng(seed)
    x4 = rng.integers(0, 5, n)
    x0 = np.where(rng.random(n) < 0.5, x4 % 3, rng.integers(0, 3, n))
    x1 = np.where(rng.random(n) < 0.8, x0, rng.integers(0, 4, n))
    x2 = np.where(rng.random(n) < 0.7, x1 % 3, rng.integers(0, 3, n))
    x3 = np.where(rng.random(n) < 0.8, x2 % 2, rng.integers(0, 2, n))
    return pd.DataFrame({"x0": x0, "x1": x1, "x2": x2, "x3": x3, "x4": x4})


def fitted(data: pd.DataFrame, domain: Domain, rho: float, seed: int = 0, sets: int = 1, **options):
    """plan → session → fit, as the release path runs them; the session records what it measured."""
    method = MST(ZCDP(rho), sets=sets, options=options)
    plan = method.plan(None, domain)
    engine = engine_for(data, domain)
    session = Session(
        engine, plan.declared(ZCDP(rho)), plan.relation, Randomness.from_seed(seed), plan.measurements, plan.adaptive is not None
    )
    seen, real = [], session.measure
    session.measure = lambda m: (seen.append(m), real(m))[1]  # type: ignore[method-assign]
    model = method.fit(session, plan)
    return plan, session, model, seen, engine


def by_part(spends) -> dict[str, list[float]]:
    parts: dict[str, list[float]] = {"one-way": [], "edge": [], "two-way": []}
    for s in spends:
        part = "one-way" if "one-way marginal" in s.label else "edge" if "tree edge" in s.label else "two-way"
        assert part != "two-way" or "two-way marginal" in s.label, s.label
        parts[part].append(s.budget.rho)
    return parts


# -- budget -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [0.05, 1.0])
def test_one_ways_edge_choices_and_two_ways_each_spend_a_third_within_rounding_never_more(rho):
    d = len(SIZES)
    plan, session, model, _, _ = fitted(chain(2000, 1), DOMAIN, rho)
    parts = by_part(session.spends)
    assert [len(parts[p]) for p in ("one-way", "edge", "two-way")] == [d, d - 1, d - 1]
    for part in parts.values():
        # σ² rounded up and ε rounded down: a part costs at most ρ/3, and within 0.1 % of it
        assert sum(part) <= rho / 3 * (1 + 1e-12) and sum(part) == pytest.approx(rho / 3, rel=1e-3)
        assert max(part) == pytest.approx(min(part), rel=1e-12)  # split equally
    assert session.spent.rho <= rho * (1 + 1e-12) and session.spent.rho == pytest.approx(rho, rel=1e-3)
    assert plan.adaptive == ZCDP(2 * rho / 3) and plan.declared(ZCDP(rho)).rho <= rho * (1 + 1e-12)
    # the mechanisms are MST's: σ₁² = 3d/(2ρ), ε = sqrt(8ρ/(3(d−1))), σ₂² = 3(d−1)/(2ρ)
    one, edge, two = plan.measurements[0].mechanism, session.ran[d].mechanism, session.ran[-1].mechanism
    grid = Fraction(2, 1024)  # σ² is rounded up to 1/1024, from ρ/3/d computed in floating point
    least1, least2 = Fraction(3 * d) / (2 * Fraction(rho)), Fraction(3 * (d - 1)) / (2 * Fraction(rho))
    assert least1 <= one.sigma2 < least1 + grid and least2 <= two.sigma2 < least2 + grid
    eps = math.sqrt(8 * rho / (3 * (d - 1)))
    assert float(edge.epsilon) <= eps and float(edge.epsilon) == pytest.approx(eps, rel=1e-5)
    # the filter has no room for one more two-way marginal: refused before it reads
    extra = Measurement(
        "one more", MergedTable(("x0", "x1"), (model.maps[0].tolist(), model.maps[1].tolist())), two, plan.relation
    )
    with pytest.raises(PrivacyError, match="declared total"):
        session.measure(extra)
    session.close()


@pytest.mark.parametrize("d, expected", [(1, (1.0, 0.0, 0.0)), (2, (0.5, 0.0, 0.5)), (6, (1 / 3, 1 / 3, 1 / 3))])
def test_small_domains_split_rho_without_a_selection_that_has_no_choice(d, expected):
    domain = Domain.from_sizes({f"c{i}": 3 for i in range(d)})
    data = pd.DataFrame({f"c{i}": np.arange(300) % 3 for i in range(d)})
    assert shares(d) == expected
    _, session, model, _, _ = fitted(data, domain, 0.3)
    parts = by_part(session.spends)
    assert [len(parts[p]) for p in ("one-way", "edge", "two-way")] == [d, max(d - 1, 0) if d >= 3 else 0, d - 1]
    assert session.spent.rho == pytest.approx(0.3, rel=1e-3) and session.spent.rho <= 0.3 * (1 + 1e-12)
    assert len(model.choices()["tree_edges"]) == d - 1


@pytest.mark.parametrize("theta", [1, 7])
def test_theta_is_the_sensitivity_of_every_count_and_score(theta):
    plan = MST(ZCDP(0.5), options={"theta": theta}).plan(None, DOMAIN)
    d = len(SIZES)
    assert plan.relation == individual(theta)
    for m in plan.measurements:
        least = Fraction(theta**2 * 3 * d) / (2 * Fraction(0.5))
        assert m.mechanism.sensitivity == theta and least <= m.mechanism.sigma2 < least + Fraction(2, 1024)
    _, choose, two = MST(ZCDP(0.5), options={"theta": theta})._mechanisms(d)
    assert choose.sensitivity == theta and two.sensitivity == theta
    assert choose.cost.rho <= 0.5 / 3 / (d - 1) and two.cost.rho <= 0.5 / 3 / (d - 1)


# -- the edge choice ----------------------------------------------------------------------------------


def weak_triple(n: int = 3000) -> tuple[pd.DataFrame, Domain]:
    """Three columns with weak dependences, so the first edge choice at ρ = 0.002 is a real lottery."""
    rng = np.random.default_rng(5)
    x0 = rng.integers(0, 3, n)
    x1 = np.where(rng.random(n) < 0.045, x0, rng.integers(0, 3, n))
    x2 = np.where(rng.random(n) < 0.03, x1, rng.integers(0, 3, n))
    return pd.DataFrame({"a": x0, "b": x1, "c": x2}), Domain.from_sizes({"a": 3, "b": 3, "c": 3})


def test_the_edge_choice_is_the_exponential_mechanism_on_mst_scores_with_power():
    """The first round's measurement, as fit built it: its scores are the L1 distances of the true
    two-ways from the independent estimate (recomputed here by hand), its probabilities are
    MST's ``exp(ε q / 2)`` with ε = sqrt(8ρ/(3(d−1))), and 20,000 draws of its sampler match them
    (chi-square, α = 0.001). Power: a choice at 1.1 ε is rejected with probability > 0.99 (noncentral
    chi-square, computed below), so the test can fail."""
    data, domain = weak_triple()
    rho = 0.002
    _, session, model, seen, engine = fitted(data, domain, rho, seed=3)
    first = next(m for m in seen if "tree edge 1 of 2" in m.label)
    assert "over 3 pairs" in first.label and isinstance(first.mechanism, ExponentialSelection)
    scores = first.query.answer(engine)
    # by hand: the one-way estimate is the consistent one-ways; nothing is merged here
    estimate = [m.counts for m in make_consistent(list(model.one_way))]
    assert all(len(x) == 3 for x in estimate)
    for (a, b), q in zip([(0, 1), (0, 2), (1, 2)], scores):
        table = pd.crosstab(data.iloc[:, a], data.iloc[:, b]).to_numpy()
        expected = np.outer(estimate[a], estimate[b]) / estimate[a].sum()
        assert q == pytest.approx(np.abs(table - expected).sum(), rel=1e-12)
    sel = first.mechanism
    p = sel.probabilities(scores)
    eps = math.sqrt(8 * rho / 6)
    mst = np.exp(eps * (scores - scores.max()) / 2)
    assert np.allclose(p, mst / mst.sum(), rtol=0.02)  # the grid (Δ/1000) and units + 1 cost under 2 %
    assert p.min() > 0.05  # a real lottery: every candidate has a fair chance
    draws = 20_000
    k = grid_scores(scores, sel.sensitivity, sel.units)  # randomise's own path, vectorised over the draws
    got = np.bincount(exponential_choice(k.max() - k, sel.gamma, draws, Randomness.from_seed(77)), minlength=3)
    assert {sel.randomise(scores, Randomness.from_seed(s)) for s in range(30)} <= {0, 1, 2}
    chi2 = float(((got - draws * p) ** 2 / (draws * p)).sum())
    critical = stats.chi2.ppf(0.999, df=2)
    assert chi2 < critical, (got, draws * p)
    off = ExponentialSelection.for_epsilon(sel.epsilon * Fraction(11, 10), sel.sensitivity).probabilities(scores)
    assert stats.ncx2.sf(critical, df=2, nc=draws * float(((off - p) ** 2 / p).sum())) > 0.99
    # round two chooses among the pairs that join the two components left
    second = next(m for m in seen if "tree edge 2 of 2" in m.label)
    assert "over 2 pairs" in second.label
    session.close()


@pytest.mark.parametrize("seed", range(25))
def test_a_score_moves_by_at_most_theta_when_an_individual_is_added(seed):
    """|q(D) − q(D')| ≤ ‖M(D) − M(D')‖₁ ≤ θ for a fixed estimate (the module's proof), on merged tables."""
    rng = np.random.default_rng(seed)
    theta = int(rng.integers(1, 4))
    data = pd.DataFrame({"a": rng.integers(0, 4, 30), "b": rng.integers(0, 3, 30)})
    added = pd.DataFrame({"a": rng.integers(0, 4, theta), "b": rng.integers(0, 3, theta)})
    domain = Domain.from_sizes({"a": 4, "b": 3})
    maps = ((0, 1, 2, 2), (0, 1, 2)) if seed % 2 else ((0, 1, 2, 3), (0, 1, 2))
    estimate = (rng.random(max(maps[0]) + 1) * 10, rng.random(3) * 10)
    estimate = (estimate[0], estimate[1] * estimate[0].sum() / estimate[1].sum())
    args = dict(columns=(("a", "b"),), maps=(maps,), estimate=estimate, attributes=((0, 1),))
    q = pair_scores(engine_for(data, domain), **args)[0]
    q2 = pair_scores(engine_for(pd.concat([data, added]), domain), **args)[0]
    assert abs(q - q2) <= theta * (1 + 1e-12)


# -- the tree model and its sampler -------------------------------------------------------------------


def counts(frame: pd.DataFrame, cols: tuple[int, ...], sizes: list[int]) -> np.ndarray:
    shape = tuple(sizes[c] for c in cols)
    flat = np.ravel_multi_index(tuple(frame.iloc[:, c].to_numpy() for c in cols), shape)
    return np.bincount(flat, minlength=math.prod(shape)).reshape(shape).astype(float)


def tree_of(frame: pd.DataFrame, sizes: list[int], edges: list[tuple[int, int]], root: int = 0) -> TreeDistribution:
    """The tree model of a data set's exact two-ways (consistent: one data set)."""
    return TreeDistribution.from_marginals(sizes, [Marginal(e, counts(frame, e, sizes)) for e in edges], root=root)


def looped(n: int, seed: int) -> pd.DataFrame:
    """a → b → c → d, and c also copies a: (a, c) is dependent given b, which the tree a–b–c–d omits."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.5, b, np.where(rng.random(n) < 0.7, a + 1, rng.integers(0, 3, n)))
    d = np.where(rng.random(n) < 0.7, c % 2, rng.integers(0, 2, n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


def test_the_tree_model_has_every_edge_exactly_and_any_root_gives_the_same_distribution():
    sizes, edges = [2, 3, 3, 2], [(0, 1), (1, 2), (2, 3)]
    frame = looped(5000, 1)
    for root in (0, 2, 3):
        model = tree_of(frame, sizes, edges, root)
        for e in edges:
            assert np.allclose(model.marginal(e), counts(frame, e, sizes) / len(frame), atol=1e-12)
        assert np.allclose(model.marginal((0, 1, 2, 3)), tree_of(frame, sizes, edges, 0).marginal((0, 1, 2, 3)), atol=1e-12)
        assert model.marginal((0, 1, 2, 3)).sum() == pytest.approx(1.0, abs=1e-12)


def test_a_pair_off_the_tree_is_independent_given_the_path_exactly_in_the_model():
    sizes, edges = [2, 3, 3, 2], [(0, 1), (1, 2), (2, 3)]
    frame = looped(5000, 2)
    model = tree_of(frame, sizes, edges)
    abc, b = model.marginal((0, 1, 2)), model.marginal((1,))
    assert np.allclose(
        abc * b[None, :, None], model.marginal((0, 1))[:, :, None] * model.marginal((1, 2))[None, :, :], atol=1e-15
    )
    # the data have the dependence the tree leaves out (so the identity above is the model's doing)
    data = counts(frame, (0, 1, 2), sizes) / len(frame)
    implied = data.sum(axis=2)[:, :, None] * data.sum(axis=0)[None, :, :] / data.sum(axis=(0, 2))[None, :, None]
    assert 0.5 * np.abs(data - implied).sum() > 0.05


def test_records_drawn_along_the_tree_have_the_model_s_marginals():
    """200,000 draws: the 3-way (a, c, d) of 12 cells, off-edge, against the model's exact one.
    E[TVD] ≤ ½ Σ sqrt(p(1 − p)/n) ≤ ½ sqrt(12/200,000) = 0.0039, and a record moves the TVD by
    at most 1/n, so P(TVD > 0.0039 + 0.006) ≤ exp(−2n·0.006²) < 1e-6 (McDiarmid): TVD < 0.01."""
    sizes, edges = [2, 3, 3, 2], [(0, 1), (1, 2), (2, 3)]
    model = tree_of(looped(5000, 3), sizes, edges, root=1)
    n = 200_000
    records = model.sample(n, np.random.default_rng(11))
    assert records.shape == (n, 4) and all(records[:, j].max() < s and records[:, j].min() >= 0 for j, s in enumerate(sizes))
    drawn = counts(pd.DataFrame(records), (0, 2, 3), sizes) / n
    assert 0.5 * np.abs(drawn - model.marginal((0, 2, 3))).sum() < 0.01
    # and (a, c) independent given b in the draws: chi-square per b (Bonferroni over 3 groups, α = 0.001 in all);
    # the same test on as many draws from the data's own distribution rejects (it has the dependence)
    frame = looped(n, 4)
    critical = stats.chi2.ppf(1 - 0.001 / 3, df=2)
    for sample, independent in ((pd.DataFrame(records), True), (frame, False)):
        worst = 0.0
        for v in range(3):
            group = sample[sample.iloc[:, 1] == v]
            worst = max(worst, stats.chi2_contingency(counts(group, (0, 2), sizes))[0])
        assert (worst < critical) == independent, worst


def test_the_search_after_the_draw_takes_records_to_the_tree_s_two_ways():
    """An i.i.d. draw misses the tree's consistent two-ways by sampling error; the default search
    (30 sweeps on a release of at most 10⁶ records) removes most of it, and search=0 keeps the draw."""
    _, _, model, _, _ = fitted(chain(3000, 0), DOMAIN, 1.0)
    assert model.search is None and model.sweeps(1000) == 30 and model.sweeps(2_000_000) == 0
    _, _, edges = model.distribution()

    def error(records: dict) -> float:
        n = len(records["x0"])
        out = 0.0
        for m in edges:
            codes = tuple(model.maps[a][records[model.names[a]]] for a in m.attributes)
            cells = np.ravel_multi_index(codes, m.counts.shape)
            target = m.counts.ravel() / m.counts.sum() * n
            out += np.abs(np.bincount(cells, minlength=target.size) - target).sum() / n
        return out / len(edges)

    plain = dataclasses.replace(model, search=0)
    for before, after in zip(
        plain.chunks(0, Randomness.from_seed(3), rows=1000), model.chunks(0, Randomness.from_seed(3), rows=1000)
    ):
        assert len(before["x0"]) == len(after["x0"])
        assert error(after) < 0.5 * error(before)


def test_a_parent_value_of_probability_zero_gets_the_child_s_marginal_and_draws_stay_in_range():
    ab = Marginal((0, 1), np.array([[10.0, 30.0], [0.0, 0.0], [20.0, 40.0]]))
    model = TreeDistribution.from_marginals([3, 2], [ab])
    assert model.conditionals[1][1].tolist() == pytest.approx([30 / 100, 70 / 100])
    records = model.sample(1000, np.random.default_rng(0))
    assert not (records[:, 0] == 1).any() and set(records[:, 1].tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="spanning tree"):
        TreeDistribution.from_marginals([2, 2, 2], [Marginal((0, 1), np.ones((2, 2))), Marginal((0, 1), np.ones((2, 2)))])


# -- compression --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "noisy, threshold, code_map, merged",
    [
        ([50.0, 2.0, 40.0, -1.5], 10.0, [0, 2, 1, 2], [50.0, 40.0, 0.5]),  # the rare values' sum, as MST
        ([50.0, -6.0, 40.0, 1.0], 10.0, [0, 2, 1, 2], [50.0, 40.0, -5.0]),  # negative too: consistency clips
        ([5.0, 50.0, 1.0, 40.0], 10.0, [2, 0, 2, 1], [50.0, 40.0, 6.0]),  # kept values keep their order
        ([50.0, 10.0, 9.99], 10.0, [0, 1, 2], [50.0, 10.0, 9.99]),  # at the threshold is kept
        ([3.0, 4.0, 2.0], 10.0, [0, 0, 0], [9.0]),  # everything rare: one value
        ([30.0, 40.0], 10.0, [0, 1], [30.0, 40.0]),  # nothing rare: the identity
    ],
)
def test_compress_is_msts_compress_domain(noisy, threshold, code_map, merged):
    got_map, got = compress(np.array(noisy), threshold)
    assert got_map.tolist() == code_map and got.tolist() == pytest.approx(merged)


def test_a_merged_value_is_drawn_back_in_proportion_to_the_clipped_noisy_counts():
    """MST's compression, then privsyn's expand: values 1, 2, 3, 5 (noisy 6, −3, 2, 4) are merged
    and drawn back with probabilities 6/12, 0, 2/12, 4/12; kept values map back exactly."""
    noisy = np.array([100, 6, -3, 2, 80, 4])
    code_map, merged = compress(noisy.astype(float), 10.0)
    assert code_map.tolist() == [0, 2, 2, 2, 1, 2] and merged.tolist() == [100.0, 80.0, 9.0]
    draws = 60_000
    out = expand(np.concatenate([np.full(draws, 2), [0, 1]]), code_map, noisy, np.random.default_rng(5))
    assert out[draws:].tolist() == [0, 4]
    got = np.bincount(out[:draws], minlength=6)
    for value, p in {0: 0.0, 1: 0.5, 2: 0.0, 3: 2 / 12, 4: 0.0, 5: 4 / 12}.items():
        assert abs(got[value] - draws * p) <= 5 * math.sqrt(draws * p * (1 - p)), (value, got)
    lone, _ = compress(np.array([50.0, 3.0, 40.0]), 10.0)  # one rare value alone: only moved last
    assert expand(np.array([0, 2, 1]), lone, np.array([50, 3, 40]), np.random.default_rng(0)).tolist() == [0, 1, 2]


# -- end to end ---------------------------------------------------------------------------------------


def test_mst_recovers_the_chain_and_its_release_states_every_measurement(tmp_path):
    data = chain(20_000, 7)
    r = dipsy.synthesize(data, DOMAIN, method="mst", rho=5.0, seed=2)
    edges = {tuple(e) for e in r.parameters["tree_edges"]}
    assert {("x0", "x1"), ("x1", "x2"), ("x2", "x3"), ("x0", "x4")} == edges  # the generating tree, at large ρ
    table = r.tables[0]
    assert list(table.columns) == list(SIZES) and abs(len(table) - len(data)) < 200  # n: the consistent noisy total
    for a, b in edges:
        truth = pd.crosstab(data[a], data[b], normalize=True)
        synth = pd.crosstab(table[a], table[b], normalize=True).reindex_like(truth).fillna(0)
        assert 0.5 * np.abs(truth.to_numpy() - synth.to_numpy()).sum() < 0.03  # sampling alone: ~0.01
    s = r.statement
    d = len(SIZES)
    assert len(s.measurements) == len(r.spends) == d + 2 * (d - 1)
    labels = [m["label"] for m in s.measurements]
    assert sum("one-way marginal" in x for x in labels) == d and sum("tree edge" in x for x in labels) == d - 1
    assert sum("two-way marginal" in x for x in labels) == d - 1
    # the plan's declared total (a privacy filter's ex-ante guarantee): at least what ran, at most ρ
    assert sum(x.budget.rho for x in r.spends) <= s.total.rho * (1 + 1e-12) and s.total.rho <= 5.0 * (1 + 1e-12)
    assert s.relation == individual(1) and "MST" in s.mechanism
    meta = json.loads((r.save(tmp_path / "rel") / "release.json").read_text())
    claim = meta["privacy"]["if_unseeded"]
    assert len(claim["measurements"]) == d + 2 * (d - 1)
    edge_choice = next(m for m in claim["measurements"] if "tree edge 1" in m["label"])
    assert edge_choice["noise"]["distribution"].startswith("exponential mechanism") and edge_choice["query"].startswith(
        "the L1 distances"
    )
    assert meta["parameters"]["tree_edges"] == r.parameters["tree_edges"] and "compressed_domains" in meta["parameters"]


def test_rare_values_are_merged_and_released_in_the_choices():
    data = chain(3000, 8)
    data["x4"] = data["x4"] % 3
    data.loc[:4, "x4"] = [3, 4, 4, 3, 4]  # x4 = 3 and 4 are rare (a handful of rows, below 3σ₁ ≈ 82 at ρ = 0.01)
    r = dipsy.synthesize(data, DOMAIN, method="mst", rho=0.01, seed=4, accept_noise=True)
    merged = r.parameters["compressed_domains"]
    assert merged["x4"] == {"values": 5, "compressed": 4, "merged_codes": [3, 4]}
    assert r.tables[0]["x4"].between(0, 4).all()


def test_m_sets_each_run_at_rho_over_m_and_state_their_set():
    r = dipsy.synthesize(chain(2000, 9), DOMAIN, method="mst", rho=0.3, sets=3, seed=5, accept_noise=True)
    s, d = r.statement, len(SIZES)
    assert s.sets == 3 and len(r.tables) == 3
    assert s.per_set.rho == pytest.approx(s.total.rho / 3, rel=1e-12) and s.total.rho <= 0.3 * (1 + 1e-12)
    per = {}
    for m in s.measurements:
        match = re.search(r": set (\d) of 3 \(", m["label"])
        assert match and m["set"] == int(match.group(1)), m["label"]
        per.setdefault(m["set"], []).append(m["rho"])
    assert sorted(per) == [1, 2, 3] and all(len(v) == d + 2 * (d - 1) for v in per.values())
    assert len({round(sum(v), 15) for v in per.values()}) == 1  # every set spends the same, whatever it chose
    assert len(r.parameters["tree_edges_per_set"]) == 3 and r.parameters["rho_per_set"] == pytest.approx(0.1)
    plan = MST(ZCDP(0.3), sets=3).plan(None, DOMAIN)
    assert [x.budget for x in plan.spends if "two-way" in x.label] == [ZCDP(0.2 / 3)] * 3  # reserved per set


def test_a_fitted_m_set_model_draws_each_set_from_its_own_tree():
    _, session, model, _, _ = fitted(chain(2000, 10), DOMAIN, 0.3, sets=2)
    assert isinstance(model, SetsModel) and all(isinstance(p, MSTModel) for p in model.parts)
    assert model.parts[0].two_way[0].counts is not model.parts[1].two_way[0].counts
    session.close()


def test_every_read_is_inside_a_measurement_charged_before_it(monkeypatch):
    """The spy: each contingency the engine answers names the running measurement, whose charge
    the accountant recorded before the read — the edge choices' scores included."""
    events: list[tuple[str, str | None]] = []
    real_spend, real_contingency = Accountant.spend, NumpyEngine.contingency

    def spend(self, label, budget):
        events.append(("charge", label))
        return real_spend(self, label, budget)

    def contingency(self, *args, **kwargs):
        active = ACTIVE.get()
        events.append(("read", None if active is None else active.label))
        return real_contingency(self, *args, **kwargs)

    monkeypatch.setattr(Accountant, "spend", spend)
    monkeypatch.setattr(NumpyEngine, "contingency", contingency)
    dipsy.synthesize(chain(1000, 11), DOMAIN, method="mst", rho=0.5, seed=1)
    reads = [(k, label) for k, (kind, label) in enumerate(events) if kind == "read"]
    assert any("tree edge" in label for _, label in reads if label)
    for k, label in reads:
        assert label is not None, "a read outside any measurement"
        assert ("charge", label) in events[:k], f"{label!r} read before its charge"


def test_the_end_to_end_audit_finds_no_excess_loss():
    case = CASES["mst"]
    assert len(case.domain.names) == 3  # two edge choices run in every release
    result = audit("mst")
    assert sum("tree edge" in c.label for c in result.checks) == 2
    assert not result.flagged and result.replay.same, format_table([result])


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epsilon": 1.0}, "needs rho=, or epsilon= with delta="),
        ({"rho": 0.1, "options": {"theta": 0}}, "option theta must be a whole number >= 1"),
        ({"rho": 0.1, "options": {"gamma": 10}}, "mst has no option 'gamma'"),
        ({"rho": 0.1, "neighbouring": "substitute"}, "add-remove neighbours only"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, message):
    with pytest.raises(DipsyError, match=re.escape(message)):
        dipsy.synthesize(chain(50, 0), DOMAIN, method="mst", accept_noise=True, **kwargs)


def test_registered_and_tiny_or_empty_data_release_without_error():
    assert REGISTRY["mst"] is MST and MST.multiple_sets
    empty = chain(0, 0)
    for frame in (empty, chain(1, 0)):
        r = dipsy.synthesize(frame, DOMAIN, method="mst", rho=0.01, seed=3, accept_noise=True, options={"rows": 5})
        assert len(r.tables[0]) == 5  # the rows option, whether or not the noisy total is positive
    with pytest.raises(DipsyError, match="bins"):
        MST(ZCDP(1.0)).plan(None, Domain((dipsy.Column("v", "numeric", lower=0.0, upper=1.0),)))
