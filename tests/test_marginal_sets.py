"""m independent sets for privsyn and dpsyn (dipsy.methods.marginals.sets; issue #13).

Budget arithmetic (the plan, the ledger, the statement), independence of the sets, what each set
chose in release.json, the combining rule, the composite measurement's check, and a coverage
check: on generated data whose DP noise outweighs the sampling error, one set's naive interval
misses far more often than 5 %, the combined interval of m = 5 sets at the same total budget does
not. Tolerances come from the binomial law of the coverage over the repetitions, or from the
noise's known variance.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_charge_before_read import QUERIES, VALIDATION, recorder  # noqa: F401  (the spy fixture)

import dipsy
import dipsy.api
from dipsy import inference
from dipsy.domain import Domain
from dipsy.errors import BudgetError, PrivacyError
from dipsy.methods.marginals.dpsyn import DPSyn, DPSynModel, post_process_groups, thresholds
from dipsy.methods.marginals.privsyn import SHARES, PrivSyn, PrivSynModel
from dipsy.methods.marginals.sets import Composed, SetsModel
from dipsy.privacy import ZCDP, ApproxDP, Ledger, PureDP
from dipsy.privacy.composition import total_as
from dipsy.privacy.conversions import zcdp_to_epsilon
from dipsy.privacy.ledger_records import budget_of
from dipsy.privacy.measurement import DiscreteGaussian, DiscreteLaplace
from dipsy.privacy.rng import Randomness
from dipsy.privacy.session import Session

SIZES = {"a": 4, "b": 3, "c": 2, "d": 5}
DOMAIN = Domain.from_sizes(SIZES)
SET = re.compile(r": set (\d+) of (\d+) \(")


def frame(n: int, seed: int) -> pd.DataFrame:
    """b follows a w.p. 0.8, d follows c w.p. 0.7: two pairs worth measuring, two that are not."""
    rng = np.random.default_rng(seed)
    a, c = rng.integers(0, 4, n), rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "a": a,
            "b": np.where(rng.random(n) < 0.8, a % 3, rng.integers(0, 3, n)),
            "c": c,
            "d": np.where(rng.random(n) < 0.7, 2 * c, rng.integers(0, 5, n)),
        }
    )


def by_set(spends) -> dict[int, list]:
    """The spends (or measurements) of each set, by the ``set k of m`` of their labels."""
    out = defaultdict(list)
    for s in spends:
        label = s.label if hasattr(s, "label") else s["label"]
        match = SET.search(label)
        assert match, f"a spend of an m-set release without its set: {label!r}"
        out[int(match.group(1))].append(s)
    return dict(out)


@pytest.fixture(scope="module")
def public(tmp_path_factory):
    path = tmp_path_factory.mktemp("public") / "public.csv"
    frame(1000, 99).to_csv(path, index=False)
    return path


# -- privsyn: budget arithmetic ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [2, 5])
def test_privsyn_plan_declares_every_set_at_its_share(m):
    rho = 0.2
    plan = PrivSyn(ZCDP(rho), sets=m).plan(None, DOMAIN)
    d, pairs = len(SIZES), len(SIZES) * (len(SIZES) - 1) // 2
    assert len(plan.measurements) == m * (d + 1)  # each set: d one-way marginals and its own scores
    sets = by_set(plan.spends)
    assert sorted(sets) == list(range(1, m + 1))
    first = [(s.label.split("(", 1)[1], s.budget) for s in sets[1]]
    for spends in sets.values():
        # every set declares the same: d one-way marginals (≤ s₁ρ/m), scores (s₂ρ/m), chosen marginals (s₃ρ/m exactly)
        assert [(s.label.split("(", 1)[1], s.budget) for s in spends] == first
        one_way = sum(s.budget.rho for s in spends if "one-way marginal" in s.label)
        scores = [s.budget.rho for s in spends if "dependency scores" in s.label]
        chosen = [s.budget for s in spends if "chosen marginals" in s.label]
        assert one_way <= SHARES[0] * rho / m * (1 + 1e-12) and one_way == pytest.approx(SHARES[0] * rho / m, rel=1e-3)
        assert len(scores) == 1 and scores[0] == pytest.approx(SHARES[1] * rho / m, rel=1e-3) and scores[0] <= SHARES[1] * rho / m
        assert chosen == [ZCDP(SHARES[2] * rho / m)]
        assert sum(s.budget.rho for s in spends) == pytest.approx(rho / m, rel=1e-3)
    # the plan's scores are measured over every pair
    assert all(f"{pairs} dependency scores" in x.label for x in plan.measurements if "scores" in x.label)
    declared = plan.declared(ZCDP(rho)).rho
    assert declared <= rho * (1 + 1e-12) and declared == pytest.approx(rho, rel=1e-3)
    # the noise of each set's one-way marginals is that of ρ/m: σ² m times one set's at ρ (up to the 1/1024 grid)
    alone = PrivSyn(ZCDP(rho)).plan(None, DOMAIN).measurements[:d]
    for one, many in zip(alone, plan.measurements[:d]):
        assert abs(many.mechanism.sigma2 - m * one.mechanism.sigma2) <= m / 1024


@pytest.fixture(scope="module")
def privsyn_release():
    return dipsy.synthesize(
        frame(3000, 1),
        DOMAIN,
        method="privsyn",
        rho=0.05,
        delta=1e-9,
        sets=4,
        seed=11,
        options={"iterations": 5},
        accept_noise=True,
    )


def test_privsyn_statement_is_what_ran_and_each_set_costs_a_quarter(privsyn_release, tmp_path):
    r = privsyn_release
    s = r.statement
    assert s.sets == 4 and len(r.tables) == 4
    assert s.total.rho == pytest.approx(sum(x.budget.rho for x in r.spends), rel=1e-12)
    assert s.total.rho <= 0.05 * (1 + 1e-12) and s.total.rho == pytest.approx(0.05, rel=1e-3)
    assert s.per_set.rho == pytest.approx(s.total.rho / 4, rel=1e-12)
    sets = by_set(r.spends)
    assert sorted(sets) == [1, 2, 3, 4]
    for spends in sets.values():
        # the per-set line is each set's own cost, not an average of unequal ones
        assert sum(x.budget.rho for x in spends) == pytest.approx(s.per_set.rho, rel=1e-12)
        assert sum("chosen marginals" in x.label for x in spends) == 1
    meta = json.loads((r.save(tmp_path / "rel") / "release.json").read_text())
    assert meta["sets"] == 4 and meta["combining_rule"] == "reiter2003-partial"
    claim = meta["privacy"]["if_unseeded"]
    assert claim["sets"] == 4 and claim["rho_per_set"] == pytest.approx(claim["rho_total"] / 4, rel=1e-12)
    assert claim["epsilon_total"] == pytest.approx(zcdp_to_epsilon(s.total.rho, 1e-9), rel=1e-12)
    assert "sequential composition over 4 sets" in claim["composition"]
    # every measurement that ran is stated, the chosen part with its marginals and their noise
    assert len(claim["measurements"]) == len(r.spends)
    # each measurement names the set it serves: the per-set line composes those of one set
    assert [x["set"] for x in claim["measurements"]] == sorted(x["set"] for x in claim["measurements"])
    assert {x["set"] for x in claim["measurements"]} == {1, 2, 3, 4}
    chosen = [x for x in claim["measurements"] if "chosen marginals" in x["label"]]
    assert len(chosen) == 4 and all(x["noise"]["parts"] for x in chosen)
    for x in chosen:
        parts = sum(p["rho"] for p in x["noise"]["parts"])
        assert parts <= x["rho"] * (1 + 1e-12) and parts == pytest.approx(x["rho"], rel=1e-3)
    # what each set chose is public and released, one list per set
    selected = meta["parameters"]["selected_marginals_per_set"]
    assert len(selected) == 4 and all(isinstance(x, list) for x in selected)
    assert meta["parameters"]["rho_per_set"] == pytest.approx(0.05 / 4)


def test_one_set_is_released_as_before(privsyn_release):
    """m = 1: labels without sets, the chosen marginals one measurement each, the rule 'single'."""
    r = dipsy.synthesize(
        frame(3000, 1), DOMAIN, method="privsyn", rho=0.05, seed=11, options={"iterations": 5}, accept_noise=True
    )
    assert not any(SET.search(x.label) for x in r.spends)
    assert sum("chosen marginal " in x.label for x in r.spends) == len(r.parameters["selected_marginals"])
    assert r.metadata()["combining_rule"] == "single" and "selected_marginals_per_set" not in r.parameters


# -- the ledger: every set reserved before any read -------------------------------------------------------


@pytest.mark.parametrize(
    "method, kwargs",
    [
        ("privsyn", {"rho": 0.05, "delta": 1e-9, "options": {"iterations": 3}}),
        ("dpsyn", {"epsilon": 3.0, "delta": 1e-9, "options": {"pool": 300, "iterations": 3, "least": 10}}),
    ],
)
def test_the_ledger_reserves_every_set_before_any_read(method, kwargs, recorder, public, tmp_path):  # noqa: F811
    if method == "dpsyn":
        kwargs = {**kwargs, "options": {**kwargs["options"], "public": str(public)}}
    ledger = tmp_path / "ledger.sqlite"
    recorder.events.clear()
    release = dipsy.synthesize(
        frame(2000, 2), DOMAIN, method=method, sets=3, ledger=ledger, dataset_id="ds", accept_noise=True, **kwargs
    )  # unseeded: a DP release, counted in the ledger
    events = recorder.events
    assert events[:4] == [*VALIDATION, "ledger: asked", "ledger: charged"], events[:6]
    assert any(e in QUERIES for e in events[4:])  # the reads came, after the charge
    rows = Ledger(ledger).spends("ds")
    reserved = by_set(rows)
    assert sorted(reserved) == [1, 2, 3]
    assert len({len(v) for v in reserved.values()}) == 1  # every set's spends, each set the same number
    # what was reserved before the read bounds what ran, set by set
    ran = by_set(release.spends)
    cap = release.statement.total  # a budget of the release's definition, to add spends in
    for k in (1, 2, 3):
        declared = total_as(cap, [budget_of(r) for r in reserved[k]])
        spent = total_as(cap, [s.budget for s in ran[k]])
        assert not spent.exceeds(declared)
    assert not release.statement.total.exceeds(total_as(cap, [budget_of(r) for r in rows]))


def test_a_cap_too_small_for_three_sets_reads_nothing(recorder, tmp_path):  # noqa: F811
    """ρ = 0.05 in three sets against a cap of ρ = 0.04: refused before any read, nothing recorded."""
    ledger = tmp_path / "ledger.sqlite"
    recorder.events.clear()
    with pytest.raises(BudgetError, match="cap"):
        dipsy.synthesize(
            frame(500, 3),
            DOMAIN,
            method="privsyn",
            rho=0.05,
            sets=3,
            ledger=ledger,
            dataset_id="ds",
            budget_cap="rho=0.04",
            accept_noise=True,
        )
    assert recorder.events == [*VALIDATION, "ledger: asked"]


# -- independence ------------------------------------------------------------------------------------------


def fitted(method, budget, data, domain, sets, seed=0, **options):
    synthesizer = method(budget, sets=sets, options=options)
    plan = synthesizer.plan(None, domain)
    session = Session(
        dipsy.engine.engine_for(data, domain),
        plan.declared(budget),
        plan.relation,
        Randomness.from_seed(seed),
        plan.measurements,
        plan.adaptive is not None,
    )
    model = synthesizer.fit(session, plan)
    session.close()
    return plan, session, model


def test_sets_have_their_own_noise_uncorrelated_and_of_the_per_set_variance():
    """One column of 400 values: each set's noisy one-way counts minus the truth are its own
    discrete Gaussian draws of σ² = 1/(2ρ/m) — uncorrelated between sets (shared noise would give
    correlation 1) and of that variance (a χ² bound)."""
    rng = np.random.default_rng(4)
    domain = Domain.from_sizes({"x": 400})
    data = pd.DataFrame({"x": rng.integers(0, 400, 40_000)})
    truth = np.bincount(data["x"], minlength=400)
    m, rho = 3, 0.03
    _, _, model = fitted(PrivSyn, ZCDP(rho), data, domain, m, seed=5, iterations=1)
    assert isinstance(model, SetsModel) and model.sets == m and all(isinstance(p, PrivSynModel) for p in model.parts)
    noise = np.array([p.noisy_one_way[0] - truth for p in model.parts], dtype=float)
    sigma2 = float(DiscreteGaussian.for_budget(ZCDP(rho / m)).sigma2)
    lo, hi = stats.chi2.ppf([1e-6, 1 - 1e-6], 400)
    for e in noise:
        assert lo <= (e**2).sum() / sigma2 <= hi
    # |r| of two independent samples of 400 exceeds 5/√400 = 0.25 with probability < 1e-6
    corr = np.corrcoef(noise)
    assert np.all(np.abs(corr[np.triu_indices(m, 1)]) < 5 / math.sqrt(400))


def test_sets_choose_their_own_marginals_from_their_own_scores():
    """At a budget where the selection is uncertain the five sets do not all choose alike; each
    set's chosen measurement reads what that set chose."""
    _, session, model = fitted(PrivSyn, ZCDP(0.004), frame(3000, 6), DOMAIN, 5, seed=1, iterations=1)
    selected = [p.selected for p in model.parts]
    assert len(set(selected)) > 1, selected
    chosen = [m for m in session.ran if "chosen marginals" in m.label]
    assert [tuple(q.columns for q in m.query.queries) for m in chosen] == selected
    assert model.choices() == {"selected_marginals_per_set": [[list(x) for x in s] for s in selected]}
    # the tables differ too, and a sixth draw is refused
    rand = Randomness.from_seed(2)
    tables = [model.draw(rand) for _ in range(5)]
    assert not all(np.array_equal(tables[0]["a"], t["a"]) for t in tables[1:])
    with pytest.raises(PrivacyError, match="charged for 5 set"):
        model.draw(rand)


# -- dpsyn ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, m", [(0.09, 5), (3.0, 3), (12.0, 4)])
def test_dpsyn_plan_declares_every_set_at_its_share(public, epsilon, m):
    budget = ApproxDP(epsilon, 1e-8)
    plan = DPSyn(budget, sets=m, options={"public": str(public)}).plan(None, DOMAIN)
    e0, _, e2, _ = thresholds(1)
    sets = by_set(plan.spends)
    assert sorted(sets) == list(range(1, m + 1)) and len(plan.measurements) == m
    for spends in sets.values():
        if epsilon / m < e2:  # regime 1 for every set: its group counts, all of ε/m
            assert [s.budget for s in spends] == [PureDP(epsilon / m)] and plan.adaptive is None
        else:  # its noisy total, then (ε/m − ε₀, δ/m) for what its regime picks
            assert [s.budget for s in spends] == [PureDP(e0), ApproxDP(epsilon / m - e0, 1e-8 / m)]
    declared = plan.declared(budget)
    assert not declared.exceeds(budget) and declared.epsilon == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.06, 0.9, 12.0])  # regime 1 (ε/3 < ε₂), one-way (ε/3 = 0.3), two-way (ε/3 = 4)
def test_dpsyn_statement_each_set_exactly_its_share(public, epsilon, tmp_path):
    """Every set spends (ε/m, δ/m) (or ε/m in regime 1), whatever its regime: the statement's per-set
    line is each set's own guarantee. (Charged part by part, the joint conversion of the sets'
    Gaussians would state a per-set ε below a set's own.)"""
    m, delta = 3, 1e-8
    data = frame(20_000, 8)
    r = dipsy.synthesize(
        data,
        DOMAIN,
        method="dpsyn",
        epsilon=epsilon,
        delta=delta,
        sets=m,
        seed=3,
        options={"public": str(public), "pool": 400, "iterations": 3, "least": 10},
        accept_noise=True,
    )
    s = r.statement
    sets = by_set(r.spends)
    share = ApproxDP(epsilon / m, delta / m)
    for spends in sets.values():
        own = total_as(share, [x.budget for x in spends])
        assert not own.exceeds(share)
        assert own.epsilon == pytest.approx(s.per_set.epsilon, rel=1e-9) and own.delta == pytest.approx(s.per_set.delta, rel=1e-9)
    assert s.total.epsilon == pytest.approx(epsilon, rel=1e-9) and s.per_set.epsilon == pytest.approx(epsilon / m, rel=1e-9)
    regimes = [x["name"] for x in r.parameters["regime_per_set"]]
    # n = 20,000, Ñ = n + Lap(1400): one-way at ε/3 = 0.3 needs Ñ in [5400, 32000), two-way at 4 Ñ >= 2300
    expected = {0.06: "public", 0.9: "one-way", 12.0: "two-way"}[epsilon]
    assert regimes == [expected] * m
    assert s.per_set.delta == (0.0 if epsilon < 0.1 else pytest.approx(delta / m))
    meta = r.metadata()
    assert meta["combining_rule"] == "reiter2003-partial" and meta["parameters"]["epsilon_per_set"] == pytest.approx(epsilon / m)
    if expected == "two-way":  # the sets' Gaussians, converted per set at δ/m: within the share, stated part by part
        parts = [p for x in r.statement.measurements if "noise" in x and "parts" in x["noise"] for p in x["noise"]["parts"]]
        assert any(p["definition"] == "zCDP" for p in parts)


def test_dpsyn_group_sizes_are_the_noisy_counts_of_each_set(public):
    """Group sizes released per set come from that set's noisy group counts, never the true ones:
    each set's differ (independent noise) and equal the post-processed noisy counts."""
    data = frame(6000, 9)
    _, session, model = fitted(DPSyn, ApproxDP(0.06, 1e-9), data, DOMAIN, 2, seed=3, public=str(public), groups="a", least=10)
    truth = np.bincount(data["a"], minlength=4)
    choices = model.choices()
    assert [x["name"] for x in choices["regime_per_set"]] == ["public", "public"]  # ε/2 = 0.03 ≥ ε₂ but τ₁ is large
    sizes = choices["group_sizes_per_set"]
    for part, released in zip(model.parts, sizes):
        assert isinstance(part, DPSynModel)
        assert released == post_process_groups(part.noisy_groups, 10, 10).tolist()
    assert sizes[0] != sizes[1]  # each set its own noise: equal only by a coincidence of rounding
    assert sizes[0] != (np.floor(np.maximum(truth, 10) / 10 + 0.5) * 10).astype(int).tolist()


# -- the composite measurement ------------------------------------------------------------------------------


def test_composed_refuses_a_stated_cost_below_its_parts_and_weakening_keeps_the_claim():
    g = DiscreteGaussian.for_budget(ZCDP(0.1))
    lap = DiscreteLaplace.for_budget(PureDP(0.5))
    ok = Composed((lap, g, g), ApproxDP(0.5 + zcdp_to_epsilon(0.2, 1e-6), 1e-6), ("l", "g1", "g2"))
    assert ok.cost == ApproxDP(0.5 + zcdp_to_epsilon(0.2, 1e-6), 1e-6)
    with pytest.raises(PrivacyError, match="more than"):
        Composed((lap, g, g), ApproxDP(0.5 + zcdp_to_epsilon(0.2, 1e-6) * 0.99, 1e-6), ("l", "g1", "g2"))
    with pytest.raises(PrivacyError, match="more than"):  # δ too small for the Gaussians at that ε
        Composed((lap, g, g), ApproxDP(0.5 + zcdp_to_epsilon(0.2, 1e-6), 1e-7), ("l", "g1", "g2"))
    weak = ok.weakened(0.5)
    assert weak.cost == ok.cost and weak.parts[1].sigma2 == g.sigma2 / 4  # the audit's broken variant claims the same
    rand = Randomness.from_seed(1)
    out = ok.randomise((np.zeros(3, dtype=np.int64), np.zeros(2, dtype=np.int64), np.zeros(4, dtype=np.int64)), rand)
    assert [len(x) for x in out] == [3, 2, 4]


# -- coverage -------------------------------------------------------------------------------------------------

#: The coverage check: P(x = 1) = 0.5, n = 2000, ρ = 0.0002 in all. One set's DP noise on the
#: proportion has variance σ²/(2n²) with σ² = 1/(2ρ) = 2500, i.e. 3.1e-4, beside a sampling variance
#: of 1.25e-4: the naive interval (sampling only) has a true coverage of about
#: P(|Z| < 1.96·√(1.25/4.4)) ≈ 0.70. Five sets at ρ/5 each carry that noise in their spread.
COVERAGE_REPS, COVERAGE_N, COVERAGE_RHO, P = 200, 2000, 0.0002, 0.5


def test_the_combined_interval_covers_where_one_set_s_naive_interval_does_not(monkeypatch):
    # Each release's forecast comes from public inputs alone (the plan's measurements, the domain), the same
    # in every repetition of the one-set and of the five-set release: made once for each and reused, as it
    # took a third of each release's CPU (sums of the discrete Gaussian in Python). It draws nothing: the
    # tables and intervals are those of the releases made with a fresh forecast.
    made, real = {}, dipsy.api.forecast

    def forecast_once(plan, scope, rows=None, method=""):
        key = (method, rows, scope, tuple(m.label for m in plan.measurements))
        if key not in made:
            made[key] = real(plan, scope, rows=rows, method=method)
        return made[key]

    monkeypatch.setattr(dipsy.api, "forecast", forecast_once)
    domain = Domain.from_sizes({"x": 2})
    rng = np.random.default_rng(2024)
    single, combined = np.zeros(COVERAGE_REPS, dtype=bool), np.zeros(COVERAGE_REPS, dtype=bool)
    for r in range(COVERAGE_REPS):
        data = pd.DataFrame({"x": (rng.random(COVERAGE_N) < P).astype(np.int64)})
        one = dipsy.synthesize(
            data, domain, method="privsyn", rho=COVERAGE_RHO, seed=r, options={"iterations": 3}, accept_noise=True, ledger=False
        )
        five = dipsy.synthesize(
            data,
            domain,
            method="privsyn",
            rho=COVERAGE_RHO,
            sets=5,
            seed=10_000 + r,
            options={"iterations": 3},
            accept_noise=True,
            ledger=False,
        )
        c1 = inference.proportion(one.tables, "x", 1).combined
        c5 = inference.proportion(five.tables, "x", 1, rule=five.metadata()["combining_rule"]).combined
        assert c5.rule == "reiter2003-partial"
        single[r] = c1.lower[0] <= P <= c1.upper[0]
        combined[r] = c5.lower[0] <= P <= c5.upper[0]
    sd = math.sqrt(0.95 * 0.05 / COVERAGE_REPS)  # 0.015: the binomial sd of a valid interval's coverage
    assert combined.mean() >= 0.95 - 4 * sd, combined.mean()  # valid, within 4 sd
    assert single.mean() <= 0.95 - 4 * sd, single.mean()  # the naive interval is not
    # paired (same data): McNemar's z on the discordant repetitions, > 3 if combined covers materially more
    gained, lost = int((combined & ~single).sum()), int((single & ~combined).sum())
    assert (gained - lost) / math.sqrt(gained + lost) > 3, (gained, lost)
