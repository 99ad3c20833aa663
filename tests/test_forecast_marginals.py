"""The forecast of MST, AIM, DPSyn and the random decision trees (dipsy.forecast_marginals), from plans alone.

For each method: a verdict that holds for every run (its numbers checked by hand below), a case
where the run's choices leave no verdict, and a check that the forecast reads no data. The hand
numbers use E⁺ = E[max(e, 0)] ≈ σ/√(2π) for a discrete Gaussian of sd σ (the integers' sum falls
short of the integral by about 1/(12σ√(2π)), under 10⁻⁴ of it here) and p/(1 − p²),
p = e^(−1/scale), for a discrete Laplace.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.api import plan_forecast
from dipsy.domain import Column, Domain
from dipsy.forecast import forecast
from dipsy.forecast_marginals import aim_budgets
from dipsy.methods import get
from dipsy.methods.marginals.dpsyn import regime
from dipsy.privacy import ZCDP, ApproxDP, PureDP
from dipsy.privacy.measurement import DiscreteGaussian, Statistic, Table, Total
from dipsy.privacy.samplers import discrete_laplace_pmf
from dipsy.privacy.selection import epsilon_for

GAUSS = 1 / math.sqrt(2 * math.pi)  # E[max(Z, 0)] of a standard normal


def gauss_plus(sd: float) -> float:
    """E[max(e, 0)] of a discrete Gaussian of sd ``sd`` (σ ≥ 5): the integral, less the
    Euler–Maclaurin term of the kink at 0 (the integers' sum falls short by p(0)/12)."""
    return sd * GAUSS - GAUSS / (12 * sd)


def adaptive_part(plan, result):
    return next(p for p in result.parts if p["what"] == plan.adaptive_label)


@pytest.fixture
def no_reads(monkeypatch):
    """Every way to read data fails while it is active: the engines, the queries' answers, pandas'
    readers (the public files) — so a forecast that still works read none of them."""

    def refuse(*args, **kwargs):
        raise AssertionError("the forecast read data")

    from dipsy.methods.marginals import dpsyn
    from dipsy.methods.rdt.synthesizer import LeafCounts

    def arm():
        for target, name in (
            (dipsy.engine, "engine_for"),
            (dpsyn, "engine_for"),
            (dpsyn, "public_engine"),
            (pd, "read_csv"),
            (pd, "read_parquet"),
            (Table, "answer"),
            (Total, "answer"),
            (Statistic, "answer"),
            (LeafCounts, "answer"),
        ):
            monkeypatch.setattr(target, name, refuse)

    return arm


# -- MST ----------------------------------------------------------------------------------------------


def test_mst_is_noise_whichever_tree_it_chooses_when_even_its_least_worst_pair_is():
    """ρ = 0.001, d = 4: each of the 3 pairs gets ρ/9, σ₂² = 9/(2·0.001) = 4500, σ₂ = 67.08, E⁺ =
    67.08/√(2π) = 26.76. Every spanning tree has an edge at e (100 values); its cheapest is e × a,
    4,000 cells: 107,000 spurious records against n = 1,000, 0.9907 noise. The largest pair (e × c,
    6,000 cells) is 0.9938. Both are noise: every run's worst pair is."""
    domain = Domain.from_sizes({"a": 40, "b": 50, "c": 60, "e": 100})
    plan = get("mst")(ZCDP(0.001)).plan(None, domain)
    got = forecast(plan, domain, rows=1000, method="mst")
    part = adaptive_part(plan, got)
    f = part["figures"]
    assert f["noise_sd_per_cell"] == pytest.approx(math.sqrt(4500), rel=1e-6)
    assert f["spurious_per_empty_cell"] == pytest.approx(gauss_plus(math.sqrt(4500)), rel=1e-6)
    # the six pairs have 2,000, 2,400, 3,000, 4,000, 5,000 and 6,000 cells: the median is the upper one
    assert f["pair_cells"] == {"smallest": 2000, "median": 4000, "largest": 6000, "least_worst": 4000}
    assert f["noise_share"]["least_worst"] == pytest.approx(0.9907, abs=1e-4)
    assert f["noise_share"]["largest"] == pytest.approx(0.9938, abs=1e-4)
    assert part["verdict"] == got.verdict == "noise"
    assert "whichever tree the run chooses, its worst pair is noise" in part["text"]
    assert any("ρ/(3(d − 1))" in a and "(e, c)" in a for a in got.advice)  # the cause and the widest columns
    assert not got.not_forecast  # the tree's pairs are forecast: every run is noise


def test_mst_useful_and_at_least_weak_by_hand():
    """ρ = 0.1, sizes 4, 5, 6, 10: σ₂² = 9/(2·0.1) = 45, E⁺ = √45/√(2π) = 2.676. The worst pair has
    40 (e × a) to 60 (e × c) cells: 107 and 160 spurious records against n = 1,000, 0.097 and 0.138:
    useful whatever the tree. At ρ = 0.01 with a = 4, b = 50, c = 60, e = 100: σ₂² = 450, E⁺ = 8.46;
    e × a has 400 cells, 3,385 spurious, 0.772: every tree's worst pair is at least weak (the largest,
    6,000 cells, would be 0.98, noise)."""
    small = Domain.from_sizes({"a": 4, "b": 5, "c": 6, "e": 10})
    plan = get("mst")(ZCDP(0.1)).plan(None, small)
    part = adaptive_part(plan, forecast(plan, small, rows=1000))
    assert part["figures"]["noise_share"]["least_worst"] == pytest.approx(107.0 / 1107.0, abs=5e-4)
    assert part["figures"]["noise_share"]["largest"] == pytest.approx(160.3 / 1160.3, abs=5e-4)
    assert part["verdict"] == "useful"
    wide = Domain.from_sizes({"a": 4, "b": 50, "c": 60, "e": 100})
    plan = get("mst")(ZCDP(0.01)).plan(None, wide)
    part = adaptive_part(plan, forecast(plan, wide, rows=1000))
    assert part["figures"]["noise_share"]["least_worst"] == pytest.approx(3385 / 4385, abs=1e-3)
    assert part["verdict"] == "weak" and "at least weak" in part["text"]


def test_a_useful_release_names_the_parts_no_verdict_covers():
    # every judged part useful, privsyn's chosen marginals unjudged: the summary says useful only where forecast
    f = plan_forecast(None, Domain.from_sizes({"a": 4, "b": 5, "c": 6}), method="privsyn", rho=1.0, rows=10_000)
    assert f.verdict == "useful" and "no verdict on" in f.summary() and "the chosen marginals" in f.summary()
    # every part judged: nothing to add
    whole = plan_forecast(
        None, Domain.from_sizes({"a": 4}), method="laplace-sanitizer", epsilon=5.0, rows=10_000, neighbouring="add-remove"
    )
    assert whole.verdict == "useful" and "no verdict on" not in whole.summary(), whole.summary()


def root(parent: list[int], a: int) -> int:
    """The root of ``a``'s component in a union-find ``parent`` list."""
    while parent[a] != a:
        a = parent[a]
    return a


def test_the_least_worst_pair_of_every_spanning_tree_has_the_widest_column_times_the_narrowest():
    """The figure the MST verdict rests on, against every spanning tree of 4 and 5 columns: the
    smallest worst pair over the trees is s_min·s_max, the largest the domain's largest pair."""
    for sizes in ((4, 5, 6, 10), (3, 30, 7, 7, 2)):
        d = len(sizes)
        edges = list(itertools.combinations(range(d), 2))
        worst = []
        for tree in itertools.combinations(edges, d - 1):
            parent = list(range(d))
            joined = 0
            for a, b in tree:
                ra, rb = root(parent, a), root(parent, b)
                if ra != rb:
                    parent[ra] = rb
                    joined += 1
            if joined == d - 1:  # d − 1 edges that join every column: a spanning tree
                worst.append(max(sizes[a] * sizes[b] for a, b in tree))
        domain = Domain.from_sizes({f"c{i}": s for i, s in enumerate(sizes)})
        plan = get("mst")(ZCDP(1.0)).plan(None, domain)
        cells = adaptive_part(plan, forecast(plan, domain, rows=100))["figures"]["pair_cells"]
        assert (cells["least_worst"], cells["largest"]) == (min(worst), max(worst)), sizes


def test_mst_gives_no_verdict_when_the_tree_decides_or_n_is_unknown():
    """ρ = 0.01, a = 2, b = 50, c = 60, e = 100, n = 10,000: E⁺ = 8.46, so the least worst pair
    (e × a, 200 cells) is 0.145 noise (useful) and the largest (6,000 cells) 0.835 (weak): which
    pairs the exponential mechanism takes decides. Without n: the break-even n instead."""
    domain = Domain.from_sizes({"a": 2, "b": 50, "c": 60, "e": 100})
    plan = get("mst")(ZCDP(0.01)).plan(None, domain)
    got = forecast(plan, domain, rows=10_000)
    part = adaptive_part(plan, got)
    assert part["figures"]["noise_share"]["least_worst"] == pytest.approx(1692 / 11692, abs=1e-3)
    assert part["figures"]["noise_share"]["largest"] == pytest.approx(50760 / 60760, abs=1e-3)
    assert part["verdict"] == "unknown" and "no verdict: which pairs the tree takes" in part["text"]
    assert any(plan.adaptive_label in s for s in got.not_forecast)
    blind = adaptive_part(plan, forecast(plan, domain))
    assert blind["verdict"] == "unknown" and blind["figures"]["break_even_n"]["least_worst"] == pytest.approx(1692, rel=1e-3)


# -- AIM ----------------------------------------------------------------------------------------------


def test_aim_is_noise_when_even_a_one_way_at_the_least_noise_is():
    """rounds = 3 = d: the one-ways take 3 · 0.9ρ/3 = 0.9ρ, A = 0.1ρ remains, below 2ρ/T, so the first
    round is the last and measures with 0.9A = 0.09ρ = 0.0009 at ρ = 0.01 (a little more: the one-ways' σ²
    are rounded up, so they cost a little less than 0.9ρ): σ² = 1/0.0018 = 555.6,
    E⁺ = 23.57/√(2π) = 9.40. Even the narrowest column (40 cells) at that noise gains 376 spurious
    records against n = 30: 0.926, noise, and every other marginal it may measure has more cells."""
    domain = Domain.from_sizes({"a": 40, "b": 50, "c": 60})
    plan = get("aim")(ZCDP(0.01), 1, {"rounds": 3}).plan(None, domain)
    got = forecast(plan, domain, rows=30, method="aim")
    part = adaptive_part(plan, got)
    f = part["figures"]
    assert f["least_measurement_rho"] == pytest.approx(0.0009, rel=1e-4) and f["most_measurement_rho"] == pytest.approx(
        0.0009, rel=1e-4
    )
    assert f["spurious_per_empty_cell"]["least"] == pytest.approx(gauss_plus(math.sqrt(1 / 0.0018)), rel=1e-4)
    assert f["noise_share"]["narrowest_at_least_noise"] == pytest.approx(376.1 / 406.1, abs=1e-3)
    assert f["marginal_cells"]["largest_candidate"] == 40 * 50 * 60
    assert part["verdict"] == got.verdict == "noise" and not got.not_forecast
    assert any("rounds=" in a and "workload=2" in a for a in got.advice)


def test_aim_is_useful_when_even_its_largest_candidate_at_the_most_noise_is():
    """ρ = 1, sizes 2, 3, 4, T = 48: no round measures with less than 0.9ρ/T = 0.01875, σ² = 26.67,
    E⁺ = 5.164/√(2π) − 1/(12 · 5.164 · √(2π)) = 2.054; the largest candidate, the 3-way of 24 cells,
    gains 49.3 spurious records against n = 10,000: 0.0049, useful whatever the rounds choose."""
    domain = Domain.from_sizes({"a": 2, "b": 3, "c": 4})
    plan = get("aim")(ZCDP(1.0)).plan(None, domain)
    part = adaptive_part(plan, forecast(plan, domain, rows=10_000))
    assert part["figures"]["most_measurement_rho"] == pytest.approx(0.9 / 48)
    assert part["figures"]["noise_share"]["largest_at_most_noise"] == pytest.approx(49.29 / 10049.29, rel=1e-3)
    assert part["verdict"] == "useful"


def test_aim_gives_no_verdict_when_its_rounds_may_measure_one_ways_only():
    """ρ = 0.1, sizes 4, 5, 6, 10, n = 1,000: a one-way of 4 cells at the least noise is 0.5 % noise,
    a 3-way of 300 cells at the most noise 69 %: the rounds' choices decide, so no verdict."""
    domain = Domain.from_sizes({"a": 4, "b": 5, "c": 6, "e": 10})
    plan = get("aim")(ZCDP(0.1)).plan(None, domain)
    got = forecast(plan, domain, rows=1000)
    part = adaptive_part(plan, got)
    assert (
        part["figures"]["noise_share"]["narrowest_at_least_noise"]
        < 0.3
        <= part["figures"]["noise_share"]["largest_at_most_noise"]
    )
    assert part["verdict"] == "unknown" and "possibly one-ways only" in part["text"]
    assert any(plan.adaptive_label in s for s in got.not_forecast)
    assert adaptive_part(plan, forecast(plan, domain))["verdict"] == "unknown"  # and without n


@pytest.mark.parametrize(
    "d, T, attained", [(4, 64, True), (3, 3, True), (10, 1000, True), (14, 224, False), (5, 7, False), (20, 20, False)]
)
def test_aim_budgets_bound_every_round_of_every_annealing_path(d, T, attained):
    """AIM's round loop (aim.AIM.fit: the last round spends what remains when it is below twice the
    round's nominal budget; annealing quadruples it), run along 400 random annealing paths and the
    two extreme ones: every measurement's noise lies between that of aim_budgets' two ends. The most
    noise is always reached (the first rounds); the least is reached where the largest remainder is
    one a path that anneals every round ends with (A − S_J < 2ρ_J), else within a factor 2 of ρ (a
    last round keeps less than 2ρ_J, and the rounds' costs come in steps)."""
    rho, theta = 1.0, 1
    one = DiscreteGaussian.for_budget(ZCDP(0.9 * rho / T), theta).cost.rho
    adaptive = rho - d * one
    low, high = aim_budgets(rho, T, adaptive, theta)
    least, most = DiscreteGaussian.for_budget(ZCDP(high), theta), DiscreteGaussian.for_budget(ZCDP(low), theta)
    rng = random.Random(1)
    seen = []
    for path in range(402):
        anneal = {0: 0.0, 1: 1.0}.get(path, rng.random())  # never, always, then at random
        remaining, nominal = adaptive, rho / T
        while True:
            last = remaining < 2 * nominal
            if last:
                noise = DiscreteGaussian.for_budget(ZCDP(0.9 * remaining), theta)
                eps = epsilon_for(remaining - noise.cost.rho)
            else:
                noise = DiscreteGaussian.for_budget(ZCDP(0.9 * nominal), theta)
                eps = epsilon_for(0.1 * nominal)
            seen.append(noise.sigma2)
            remaining -= noise.cost.rho + float(eps * eps / 8)
            if last:
                break
            if rng.random() < anneal:
                nominal *= 4
    assert least.sigma2 <= min(seen) and max(seen) == most.sigma2
    assert min(seen) == least.sigma2 if attained else min(seen) <= 2 * least.sigma2


# -- DPSyn --------------------------------------------------------------------------------------------


@pytest.fixture
def public(tmp_path):
    """A public data set of the dpsyn domains below (values within every domain's codes)."""
    path = tmp_path / "public.csv"
    pd.DataFrame({"g": [0, 1, 1, 0], "x": [0, 1, 2, 0], "y": [1, 0, 3, 2], "z": [0, 4, 2, 1]}).to_csv(path, index=False)
    return path


def dpsyn_plan(public, sizes, epsilon, **options):
    domain = Domain.from_sizes(sizes)
    return domain, get("dpsyn")(ApproxDP(epsilon, 1e-9), 1, {"public": str(public), **options}).plan(None, domain)


def test_dpsyn_is_noise_when_its_group_counts_are_even_at_the_most_they_can_get(public):
    """ε = 1, 2,000 group cells, n = 50: the group counts get at most ε − ε₀ = 1 − 1/1400 (the public
    regime), discrete Laplace scale 1/0.99929 = 1.0007, p = 0.36813, E⁺ = p/(1 − p²) = 0.42587;
    2,000 cells gain 851.7 spurious records against 50: 0.9446, noise in every regime (the others
    give the group counts less)."""
    domain, plan = dpsyn_plan(public, {"g": 2000, "x": 3, "y": 4}, 1.0, groups="g")
    got = forecast(plan, domain, rows=50, method="dpsyn")
    part = adaptive_part(plan, got)
    public_regime = part["figures"]["regimes"]["public"]
    assert public_regime["group_epsilon"] == pytest.approx([1 - 1 / 1400] * 2)
    assert public_regime["noise_share"][0] == pytest.approx(851.7 / 901.7, abs=1e-4)
    assert part["verdict"] == got.verdict == "noise" and "its worst table is noise" in part["text"]
    assert "group cells" in got.advice[0]


def test_dpsyn_gives_no_verdict_while_the_public_regime_is_possible(public):
    """No groups, ε = 1, n = 30,000: the public regime needs a noisy total below 1500/(1 − 1/1400 −
    1/50) = 1,532, about 20 scales below n — improbable (7e-10) but possible, and it measures none of
    the columns. Without n the part says to declare it."""
    domain, plan = dpsyn_plan(public, {"x": 3, "y": 4, "z": 5}, 1.0)
    got = forecast(plan, domain, rows=30_000)
    part = adaptive_part(plan, got)
    odds = part["figures"]["regime_probability"]
    assert part["figures"]["regime_noisy_total_below"]["public"] == pytest.approx(1500 / (1 - 1 / 1400 - 0.02))
    assert 0 < odds["public"] < 1e-8 and odds["two-way"] > 0.999
    assert part["verdict"] == "unknown" and "the public one measures none of every column" in part["text"]
    assert any(plan.adaptive_label in s for s in got.not_forecast)
    assert "declare --rows" in adaptive_part(plan, forecast(plan, domain))["text"]


def test_below_epsilon_2_dpsyn_says_its_columns_follow_the_public_data(public):
    """ε = 0.02 < ε₂ = 1/35: the plan measures the group counts only (judged as a noisy table); the
    other columns come from the public data set, which no noise figure can judge."""
    domain, plan = dpsyn_plan(public, {"g": 2, "x": 3, "y": 4}, 0.02, groups="g")
    got = forecast(plan, domain, rows=30_000)
    info = next(p for p in got.parts if p["what"] == "dpsyn: the columns besides the groups")
    assert info["verdict"] == "unknown" and "x, y follow the public data set public.csv" in info["text"]
    assert any(p["verdict"] == "useful" and "2 cells" in p["text"] for p in got.parts)  # the group counts


@pytest.mark.parametrize("epsilon, theta, tau", [(1.0, 1, "tau1"), (0.25, 7, "tau1"), (0.25, 7, "tau2"), (3.0, 2, "tau2")])
def test_dpsyn_ranges_hold_every_regime_the_noisy_total_can_pick(public, epsilon, theta, tau):
    """dpsyn's own regime() over noisy totals from −10⁴ to 10⁹: every regime it picks is one the
    forecast calls possible, and its group and marginal ε lie within the forecast's ranges."""
    domain, plan = dpsyn_plan(public, {"g": 3, "x": 3, "y": 4}, epsilon, groups="g", theta=theta, tau=tau)
    regimes = adaptive_part(plan, forecast(plan, domain))["figures"]["regimes"]
    picked = set()
    for total in [-1e4, 0, 1, 2, *np.geomspace(3, 1e9, 400)]:
        r = regime(epsilon, theta, float(total), tau)
        name = {"public": "public", "one-way": "one-way", "two-way": "two-way"}[r.name]
        picked.add(name)
        lo, hi = regimes[name]["group_epsilon"]
        assert lo - 1e-12 <= r.group_epsilon <= hi + 1e-12, (total, r)
        if name != "public":
            lo, hi = regimes[name]["marginal_epsilon"]
            assert lo - 1e-12 <= r.marginal_epsilon <= hi + 1e-12, (total, r)
    assert picked == set(regimes)  # the forecast's possible regimes are the ones that occur


def test_dpsyn_regime_odds_are_the_discrete_laplace_sums(public):
    """P(public) = Σ_z P(Z = z)·[max(n + z, 1) < 1500θ/D], summed directly over the pmf, n = 1,000."""
    domain, plan = dpsyn_plan(public, {"g": 3, "x": 3, "y": 4}, 1.0, groups="g")
    figures = adaptive_part(plan, forecast(plan, domain, rows=1000))["figures"]
    z = np.arange(-60_000, 60_001)
    pmf = discrete_laplace_pmf(z, 1400)
    seen = np.maximum(1000 + z, 1)
    at_a, at_c = figures["regime_noisy_total_below"]["public"], figures["regime_noisy_total_below"]["one-way"]
    odds = figures["regime_probability"]
    assert odds["public"] == pytest.approx(pmf[seen < at_a].sum(), abs=1e-9)
    assert odds["two-way"] == pytest.approx(pmf[seen >= at_c].sum(), abs=1e-9)


# -- random decision trees ----------------------------------------------------------------------------

RDT_DOMAIN = Domain(
    (
        Column("a", "categorical", categories=tuple(range(6)), role="public"),
        Column("s", "categorical", categories=("F", "M")),
    )
)


def rdt_plan(epsilon, n, **options):
    synth = get("rdt")(PureDP(epsilon), 1, {"sensitive": "s", "structure": "random", "depth": 1, "trees": 1, **options})
    return synth.plan(n, RDT_DOMAIN)


def test_rdt_leaf_counts_are_noise_when_six_leaves_of_two_labels_outweigh_n():
    """One random tree of depth 1 splits on a: 6 leaves × 2 labels. ε = 0.01 under substitution (Δ = 2):
    scale 200, p = e^(−1/200), E⁺ = p/(1 − p²) = 99.75; 12 cells gain 1,197 spurious records against
    n = 100 (public under substitution, held by the plan): 0.923, noise."""
    plan = rdt_plan(0.01, 100)
    got = forecast(plan, RDT_DOMAIN, method="rdt")
    [part] = got.parts
    p = math.exp(-1 / 200)
    spurious = 12 * p / (1 - p * p)
    assert part["figures"]["leaves_per_tree"] == {"least": 6, "median": 6, "most": 6}
    assert part["figures"]["noise_share_at_most"] == pytest.approx(spurious / (100 + spurious), rel=1e-9)
    assert spurious / (100 + spurious) == pytest.approx(0.923, abs=1e-3)
    assert part["verdict"] == got.verdict == "noise" and not got.not_forecast
    assert "a larger n_b" in got.advice[0]


def test_rdt_bound_is_the_mean_of_its_trees_and_bounds_every_split_of_the_records():
    """Each tree's bound L·a/(n + L·a), a = K·E⁺, averaged over the column's trees; and it bounds the
    record-weighted share Σ (n_ℓ/n)·a/(n_ℓ + a) of any split of n over L leaves (concavity)."""
    plan = get("rdt")(
        PureDP(1.0), 1, {"sensitive": "s", "structure": "random", "depth": 1, "trees": 4, "structure_seed": 3}
    ).plan(500, RDT_DOMAIN)
    [part] = forecast(plan, RDT_DOMAIN).parts
    leaves = [len(m.query.tree.leaves) for m in plan.measurements if hasattr(m.query, "tree")]
    p = math.exp(-1 / 8)  # ε_tree = 1/4, Δ = 2: scale 8
    a = 2 * p / (1 - p * p)
    assert part["share"] == pytest.approx(np.mean([L * a / (500 + L * a) for L in leaves]), rel=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(200):
        counts = rng.multinomial(500, rng.dirichlet(np.full(6, 0.3)))
        weighted = sum(c / 500 * a / (c + a) for c in counts)
        assert weighted <= 6 * a / (500 + 6 * a) + 1e-12


def test_rdt_gives_no_verdict_when_n_is_not_public():
    """targets=PATH under add/remove: n is neither held by the plan nor declared; the break-even n is
    the median tree's leaf cells × E⁺ (6 × 2 × p/(1 − p²), scale 1/0.01 = 100: 598.5)."""
    plan = rdt_plan(0.01, None)  # the plan below needs no targets: n is what is tested
    assert "n" not in plan.parameters
    [part] = forecast(plan, RDT_DOMAIN).parts
    p = math.exp(-1 / 200)  # substitution still: scale 200 (the relation is the plan's)
    assert part["verdict"] == "unknown" and part["figures"]["break_even_n"] == pytest.approx(12 * p / (1 - p * p))
    assert "declare --rows" in part["text"]


# -- reading nothing ----------------------------------------------------------------------------------


def test_no_forecast_reads_data(public, no_reads):
    """Plans of each method made first (dpsyn and rdt read their public files there); then, with every
    reader failing, each forecast still comes out."""
    domain = Domain.from_sizes({"g": 20, "x": 3, "y": 4})
    plans = [
        (get("mst")(ZCDP(0.01)).plan(None, domain), domain),
        (get("aim")(ZCDP(0.01)).plan(None, domain), domain),
        (get("dpsyn")(ApproxDP(1.0, 1e-9), 1, {"public": str(public), "groups": "g"}).plan(None, domain), domain),
        (rdt_plan(0.5, 100), RDT_DOMAIN),
    ]
    no_reads()
    for plan, scope in plans:
        got = forecast(plan, scope, rows=None if plan.parameters.get("n") else 1000)
        assert got.parts and got.to_dict()["parts"]


def test_plan_forecast_of_mst_needs_no_data():
    """The one end-to-end check: dipsy.api.plan_forecast with no data at all (add/remove: n is not read),
    the rows declared, the pairs' part in the forecast and the declared n among its inputs."""
    got = plan_forecast(None, Domain.from_sizes({"a": 40, "b": 50, "c": 60, "e": 100}), "mst", rho=0.001, rows=1000)
    assert got.verdict == "noise" and any("declared public" in i for i in got.inputs)
    assert any("spanning tree" in p["text"] for p in got.parts)
