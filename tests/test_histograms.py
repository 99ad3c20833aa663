"""Perturbed histogram, smoothed histogram and the exponential-mechanism ECDF (Wasserman & Zhou 2010).

Privacy conditions are checked by exact enumeration against closed forms written here, independent
of the code under test (multinomial pmfs from ``gammaln``, ECDFs from raw comparisons ``x <= t``):
each holds at the derived parameter and fails below it. Noise is checked by reproducing it exactly
from the seed, as ``tests/test_count_methods.py`` does for the Laplace sanitizer.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import gammaln, logsumexp

import dipsy
from dipsy.domain import Column, Domain
from dipsy.domain.codec import encode_column
from dipsy.engine import NumpyEngine, engine_for
from dipsy.errors import DipsyError, DomainError, PrivacyError
from dipsy.methods import REGISTRY, histograms
from dipsy.methods.dp_prior import minimum_prior
from dipsy.methods.exponential_ecdf import (
    MAX_CANDIDATES,
    ExponentialECDF,
    candidate_paths,
    ecdf_cells,
    ks_levels,
    number_of_candidates,
)
from dipsy.methods.histograms import MAX_CELLS, PerturbedHistogram, SmoothedDraw, SmoothedHistogram, equal_bins, least_delta
from dipsy.privacy import PureDP
from dipsy.privacy.audit import compositions, largest_privacy_loss, neighbours
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace
from dipsy.privacy.selection import exponential_choice
from dipsy.privacy.session import Session

METHODS = {
    "perturbed-histogram": PerturbedHistogram,
    "smoothed-histogram": SmoothedHistogram,
    "exponential-ecdf": ExponentialECDF,
}


def test_the_methods_are_registered():
    assert all(REGISTRY[name] is cls for name, cls in METHODS.items())


def one_column(edges, kind="numeric", name="x") -> Domain:
    return Domain((Column(name, kind, lower=edges[0], upper=edges[-1], bins=tuple(float(e) for e in edges)),))


def fitted(method, data, domain: Domain, seed: int = 0):
    """Plan and fit a configured method on a DataFrame (or file), as the API does: through a session."""
    engine = engine_for(data, domain)
    plan = method.plan(engine.num_rows() if method.relation.fixes_n else None, domain)
    session = Session(engine, plan.declared(method.budget), plan.relation, Randomness.from_seed(seed), plan.measurements)
    return plan, method.fit(session, plan)


def exact_counts(data, cells: Domain) -> np.ndarray:
    """What a measurement of ``cells`` reads (for the tests only)."""
    return NumpyEngine(data, cells).contingency(cells.names, form="dense").counts


def bin_of(values: np.ndarray, edges) -> np.ndarray:
    """Independent bin index: the number of interior edges <= v (the last bin holds the upper bound)."""
    return np.array([sum(v >= e for e in edges[1:-1]) for v in values])


# -- sensitivity of bin counts (property tests) ----------------------------------------------------------


@st.composite
def binned_data(draw):
    interior = draw(st.lists(st.floats(0.01, 9.99), min_size=1, max_size=4, unique=True))
    edges = [0.0, *sorted(interior), 10.0]
    value = st.one_of(st.floats(0, 10), st.sampled_from(edges))  # edges themselves are the hard cases
    values = draw(st.lists(value, min_size=1, max_size=25))
    i = draw(st.integers(0, len(values) - 1))
    return edges, values, i, draw(value)


def counts_of(values, domain: Domain) -> np.ndarray:
    return NumpyEngine(pd.DataFrame({"x": values}), domain).contingency(["x"]).dense().ravel()


@settings(max_examples=60, deadline=None)
@given(binned_data())
def test_changing_a_record_moves_the_bin_counts_by_at_most_two_and_removing_one_by_exactly_one(case):
    edges, values, i, new = case
    domain = one_column(edges)
    before = counts_of(values, domain)
    assert before.tolist() == np.bincount(bin_of(np.array(values), edges), minlength=len(edges) - 1).tolist()
    changed = counts_of(values[:i] + [new] + values[i + 1 :], domain)
    moved = bin_of(np.array([values[i]]), edges)[0] != bin_of(np.array([new]), edges)[0]
    assert np.abs(changed - before).sum() == (2 if moved else 0)  # substitution: Δ = 2, attained across bins
    removed = counts_of(values[:i] + values[i + 1 :], domain) if len(values) > 1 else np.zeros_like(before)
    assert np.abs(removed - before).sum() == 1  # add/remove: Δ = 1, always attained


@settings(max_examples=60, deadline=None)
@given(binned_data(), st.integers(2, 6))
def test_the_ecdf_on_the_grid_counts_values_at_most_each_grid_point_and_moves_by_at_most_one(case, points):
    edges, values, i, new = case
    column = Column("x", "numeric", lower=0.0, upper=10.0)
    grid = np.concatenate([np.linspace(0, 10, points), np.asarray(edges[1:-1])])
    grid = np.unique(grid)
    cells = Domain((ecdf_cells(column, grid),))
    a = np.cumsum(counts_of(values, cells))
    assert a.tolist() == [(np.array(values) <= t).sum() for t in grid]  # F^(t_i) = #{x <= t_i}
    b = np.cumsum(counts_of(values[:i] + [new] + values[i + 1 :], cells))
    assert np.abs(a - b).max() <= 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=1, max_size=25), st.integers(1, 7))
def test_equal_bins_override_counts_the_same_rows_in_k_equal_bins(values, k):
    domain = one_column([0, 3, 10])
    rebinned = equal_bins(domain, k)
    assert rebinned["x"].bins == tuple(np.linspace(0, 10, k + 1))
    counts = counts_of(values, rebinned)
    assert counts.tolist() == np.bincount(bin_of(np.array(values), rebinned["x"].bins), minlength=k).tolist()


def test_moving_one_record_between_the_extreme_bins_attains_both_sensitivities():
    domain = one_column([0, 1, 4, 10])
    base = counts_of([0.5, 5.0, 10.0], domain)
    assert np.abs(counts_of([10.0, 5.0, 10.0], domain) - base).sum() == 2
    assert np.abs(counts_of([5.0, 10.0], domain) - base).sum() == 1


# -- perturbed histogram -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ce():
    domain = Domain.load(CE_DOMAIN).project(["Income", "Expenditure"])
    return pd.read_csv(CE_DATA)[["Income", "Expenditure"]], domain


@pytest.mark.parametrize("neighbouring, sensitivity", [("add-remove", 1), ("substitute", 2)])
def test_perturbed_counts_are_the_true_counts_plus_exact_noise_fresh_for_every_set(ce, neighbouring, sensitivity):
    data, domain = ce
    sets, eps = 4, Fraction(2)
    method = PerturbedHistogram(PureDP(2.0), sets=sets, neighbouring=neighbouring)
    plan, model = fitted(method, data, domain, seed=11)
    truth = NumpyEngine(data, domain).contingency().dense().ravel()
    eps_table = eps / sets * (Fraction(9, 10) if neighbouring == "add-remove" else 1)
    assert plan.parameters["noise"]["scale"] == str(sensitivity / eps_table)
    assert len(plan.measurements) == sets * (2 if neighbouring == "add-remove" else 1)
    again = Randomness.from_seed(11)
    for k in range(sets):  # every set reproduced from the same stream, each with its own noise
        noisy = truth + discrete_laplace(sensitivity / eps_table, truth.size, again)
        n = len(data)
        if neighbouring == "add-remove":
            n = max(n + int(discrete_laplace(1 / (eps / sets / 10), 1, again)[0]), 0)
        assert model.outputs[k].tolist() == noisy.tolist() and model.totals[k] == n
    # a record set: n cells from the normalised, thresholded table (post-processing only)
    rand, replay = Randomness.from_seed(3), Randomness.from_seed(3)
    noisy = np.maximum(model.outputs[0], 0)
    assert model.counts(0, rand).tolist() == replay.numpy.multinomial(model.totals[0], noisy / noisy.sum()).tolist()


def test_m_sets_spend_epsilon_over_m_each(ce):
    data, domain = ce
    add = dipsy.synthesize(data, domain, method="perturbed-histogram", epsilon=1.0, sets=10, seed=3)
    assert len(add.tables) == 10 and add.statement.per_set.epsilon == pytest.approx(0.1)
    assert [s.budget.epsilon for s in add.spends] == pytest.approx([0.09, 0.01] * 10)
    assert add.statement.neighbouring.startswith("add/remove") and "n = " not in " ".join(add.statement.public)
    sub = dipsy.synthesize(data, domain, method="perturbed-histogram", epsilon=1.0, sets=10, seed=3, neighbouring="substitute")
    assert [s.budget.epsilon for s in sub.spends] == pytest.approx([0.1] * 10)
    assert sub.parameters["sensitivity"] == 2 and f"n = {len(data)}" in sub.statement.public[0]


@pytest.mark.parametrize("options", [{}, {"bins": 6}])
def test_perturbed_records_have_n_rows_inside_the_bounds_and_their_cells(ce, options):
    data, domain = ce
    method = PerturbedHistogram(PureDP(5.0), sets=2, neighbouring="substitute", options=options)
    plan, model = fitted(method, data, domain)
    cells = equal_bins(domain, options.get("bins"))
    rand = Randomness.from_seed(5)
    drawn = model.draw(rand)
    records = drawn if isinstance(drawn, pd.DataFrame) else dipsy.domain.decode(drawn, domain, rand.numpy)
    assert isinstance(drawn, pd.DataFrame) == bool(options)  # the caller cannot decode bins it does not know
    assert len(records) == len(data) and list(records.columns) == ["Income", "Expenditure"]
    for c in cells.columns:
        assert records[c.name].between(c.lower, c.upper).all()
    # decoded inside their cells: re-encoding the records gives back the drawn cells
    again = Randomness.from_seed(5)
    counts = model.counts(0, again)
    codes = {c.name: encode_column(records[c.name], c).codes for c in cells.columns}
    cell = np.ravel_multi_index((codes["Income"], codes["Expenditure"]), cells.shape())
    assert np.bincount(cell, minlength=counts.size).tolist() == counts.tolist()


def test_perturbed_refuses_what_it_cannot_do(ce):
    with pytest.raises(DipsyError, match="cannot release a 'table'"):
        PerturbedHistogram(PureDP(1.0), release="table")
    with pytest.raises(DipsyError, match="bins must be a whole number"):
        PerturbedHistogram(PureDP(1.0), options={"bins": 0})
    with pytest.raises(DipsyError, match="total_share"):
        PerturbedHistogram(PureDP(1.0), options={"total_share": 1})
    with pytest.raises(DipsyError, match="numeric without bins"):
        PerturbedHistogram(PureDP(1.0)).plan(None, Domain((Column("x", "numeric", lower=0, upper=1),)))
    with pytest.raises(DipsyError, match="more than the 1,000,000"):
        PerturbedHistogram(PureDP(1.0), options={"bins": 10**10}).plan(None, one_column([0, 1]))


def test_sizes_are_refused_from_what_is_declared_before_anything_is_allocated(ce, monkeypatch):
    """The audit's ``bins=10000000000`` allocated 74.5 GiB; now every size is refused from the
    declared numbers, before a single bin edge exists."""
    data, domain = ce

    def no_bins(*args, **kwargs):
        raise AssertionError("bins were built before the sizes were checked")

    monkeypatch.setattr(histograms, "equal_bins", no_bins)
    with pytest.raises(DipsyError, match="more than the 1,000,000"):  # as the option is read, before any plan
        PerturbedHistogram(PureDP(1.0), options={"bins": 10**10})
    with pytest.raises(DomainError, match=f"10,000 × 10,000.*more than the {MAX_CELLS:,}"):
        PerturbedHistogram(PureDP(1.0), options={"bins": 10**4}).plan(None, domain)
    with pytest.raises(DomainError, match=f"more than the {MAX_CELLS:,}"):
        SmoothedHistogram(PureDP(1.0), options={"bins": 10**4}).plan(len(data), domain)
    with pytest.raises(DomainError, match="300 sets of 1,000,000 noisy cell counts.*fewer sets"):  # each set keeps its own
        PerturbedHistogram(PureDP(1.0), sets=300, options={"bins": 10**6}).plan(None, domain.project(["Income"]))
    with pytest.raises(DipsyError) as refused:  # through the API too: one line, the problem and its fix
        dipsy.synthesize(data, domain, method="perturbed-histogram", epsilon=1.0, options={"bins": 10_000_000_000})
    assert refused.value.problem and refused.value.fix


@pytest.mark.parametrize("method, sets", [("perturbed-histogram", 3), ("smoothed-histogram", 1), ("exponential-ecdf", 2)])
def test_each_model_refuses_a_draw_past_its_charged_sets(ce, method, sets):
    if method == "exponential-ecdf":
        data, options = pd.DataFrame({"k": [5, 5, 7, 0]}), {"grid": 3}
        domain = Domain((Column("k", "integer", lower=0, upper=10, bins=(0, 5, 10)),))
    else:
        (data, domain), options = ce, {"bins": 4}
    plan, model = fitted(REGISTRY[method](PureDP(1.0), sets=sets, options=options), data, domain)
    assert model.sets == sets
    rand = Randomness.from_seed(3)
    for _ in range(sets):
        model.draw(rand)
    with pytest.raises(PrivacyError, match=f"charged for {sets} set"):
        model.draw(rand)


def test_under_add_remove_no_plan_receives_n(ce, monkeypatch):
    """n reaches the plan only under substitution; under add/remove each set measures its own total."""
    data, domain = ce
    seen = []
    real = PerturbedHistogram.plan
    monkeypatch.setattr(PerturbedHistogram, "plan", lambda self, n, d: seen.append(n) or real(self, n, d))
    added = dipsy.synthesize(data, domain, method="perturbed-histogram", epsilon=1.0, sets=3, seed=1, options={"bins": 5})
    substituted = dipsy.synthesize(
        data, domain, method="perturbed-histogram", epsilon=1.0, sets=3, seed=1, options={"bins": 5}, neighbouring="substitute"
    )
    assert seen == [None, len(data)]
    assert not any(p.startswith("n =") for p in added.statement.public) and "n" not in added.parameters
    table = "the counts of the Income × Expenditure table"
    assert [m["query"] for m in added.statement.measurements] == [table, "the number of rows"] * 3
    assert [m["query"] for m in substituted.statement.measurements] == [table] * 3
    assert substituted.parameters["n"] == len(data) and all(len(t) == len(data) for t in substituted.tables)


def test_a_noisy_total_at_or_below_zero_gives_an_empty_set_not_a_crash():
    data, domain = pd.DataFrame({"x": [0.5]}), one_column([0, 0.5, 1])
    for seed in range(60):  # a total of noise scale 80 around n = 1: about half the sets come out <= 0
        release = dipsy.synthesize(
            data, domain, method="perturbed-histogram", epsilon=0.05, sets=2, seed=seed, options={"total_share": 0.5}
        )
        assert all(list(t.columns) == ["x"] and t["x"].between(0, 1).all() for t in release.tables)
        if any(len(t) == 0 for t in release.tables):
            break
    else:
        pytest.fail("no set had a noisy total <= 0")


def test_perturbed_plans_without_n_under_add_remove_and_models_refuse_a_further_set(ce):
    data, domain = ce
    method = PerturbedHistogram(PureDP(1.0), sets=2)
    plan = method.plan(None, domain)
    assert not any(p.startswith("n =") for p in plan.public) and "n" not in plan.parameters
    _, model = fitted(method, data, domain)
    rand = Randomness.from_seed(1)
    model.draw(rand), model.draw(rand)
    with pytest.raises(PrivacyError):
        model.draw(rand)


# -- smoothed histogram --------------------------------------------------------------------------------------


def smoothed_log_pmf(delta: float, shares: np.ndarray):
    """log P(bin counts c | data y) for n draws from (1 - δ) histogram + δ uniform: a multinomial."""

    def log_pmf(outputs: np.ndarray, y: np.ndarray) -> np.ndarray:
        n = y.sum()
        p = (1 - delta) * y / n + delta * shares
        return gammaln(n + 1) - gammaln(outputs + 1).sum(axis=1) + (outputs * np.log(p)).sum(axis=1)

    return log_pmf


GRIDS = {
    "2 equal": ([0, 5, 10],),
    "2 unequal": ([0, 1, 10],),
    "3 unequal": ([0, 2, 3, 10],),
    "4 unequal": ([0, 0.5, 4, 6, 10],),
    "2x2 unequal": ([0, 3, 10], [0, 8, 10]),
}


def grid_domain(edges_per_column) -> Domain:
    return Domain(
        tuple(
            Column(f"x{j}", "numeric", lower=e[0], upper=e[-1], bins=tuple(map(float, e))) for j, e in enumerate(edges_per_column)
        )
    )


def grid_shares(edges_per_column) -> np.ndarray:
    """Each cell's share of the box, from the edges (independently of the code under test)."""
    per = [np.diff(e) / (e[-1] - e[0]) for e in map(np.asarray, edges_per_column)]
    return np.array([math.prod(t) for t in itertools.product(*per)])


@pytest.mark.parametrize("grid", list(GRIDS))
@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_smoothed_histogram_is_epsilon_dp_at_the_derived_delta_and_not_below(grid, n, epsilon):
    """Enumerate every data set, neighbour and released sample.

    Enumerating the released sample as a multiset of bins is enough: on bin ``B_k`` both densities
    are uniform, ``f*(x) = p_k/μ(B_k)``, so the density of the n released points is
    ``Π_k p_k^{c_k} · Π_i 1/μ(B_{k_i})`` and the second factor is the same under neighbouring data.
    The likelihood ratio of the points is thus that of their bin counts ``c``, whose law is
    ``Multinomial(n; p)``; the multinomial coefficient cancels too.
    """
    edges = GRIDS[grid]
    domain, shares = grid_domain(edges), grid_shares(edges)
    delta = SmoothedHistogram(PureDP(epsilon)).plan(n, domain).parameters["delta"]
    cells = shares.size
    loss = largest_privacy_loss(smoothed_log_pmf(delta, shares), n, cells)
    assert loss <= epsilon + 1e-9
    assert loss == pytest.approx(epsilon, abs=1e-9)  # attained: no smaller δ is private
    below = delta - 1e-4 * (1 - delta)
    assert largest_privacy_loss(smoothed_log_pmf(below, shares), n, cells) > epsilon
    # the measurement's privacy map is that exact worst case; it refuses a weight below δ*, and the
    # audit's weakened variant (δ/2, the same stated cost) is not ε-DP
    mechanism = SmoothedHistogram(PureDP(epsilon)).plan(n, domain).measurements[0].mechanism
    assert mechanism.cost == PureDP(epsilon) and mechanism.bound(delta) == pytest.approx(loss, abs=1e-9)
    with pytest.raises(ValueError, match="more than"):
        SmoothedDraw(epsilon, below, n, domain)
    broken = mechanism.weakened(0.5)
    assert broken.delta == delta / 2 and broken.cost == mechanism.cost
    assert largest_privacy_loss(smoothed_log_pmf(broken.delta, shares), n, cells) > epsilon


@pytest.mark.parametrize("n", [2, 5])
def test_equal_bin_formula_is_not_private_on_unequal_bins(n):
    """Bowen & Liu's eq. 6 assumes K equal bins; on unequal bins it falls short of ε."""
    epsilon, edges = 1.0, GRIDS["3 unequal"]
    shares = grid_shares(edges)
    eq6 = 3 / (3 + n * math.expm1(epsilon / n))
    assert largest_privacy_loss(smoothed_log_pmf(eq6, shares), n, shares.size) > epsilon + 0.1


@pytest.mark.parametrize("n, epsilon, cells", [(10, 1.0, 4), (994, 5.0, 7), (40, 0.1, 21)])
def test_equal_bins_give_eq6_and_the_dp_prior(n, epsilon, cells):
    delta = least_delta(n, epsilon, 1 / cells)
    assert delta == pytest.approx(cells / (cells + n * math.expm1(epsilon / n)), rel=1e-12)  # eq. 6
    a = minimum_prior(n, epsilon)
    assert delta == pytest.approx(cells * a / (n + cells * a), rel=1e-12)  # DP-prior: (y + a)/(n + K a)


def test_smoothed_cell_masses_mix_the_histogram_with_the_box_volume():
    domain = grid_domain(GRIDS["4 unequal"])
    data = pd.DataFrame({"x0": [0.1, 0.2, 5.0, 9.0, 10.0]})
    plan, model = fitted(SmoothedHistogram(PureDP(3.0)), data, domain, seed=2)
    delta = plan.parameters["delta"]
    expected = (1 - delta) * np.array([2, 0, 1, 2]) / 5 + delta * np.array([0.05, 0.35, 0.2, 0.4])
    replay = Randomness.from_seed(2).numpy.multinomial(5, expected / expected.sum())
    assert model.outputs[0].tolist() == replay.tolist()  # the measurement is the n draws of eq. 5
    mechanism = plan.measurements[0].mechanism
    draws = np.array([mechanism.randomise(np.array([2, 0, 1, 2]), Randomness.from_seed(s)) for s in range(4000)])
    assert draws.mean(axis=0) / 5 == pytest.approx(expected, abs=0.02)
    assert plan.parameters["v_min"] == pytest.approx(0.05)
    records = dipsy.domain.decode(model.draw(Randomness.from_seed(2)), domain, np.random.default_rng(0))
    assert len(records) == 5 and records["x0"].between(0, 10).all()


def test_smoothed_delta_option_may_raise_delta_never_lower_it():
    domain = grid_domain(GRIDS["3 unequal"])
    least = SmoothedHistogram(PureDP(1.0)).plan(5, domain).parameters["delta"]
    assert SmoothedHistogram(PureDP(1.0), options={"delta": 1}).plan(5, domain).parameters["delta"] == 1
    with pytest.raises(DipsyError, match="below"):
        SmoothedHistogram(PureDP(1.0), options={"delta": least * 0.99}).plan(5, domain)
    with pytest.raises(DipsyError, match=r"\(0, 1\]"):
        SmoothedHistogram(PureDP(1.0), options={"delta": 1.5})
    with pytest.raises(DipsyError, match="single set"):
        SmoothedHistogram(PureDP(1.0), sets=2)
    with pytest.raises(DipsyError, match="substitute neighbours only"):
        SmoothedHistogram(PureDP(1.0), neighbouring="add-remove")


# -- exponential-mechanism ECDF -----------------------------------------------------------------------------


def ks_level(y: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """n · KS between data counts ``y`` and candidate counts (per grid cell), on the grid."""
    return np.abs(np.cumsum(candidates, axis=1) - np.cumsum(y)).max(axis=1)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("points", [2, 3, 4])
def test_ks_utility_has_sensitivity_one_over_n_attained(n, points):
    """The ECDF on the grid depends on the data only through the counts per grid cell (t_{i-1}, t_i],
    so enumerating those counts and moving one record between cells covers every neighbouring pair."""
    outputs = compositions(n, points)
    worst = 0
    for y in compositions(n, points):
        for x in neighbours(y):
            worst = max(worst, int(np.abs(ks_level(y, outputs) - ks_level(x, outputs)).max()))
    assert worst == 1  # |u(D, c) - u(D', c)| <= 1/n, attained


def ecdf_log_pmf(epsilon: float, sensitivity_times_n: float):
    def log_pmf(outputs: np.ndarray, y: np.ndarray) -> np.ndarray:
        score = -epsilon * ks_level(y, outputs) / (2 * sensitivity_times_n)
        return score - logsumexp(score)

    return log_pmf


@pytest.mark.parametrize("n, points", [(2, 3), (3, 3), (4, 2), (3, 4)])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_exponential_mechanism_is_epsilon_dp_at_sensitivity_one_over_n_and_not_below(n, points, epsilon):
    assert largest_privacy_loss(ecdf_log_pmf(epsilon, 1.0), n, points) <= epsilon + 1e-9
    assert largest_privacy_loss(ecdf_log_pmf(epsilon, 0.5), n, points) > epsilon


def test_exponential_ecdf_draws_follow_exp_of_epsilon_u_over_two_delta():
    data = pd.DataFrame({"x": [0.1, 1 / 3, 0.9]})  # 1/3 is a grid point: F^(t) counts x <= t
    domain = one_column([0, 0.5, 1])
    epsilon, draws = 2.0, 40_000
    plan, model = fitted(ExponentialECDF(PureDP(epsilon), options={"grid": 4}), data, domain)
    grid = np.linspace(0, 1, 4)
    assert plan.parameters["grid"] == grid.tolist() and plan.parameters["candidates"] == 20
    # independent closed form: every multiset of 3 grid points, KS from raw comparisons
    expected, wrong = {}, {}
    for multiset in itertools.combinations_with_replacement(range(4), 3):
        ks = max(abs(np.mean(data["x"].to_numpy() <= t) - np.mean(grid[list(multiset)] <= t)) for t in grid)
        key = tuple(np.bincount(multiset, minlength=4))
        expected[key] = math.exp(epsilon * -ks / (2 / 3))
        wrong[key] = math.exp(epsilon * -ks / (1 / 3))  # a sensitivity half the true one
    paths = candidate_paths(3, 4)
    levels = ks_levels(paths, np.cumsum(exact_counts(data, plan.measurements[0].query.domain)))
    mechanism = plan.measurements[0].mechanism
    assert mechanism.gamma == Fraction(epsilon) / 2 and mechanism.cost == PureDP(epsilon)
    # the audit's variant: twice the real loss (the session still charges, and the statement states,
    # the planned measurement's cost)
    broken = mechanism.weakened(0.5)
    assert broken.gamma == 2 * mechanism.gamma and broken.cost == PureDP(2 * epsilon)
    keys = list(expected)
    for gamma, right, other in ((mechanism.gamma, expected, wrong), (broken.gamma, wrong, expected)):
        observed = dict.fromkeys(expected, 0)
        for r in exponential_choice(levels, gamma, draws, Randomness.from_seed(8)):
            observed[tuple(np.diff(np.concatenate(([0], paths[r], [3]))))] += 1
        obs = np.array([observed[k] for k in keys])
        for weights, accept in ((right, True), (other, False)):
            p = np.array([weights[k] for k in keys])
            pvalue = stats.chisquare(obs, draws * p / p.sum()).pvalue
            assert (pvalue > 1e-3) if accept else (pvalue < 1e-9)


def test_exponential_ecdf_releases_n_records_on_the_grid():
    data = pd.DataFrame({"k": [5, 5, 7, 0]})
    domain = Domain((Column("k", "integer", lower=0, upper=10, bins=(0, 5, 10)),))
    plan, model = fitted(ExponentialECDF(PureDP(1.0), options={"grid": 3}), data, domain)
    cells = plan.measurements[0].query.domain
    assert np.cumsum(exact_counts(data, cells)).tolist() == [1, 3, 4]  # #{x <= 0}, #{x <= 5}, #{x <= 10}
    assert model.outputs[0].shape == (2,) and plan.measurements[0].cost == PureDP(1.0)
    release = dipsy.synthesize(data, domain, method="exponential-ecdf", epsilon=1.0, sets=3, seed=4)
    assert [len(t) for t in release.tables] == [4, 4, 4]
    assert all(set(t["k"]) <= {0, 5, 10} and t["k"].dtype.kind == "i" for t in release.tables)
    assert [s.budget.epsilon for s in release.spends] == pytest.approx([1 / 3] * 3)
    assert "the grid of 3 points" in release.statement.public


def test_candidates_are_every_multiset_once():
    for n, points in [(1, 5), (4, 2), (3, 4), (5, 3)]:
        paths = candidate_paths(n, points)
        counts = np.diff(np.column_stack([np.zeros(len(paths), int), paths, np.full(len(paths), n)]), axis=1)
        assert len(paths) == number_of_candidates(n, points) == len({tuple(c) for c in counts})
        assert (counts >= 0).all() and (counts.sum(axis=1) == n).all()


def test_exponential_ecdf_refuses_too_many_candidates():
    data, domain = pd.read_csv(CE_DATA), Domain.load(CE_DOMAIN)
    with pytest.raises(
        DipsyError, match=r'would enumerate .* candidate ECDFs .* n = 994 points on 11 grid points.*options=\{"grid": G\}'
    ):
        dipsy.synthesize(data, domain, method="exponential-ecdf", epsilon=1.0, columns=["Income"])
    too_many = number_of_candidates(30, 10)
    assert too_many > MAX_CANDIDATES
    with pytest.raises(DipsyError, match=f"{too_many:,}"):
        ExponentialECDF(PureDP(1.0), options={"grid": 10}).plan(30, one_column([0, 1]))
    with pytest.raises(DipsyError, match="one numeric or integer column"):
        ExponentialECDF(PureDP(1.0)).plan(5, Domain.load(CE_DOMAIN).project(["Income", "Expenditure"]))
    with pytest.raises(DipsyError, match="substitute neighbours only"):
        ExponentialECDF(PureDP(1.0), neighbouring="add-remove")


# -- end to end on the CE sample ----------------------------------------------------------------------------


@pytest.mark.parametrize("method, sets, rows", [("perturbed-histogram", 10, None), ("smoothed-histogram", 1, 994)])
def test_ce_income_and_expenditure_end_to_end(tmp_path, method, sets, rows):
    release = dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method=method,
        epsilon=10.0,
        sets=sets,
        columns=["Income", "Expenditure"],
        seed=2026,
        accept_noise=True,
    )
    assert len(release.tables) == sets
    for table in release.tables:
        assert list(table.columns) == ["Income", "Expenditure"]
        assert table["Income"].between(0, 1_000_000).all() and table["Expenditure"].between(0, 100_000).all()
        if rows is not None:
            assert len(table) == rows
    release.save(tmp_path / method)
    assert (tmp_path / method / "release.json").exists()


def test_other_bins_are_read_from_files_too(tmp_path):
    """Re-binned counts (``bins=K``, the ECDF's grid cells) come from the same backend: DuckDB for a file."""
    release = dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method="perturbed-histogram",
        epsilon=5.0,
        sets=2,
        columns=["Income", "Expenditure"],
        seed=1,
        options={"bins": 6},
        neighbouring="substitute",
    )
    assert [len(t) for t in release.tables] == [994, 994] and release.parameters["bins"]["Income"][1] == 1_000_000 / 6
    data = pd.DataFrame({"x": [0.0, 0.25, 0.25, 0.3, 1.0]})
    path = tmp_path / "x.csv"
    data.to_csv(path, index=False)
    domain = one_column([0, 0.25, 0.5, 1])
    method = ExponentialECDF(PureDP(1.0))
    plan = method.plan(5, domain)

    query = plan.measurements[0].query
    from_file = np.cumsum(query.answer(engine_for(path, domain)))
    assert from_file.tolist() == np.cumsum(query.answer(NumpyEngine(data, domain))).tolist() == [1, 3, 4, 5]
    assert fitted(method, path, domain)[1].outputs[0].tolist() == fitted(method, data, domain)[1].outputs[0].tolist()
