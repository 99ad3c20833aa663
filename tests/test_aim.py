"""Tests of the ``aim`` method (dipsy.methods.marginals.aim) and its estimation seam
(dipsy.methods.marginals.estimation): the budget through the privacy filter, the selection's
distribution, the sampler, the estimator on exact marginals, the model-size computation, the order
of charges and reads, the end-to-end audit, and bad input.

Domains are tiny and iterations few: every new model structure costs a JAX compilation.
Statistical checks use fixed seeds and tolerances from the sampling distribution.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import sys
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dipsy
from dipsy.audit import audit, format_table
from dipsy.domain import Domain
from dipsy.engine import engine_for
from dipsy.errors import DipsyError, PrivacyError
from dipsy.methods.marginals.aim import AIM, ExactTables, epsilon_for, filter_candidates, qualities, workload_weights
from dipsy.methods.marginals.estimation import GraphicalModel, NoisyMarginal, estimate, from_potentials
from dipsy.methods.marginals.junction import model_size
from dipsy.privacy import ZCDP, PureDP
from dipsy.privacy.accountant import Accountant
from dipsy.privacy.measurement import ACTIVE, DiscreteGaussian, Measurement, Table
from dipsy.privacy.rng import Randomness
from dipsy.privacy.selection import ExponentialSelection
from dipsy.privacy.session import Session

SIZES = {"a": 3, "b": 2, "c": 4}
RHO = 1.0
#: Few rounds and iterations: what is tested is the arithmetic and the order of events.
OPTIONS = {"rounds": 6, "iterations": 50, "final_iterations": 50}


def tiny(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """b depends on a, c on b: a chain with something for AIM to find."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.8, a % 2, rng.integers(0, 2, n))
    c = np.where(rng.random(n) < 0.7, 2 * b + rng.integers(0, 2, n), rng.integers(0, 4, n))
    return pd.DataFrame({"a": a, "b": b, "c": c})


def fitted(data: pd.DataFrame, domain: Domain, rho: float = RHO, seed: int = 0, engine=None, **options):
    """plan → session → fit, as the release path runs them; the session is left open."""
    method = AIM(ZCDP(rho), options={**OPTIONS, **options})
    plan = method.plan(None, domain)
    session = Session(
        engine if engine is not None else engine_for(data, domain),
        plan.declared(ZCDP(rho)),
        plan.relation,
        Randomness.from_seed(seed),
        plan.measurements,
        plan.adaptive is not None,
    )
    return plan, session, method.fit(session, plan)


@pytest.fixture(scope="module")
def run():
    domain = Domain.from_sizes(SIZES)
    return fitted(tiny(), domain)


# -- the budget through the filter --------------------------------------------------------------------


def test_rounds_spend_the_budget_exactly_and_never_more(run):
    plan, session, model = run
    spends = [s.budget.rho for s in session.spends]
    d, T = len(SIZES), OPTIONS["rounds"]
    # the one-way marginals: 0.9ρ/T each, σ² rounded up (so at most that)
    assert all(0.999 * 0.9 * RHO / T <= r <= 0.9 * RHO / T for r in spends[:d])
    assert plan.adaptive.rho == pytest.approx(RHO - sum(spends[:d]), rel=1e-15)
    rounds = list(zip(spends[d::2], spends[d + 1 :: 2]))
    assert len(spends) == d + 2 * len(rounds) and len(rounds) == model.rounds >= 1
    assert sum(spends) <= RHO * (1 + 1e-12) and sum(spends) >= RHO * (1 - 1e-9)  # all of it, never more
    # the last round takes what remained before it, to the grids' rounding (σ² up, ε down)
    before = sum(spends[:-2])
    assert sum(rounds[-1]) == pytest.approx(RHO - before, rel=1e-9) and sum(rounds[-1]) <= RHO - before + 1e-15
    # the others cost ρ/T, four times more after each annealing (σ/2, 2ε), split 0.9/0.1
    scale = 1.0
    for t, (select, measure) in enumerate(rounds[:-1], start=1):
        assert 0.999 * 0.9 * scale * RHO / T <= measure <= 0.9 * scale * RHO / T
        assert 0.999 * 0.1 * scale * RHO / T <= select <= 0.1 * scale * RHO / T
        if t in model.annealings:
            scale *= 4
    # the filter refuses anything past the declared total
    extra = Measurement("one more", Table(("a",)), DiscreteGaussian.for_budget(ZCDP(1e-6)), plan.relation)
    with pytest.raises(PrivacyError, match="declared total"):
        session.measure(extra)


def test_the_last_round_is_computed_from_what_the_session_says_remains():
    """With T = d the one-way marginals leave 0.1ρ, less than two rounds: one round spends it all."""
    domain = Domain.from_sizes(SIZES)
    plan, session, model = fitted(tiny(), domain, rounds=3)
    spends = [s.budget.rho for s in session.spends]
    assert model.rounds == 1 and len(spends) == 5
    assert sum(spends[3:]) == pytest.approx(RHO - sum(spends[:3]), rel=1e-9)
    assert sum(spends) <= RHO * (1 + 1e-12)
    assert "choice among" in session.spends[3].label and "round 1, marginal" in session.spends[4].label


def test_epsilon_for_never_passes_its_rho():
    for rho in [1e-6, 3.7e-4, 0.0123, 0.5, 2.0]:
        eps = epsilon_for(rho)
        assert eps * eps / 8 <= Fraction(rho) and float(eps * eps / 8) == pytest.approx(rho, rel=1e-9)


# -- the workload, the candidates and the selection ---------------------------------------------------


def test_workload_weights_are_the_papers():
    """w_r = Σ_s |r ∩ s| over the 3-way workload (Algorithm 1 line 3): for 14 columns a single column
    meets C(13, 2) = 78 triples once; a triple meets itself (3), 3·11 triples in two columns and
    3·C(11, 2) in one: 234, the sensitivity of Adult's scores."""
    w = workload_weights(14, 3)
    assert len(w) == 14 + 91 + 364
    assert w[(0,)] == 78 and w[(0, 1)] == 2 * 12 + 2 * math.comb(12, 2) and w[(0, 1, 2)] == 234 == max(w.values())
    assert workload_weights(2, 3) == {(0,): 1, (1,): 1, (0, 1): 2}  # k = min(k, d)


def test_filter_keeps_what_fits_and_what_is_free():
    sizes = [10, 10, 10]
    w = workload_weights(3, 3)
    measured = [(0,), (1,), (2,), (0, 1)]
    assert filter_candidates(w, measured, sizes, 29) == [(0,), (1,), (2,), (0, 1)]  # only the free ones
    assert filter_candidates(w, measured, sizes, 210) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    assert (0, 1, 2) in filter_candidates(w, measured, sizes, 1000)


def test_qualities_are_aims_and_the_choice_follows_the_exponential_mechanism():
    """The scores read through the engine are w_r(‖M_r(D) − M_r(p̂)‖₁ − b_r), computed here apart;
    4000 draws of the choice fit Pr[r] ∝ exp(ε q_r / 2Δ) (χ² test) and reject the law at 2ε (power)."""
    domain = Domain.from_sizes(SIZES)
    data = tiny(300, seed=4)
    engine = engine_for(data, domain)
    engine.ensure_valid()
    weights = workload_weights(3, 3)
    candidates = list(weights)
    model = GraphicalModel.independent(SIZES, [np.ones(3), np.ones(2), np.ones(4)], 300.0)
    names = tuple(SIZES)
    estimates = [model.project(tuple(names[a] for a in r)) for r in candidates]
    sd = 5.0
    bias = [math.sqrt(2 / math.pi) * sd * e.size for e in estimates]
    exact = ExactTables(names, list(SIZES.values()), [(0, 1, 2)])
    q = qualities(engine, exact, candidates, estimates, [float(weights[r]) for r in candidates], bias)
    codes = data.to_numpy()
    for i, r in enumerate(candidates):
        counts = np.zeros([list(SIZES.values())[a] for a in r])
        np.add.at(counts, tuple(codes[:, a] for a in r), 1)
        assert q[i] == pytest.approx(weights[r] * (np.abs(counts - estimates[i]).sum() - bias[i]), rel=1e-12)
    delta = max(weights.values())
    eps = Fraction(1, 20)
    draws = ExponentialSelection.for_epsilon(eps, delta)
    rand = Randomness.from_seed(11)
    seen = np.bincount([draws.randomise(q, rand) for _ in range(4000)], minlength=len(q))

    def law(e):
        z = float(e) * (q - q.max()) / (2 * delta)
        return np.exp(z) / np.exp(z).sum()

    assert law(eps).max() < 0.9 and law(eps).min() > 0.001  # an informative case
    expected = law(eps) * 4000
    assert stats.chisquare(seen, expected).pvalue > 1e-3
    assert stats.chisquare(seen, law(2 * eps) * 4000).pvalue < 1e-6


# -- the estimation seam ------------------------------------------------------------------------------


def chain_joint(sizes, seed=0):
    """A joint that factorises along the chain a - b - c - d (so its 2-way marginals determine it)."""
    rng = np.random.default_rng(seed)
    s = list(sizes.values())
    p = rng.dirichlet(np.ones(s[0]))[:, None, None, None]
    for i in range(1, 4):
        cond = rng.dirichlet(np.ones(s[i]), size=s[i - 1])  # p(x_i | x_{i-1})
        shape = [1] * 4
        shape[i - 1], shape[i] = s[i - 1], s[i]
        p = p * cond.reshape(shape)
    return p


def test_estimation_recovers_exact_marginals_from_exact_measurements():
    sizes = {"a": 2, "b": 3, "c": 2, "d": 3}
    p = chain_joint(sizes) * 1000
    ms = [
        NoisyMarginal(("a", "b"), p.sum(axis=(2, 3)), 1.0),
        NoisyMarginal(("c", "b"), p.sum(axis=(0, 3)).T, 1.0),
        NoisyMarginal(("c", "d"), p.sum(axis=(0, 1)), 1.0),
    ]
    g = estimate(sizes, ms, iterations=2000)
    assert g.total == pytest.approx(1000, rel=1e-12)  # the minimum-variance total of consistent measurements
    # mirror descent converges like 1/t: within 0.1 of 1000 records after 2000 steps, and still closing in
    error = np.abs(g.project(("a", "b", "c", "d")) - p).max()
    assert error < 0.1 and np.abs(estimate(sizes, ms, iterations=500).project(("a", "b", "c", "d")) - p).max() > 3 * error
    assert np.abs(g.project(("d", "a")) - p.sum(axis=(1, 2)).T).max() < 0.1  # across the tree, in the order asked
    assert g.size() == model_size([2, 3, 2, 3], [(0, 1), (1, 2), (2, 3)]) == 6 + 6 + 6


def random_model(seed=0, scale=1.0):
    """A junction forest with random potentials: a chain (0,1)-(1,2,5)-(2,3) and a lone column 4;
    column 5 lies in the middle clique alone (a marginal across the chain sums it out on the way)."""
    rng = np.random.default_rng(seed)
    sizes = {"v0": 3, "v1": 2, "v2": 4, "v3": 3, "v4": 2, "v5": 2}
    pots = [
        (("v0", "v1"), rng.normal(0, scale, (3, 2))),
        (("v1", "v2", "v5"), rng.normal(0, scale, (2, 4, 2))),
        (("v2", "v3"), rng.normal(0, 1.5 * scale, (4, 3))),
        (("v4",), rng.normal(0, scale, 2)),
    ]
    return sizes, pots, from_potentials(sizes, pots, 1000.0)


@pytest.mark.parametrize("scale", [1.0, 600.0])
def test_projections_are_the_model_s_own_marginals(scale):
    """Every marginal of up to 3 columns equals the brute-force sum of the normalised product of
    potentials, also with potentials hundreds apart (fitted ones on Adult reach ±1,300)."""
    sizes, pots, g = random_model(scale=scale)
    joint = np.zeros(tuple(sizes.values()))
    names = list(sizes)
    for cl, v in pots:
        shape = [sizes[n] if n in cl else 1 for n in names]
        joint = joint + v.reshape(shape)
    joint = np.exp(joint - joint.max())
    joint = 1000 * joint / joint.sum()
    for k in (1, 2, 3):
        for attrs in itertools.permutations(names, k):
            expected = joint.sum(axis=tuple(i for i, n in enumerate(names) if n not in attrs))
            kept = [n for n in names if n in attrs]
            expected = np.transpose(expected, [kept.index(a) for a in attrs])
            assert np.allclose(g.project(attrs), expected, rtol=1e-10, atol=1e-9), attrs


@pytest.mark.parametrize("scale", [1.0, 600.0])
def test_cliques_of_thousands_of_cells_calibrate_to_the_brute_force_joint(scale):
    """Cliques large enough that messages and shifts are laid out over their trailing axes before
    they are added (junction.widened), one of them holding structural zeros: every clique's
    marginal is the brute-force one, with one shift per table and with one per slice."""
    rng = np.random.default_rng(5)
    sizes = {"a": 4, "b": 5, "c": 16, "d": 40, "e": 3, "f": 2}
    forbidden = rng.random((4, 5)) < 0.1
    pots = [
        (("a", "b", "c", "d"), rng.normal(0, scale, (4, 5, 16, 40))),
        (("a", "e"), rng.normal(0, scale, (4, 3))),
        (("c", "f"), rng.normal(0, scale, (16, 2))),
    ]
    g = from_potentials(sizes, pots, 1.0, [(("a", "b"), forbidden)])
    joint = np.zeros(tuple(sizes.values()))
    names = list(sizes)
    for cl, v in pots:
        joint = joint + v.reshape([sizes[n] if n in cl else 1 for n in names])
    joint = joint + np.where(forbidden, -np.inf, 0.0)[:, :, None, None, None, None]
    joint = np.exp(joint - joint.max())
    joint /= joint.sum()
    for attrs in [("a", "b", "c", "d"), ("a", "e"), ("c", "f"), ("e", "f"), ("b", "f")]:
        expected = joint.sum(axis=tuple(i for i, n in enumerate(names) if n not in attrs))
        assert np.allclose(g.project(attrs), expected, rtol=1e-9, atol=1e-12), attrs
    assert g.project(("a", "b"))[forbidden].max() == 0.0


def test_potentials_a_thousand_apart_that_cancel_keep_their_mass():
    """b = 1 is 1,000 below b = 0 in one clique and 1,000 above in the other: the two values of b
    are about equally likely, though each clique alone puts e^-1000 on one of them (a message
    shifted once per table would lose b = 0, and products in probability space both)."""
    rng = np.random.default_rng(2)
    ab, bc = rng.normal(0, 0.3, (3, 2)), rng.normal(0, 0.3, (2, 4))
    ab[:, 1] -= 1000
    bc[1, :] += 1000
    g = from_potentials({"a": 3, "b": 2, "c": 4}, [(("a", "b"), ab), (("b", "c"), bc)], 1.0)
    joint = ab[:, :, None] + bc[None, :, :]
    joint = np.exp(joint - joint.max())
    expected = joint.sum(axis=(0, 2)) / joint.sum()
    assert 0.05 < expected[0] < 0.95 and np.allclose(g.project(("b",)), expected, rtol=1e-10)


def test_a_value_the_zeros_rule_out_gets_no_mass_and_no_warning():
    """Structural zeros that forbid b = 0 whatever the other column is, on either side of the tree:
    the messages over b carry −∞ there, and −∞ − (−∞) in message passing must neither warn nor
    spread nan."""
    never = np.array([[True, False], [True, False]])  # b = 0 never (b second)
    pots = np.log([[1.0, 2.0], [3.0, 4.0]])
    for factor, zero in [((("a", "b"), pots), (("c", "b"), never)), ((("c", "b"), pots), (("a", "b"), never))]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g = from_potentials({"a": 2, "b": 2, "c": 2}, [factor], 12.0, [zero])
            b = g.project(("b",))
        assert b.tolist() == [0.0, 12.0], factor


def test_the_sampler_reproduces_the_model_and_invents_no_correlation():
    """200,000 draws: a 3-way marginal spanning three cliques, and the lone column's joint with the
    chain (independent in the model), each within TVD 0.01 of the model (the expected TVD of
    200,000 draws over 36 cells is about 0.005)."""
    sizes, _, g = random_model(seed=3)
    n = 200_000
    draw = g.sample(n, Randomness.from_seed(5))
    assert set(draw) == set(sizes) and all(v.dtype == np.int64 and len(v) == n for v in draw.values())
    for attrs in [("v0", "v2", "v3"), ("v0", "v4"), ("v1", "v3", "v4")]:
        shape = [sizes[a] for a in attrs]
        seen = np.bincount(np.ravel_multi_index(tuple(draw[a] for a in attrs), shape), minlength=math.prod(shape)) / n
        model = g.project(attrs).ravel() / g.total
        assert 0.5 * np.abs(seen - model).sum() < 0.01, attrs
    # conditional independence of v0 and v2 given v1 holds in the draws (G test at the 0.1% level)
    for b in range(2):
        rows = draw["v1"] == b
        table = np.zeros((3, 4))
        np.add.at(table, (draw["v0"][rows], draw["v2"][rows]), 1)
        assert stats.chi2_contingency(table, lambda_="log-likelihood").pvalue > 1e-3


@pytest.mark.filterwarnings("ignore::UserWarning")  # mbi's import-time advice on JAX's settings
def test_model_size_is_mbi_s():
    from mbi import Domain as MbiDomain
    from mbi import junction_tree

    rng = random.Random(1)
    for _ in range(150):
        d = rng.randint(2, 10)
        sizes = [rng.choice([2, 3, 5, 16, 100]) for _ in range(d)]
        cliques = [tuple(sorted(rng.sample(range(d), rng.randint(1, min(3, d))))) for _ in range(rng.randint(1, 9))]
        domain = MbiDomain([f"c{i}" for i in range(d)], sizes)
        mb = junction_tree.hypothetical_model_size(domain, [tuple(f"c{i}" for i in c) for c in cliques])
        assert model_size(sizes, cliques) == round(mb * 2**20 / 8), (sizes, cliques)


def test_sum_axes_is_numpy_s_sum():
    """The junction tree's summing (axes one at a time, short axes by slices, a long axis before a few
    cells by a matrix product) equals NumPy's."""
    from dipsy.methods.marginals.junction import sum_axes

    rng = np.random.default_rng(0)
    for _ in range(200):
        shape = tuple(int(s) for s in rng.choice([1, 2, 3, 17, 40], size=rng.integers(1, 6)))
        table = rng.random(shape)
        axes = tuple(sorted(int(a) for a in rng.choice(len(shape), size=rng.integers(0, len(shape) + 1), replace=False)))
        assert np.allclose(sum_axes(table, axes), table.sum(axis=axes) if axes else table), (shape, axes)
    # large tables with a long axis before a few cells (summed by a matrix product), among others
    for shape, axes in [
        ((17, 40, 40, 2), (2,)),
        ((40, 17, 99, 2, 3), (0, 2)),
        ((9, 15, 6, 2, 99, 2), (2, 3, 4)),
        ((40, 40, 17), (1,)),
    ]:
        table = rng.random(shape)
        assert np.allclose(sum_axes(table, axes), table.sum(axis=axes)), (shape, axes)


def test_contractions_are_numpy_s_einsum():
    """Projections across cliques contract their tables two at a time as batched matrix products, in
    an order and with axes worked out once per spec and shapes: every layout gives NumPy's einsum,
    the second time too."""
    from dipsy.methods.marginals.estimation import _contract, _pair

    rng = np.random.default_rng(1)
    letters = "abcdefg"
    for _ in range(400):
        k = int(rng.integers(2, 6))
        chosen = list(rng.permutation(list(letters))[:k])
        left = "".join(rng.permutation(chosen[: int(rng.integers(1, k + 1))]))
        right = "".join(rng.permutation(chosen[int(rng.integers(0, k)) :]))
        keep = [c for c in chosen if c in left + right and rng.random() < 0.5]
        out = "".join(rng.permutation(keep)) if keep else ""
        size = {c: int(rng.integers(1, 5)) for c in letters}
        a = rng.random([size[c] for c in left])
        b = rng.random([size[c] for c in right])
        spec = f"{left},{right}->{out}"
        c = rng.random([size[x] for x in out[::-1]]) if out else rng.random(())
        three = f"{left},{right},{out[::-1]}->{out[:1]}"
        for _ in range(2):  # the second time from the cached plans
            assert np.allclose(_pair(spec, a, b), np.einsum(spec, a, b)), spec
            assert np.allclose(_contract(three, [a, b, c]), np.einsum(three, a, b, c)), three


def test_the_estimation_needs_neither_jax_nor_mbi(monkeypatch):
    """The estimator is NumPy's: it fits with JAX and mbi unimportable."""
    for name in ("jax", "mbi"):
        monkeypatch.setitem(sys.modules, name, None)
    g = estimate({"a": 2, "b": 2}, [NoisyMarginal(("a", "b"), np.array([[1.0, 2.0], [3.0, 4.0]]), 1.0)], iterations=2000)
    assert np.allclose(g.project(("a", "b")), [[1, 2], [3, 4]], atol=0.05)


def random_problem(seed):
    """Noisy 2- and 3-way marginals of a random joint over 5 columns (a loopy model: a triangle and more)."""
    rng = np.random.default_rng(seed)
    sizes = {"v0": 3, "v1": 2, "v2": 4, "v3": 3, "v4": 2}
    joint = rng.dirichlet(np.full(144, 0.5)).reshape(tuple(sizes.values())) * 2000
    names = list(sizes)
    measured = []
    for clique, sigma in [
        (("v0", "v1"), 3.0),
        (("v1", "v2"), 5.0),
        (("v0", "v2"), 2.0),
        (("v2", "v3", "v4"), 4.0),
        (("v4",), 1.0),
    ]:
        table = joint.sum(axis=tuple(i for i, n in enumerate(names) if n not in clique))
        measured.append(NoisyMarginal(clique, table + rng.normal(0, sigma, table.shape), sigma))
    return sizes, measured


def loss_of(model, measured):
    return sum(0.5 * np.sum((model.project(m.attrs) - m.counts) ** 2) / m.sigma**2 for m in measured)


@pytest.mark.filterwarnings("ignore::UserWarning")  # mbi's import-time advice on JAX's settings
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_numpy_estimator_reaches_mbi_s_optimum(seed):
    """The same convex problem fitted by mbi 2.0's mirror descent (JAX, 10,000 steps) and by dipsy's
    NumPy descent: equal losses (to 1e-4 of the loss) and equal marginals (to 0.05 records of 2,000).
    A fit stopped early (20 steps) is far from both, so the comparison can fail."""
    import jax
    from mbi import Domain as MbiDomain
    from mbi import LinearMeasurement
    from mbi.estimation import MirrorDescent

    sizes, measured = random_problem(seed)
    ours = estimate(sizes, measured, iterations=3000)
    with jax.enable_x64(True):
        domain = MbiDomain(list(sizes), list(sizes.values()))
        lms = [LinearMeasurement(jax.numpy.asarray(m.counts.ravel()), m.attrs, stddev=m.sigma) for m in measured]
        theirs = MirrorDescent().estimate(domain, lms, iters=10000)
        theirs_tables = {m.attrs: np.asarray(theirs.project(m.attrs).datavector(flatten=False)) for m in measured}
    best = min(
        loss_of(ours, measured), sum(0.5 * np.sum((theirs_tables[m.attrs] - m.counts) ** 2) / m.sigma**2 for m in measured)
    )
    assert loss_of(ours, measured) <= best * (1 + 1e-4)
    for m in measured:
        assert np.abs(ours.project(m.attrs) - theirs_tables[m.attrs]).max() < 0.05, m.attrs
    assert loss_of(estimate(sizes, measured, iterations=20), measured) > best * 1.01


def test_a_warm_start_goes_on_where_the_earlier_fit_stopped():
    """1,000 steps from a 1,000-step fit's potentials and step size land where 2,000 steps from cold do,
    well past the 1,000-step fit itself."""
    sizes, measured = random_problem(4)
    first = estimate(sizes, measured, iterations=1000)
    again = estimate(sizes, measured, iterations=1000, warm=first)
    cold = estimate(sizes, measured, iterations=2000)
    assert loss_of(again, measured) == pytest.approx(loss_of(cold, measured), rel=1e-3)
    assert loss_of(first, measured) - loss_of(cold, measured) > 100 * abs(loss_of(again, measured) - loss_of(cold, measured))


def test_a_tolerance_stops_the_descent_once_the_loss_stops_falling():
    sizes, measured = random_problem(4)
    full = estimate(sizes, measured, iterations=3000)
    stopped = estimate(sizes, measured, iterations=3000, tol=1e-6)
    assert full.steps == 3000 and stopped.steps < 2500
    assert loss_of(stopped, measured) == pytest.approx(loss_of(full, measured), rel=1e-5)
    assert estimate(sizes, measured, iterations=3000, tol=1e-3).steps < stopped.steps


# -- reads, the release, the audit -------------------------------------------------------------------


def test_every_read_is_inside_a_charged_measurement(monkeypatch):
    """A spy on the engine and the accountant: every table read happens inside the measurement
    charged last, and the candidates' exact tables are read once (kept for the later rounds)."""
    domain = Domain.from_sizes(SIZES)
    engine = engine_for(tiny(), domain)
    events = []
    real_spend, real_read = Accountant.spend, type(engine).contingency
    monkeypatch.setattr(
        Accountant, "spend", lambda self, label, b: events.append(("charge", label)) or real_spend(self, label, b)
    )

    def read(self, columns=None, form="auto"):
        active = ACTIVE.get()
        events.append(("read", active.label if active else None, tuple(columns)))
        return real_read(self, columns, form)

    monkeypatch.setattr(type(engine), "contingency", read)
    _, session, model = fitted(None, domain, engine=engine)
    charged = None
    for event in events:
        if event[0] == "charge":
            charged = event[1]
        else:
            assert event[1] is not None and event[1] == charged, event
    reads = [e[2] for e in events if e[0] == "read"]
    assert ("a", "b", "c") in reads and reads.count(("a", "b", "c")) <= 2  # the workload table, and its measurement
    assert any("choice among" in e[1] for e in events if e[0] == "read")  # the scores are read inside the choice


def test_the_search_takes_the_draws_to_the_model_s_measured_marginals(run):
    """An i.i.d. draw misses the model's marginals by sampling error; the search after it (default)
    lowers that error on every measured set, in every chunk, and search=0 is the i.i.d. draw."""
    _, _, model = run
    assert model.search is None and model.sweeps == 30  # the default on a release of ≤ 10⁶ records
    assert dataclasses.replace(model, rows=2_000_000).sweeps == 0  # and none above (i.i.d. draws)
    assert dataclasses.replace(model, rows=2_000_000, search=5).sweeps == 5
    assert model.choices()["search_sweeps"] == 30
    g = model.model
    sets = {tuple(h["marginal"]) for h in model.history}

    def error(records: dict) -> float:
        n = len(records[g.names[0]])
        out = 0.0
        for s in sets:
            target = g.project(s) / g.total * n
            cells = np.ravel_multi_index(tuple(records[c] for c in s), target.shape)
            out += np.abs(np.bincount(cells, minlength=target.size) - target.ravel()).sum() / n
        return out / len(sets)

    plain = dataclasses.replace(model, search=0)
    chunks_plain = list(plain.chunks(0, Randomness.from_seed(5), rows=250))
    chunks_searched = list(model.chunks(0, Randomness.from_seed(5), rows=250))
    assert len(chunks_plain) >= 2 and [len(c["a"]) for c in chunks_plain] == [len(c["a"]) for c in chunks_searched]
    assert np.array_equal(chunks_plain[0]["c"], g.sample(250, Randomness.from_seed(5))["c"])
    for before, after in zip(chunks_plain, chunks_searched):
        assert error(after) < 0.5 * error(before)
    heard: list = []
    shown = dataclasses.replace(model)
    object.__setattr__(shown, "reporter", lambda what, done, total: heard.append((what.split(",")[0], done, total)))
    list(shown.chunks(0, Randomness.from_seed(5), rows=250))
    assert [(done, total) for what, done, total in heard if what == "aim: local search"] == [(t, 30) for t in range(1, 31)] * len(
        chunks_plain
    )


def test_release_states_what_ran_and_what_was_chosen(tmp_path):
    domain = Domain.from_sizes(SIZES)
    r = dipsy.synthesize(tiny(), domain, method="aim", rho=RHO, delta=1e-9, seed=2, options={**OPTIONS, "rows": 321})
    assert len(r.tables[0]) == 321 and list(r.tables[0].columns) == list(SIZES)
    assert r.statement.total.rho <= RHO * (1 + 1e-12) and r.statement.total.rho == pytest.approx(RHO, rel=1e-9)
    measured = r.parameters["measured_marginals"]
    assert [m["marginal"] for m in measured[:3]] == [["a"], ["b"], ["c"]] and all(m["round"] == 0 for m in measured[:3])
    ran = r.parameters["rounds_run"]
    assert r.parameters["rounds"] == OPTIONS["rounds"] and 1 <= ran  # the nominal T, and the rounds that ran
    assert [m["round"] for m in measured[3:]] == list(range(1, ran + 1))
    assert all(Fraction(m["sigma2"]) > 0 for m in measured)
    assert set(r.parameters["annealed_after_rounds"]) <= set(range(1, ran))
    assert len(r.statement.measurements) == 3 + 2 * ran
    assert r.statement.neighbouring.startswith("add/remove one record")


def test_the_end_to_end_audit_finds_no_excess():
    result = audit("aim")
    assert any("round 1" in c.label for c in result.checks)  # the adaptive round's choice and marginal are checked
    assert not result.flagged and result.replay.same, format_table([result])


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"rounds": 2}, "below the number of columns"),
        ({"workload": 4}, "workload must be 1, 2 or 3"),
        ({"max_size_mb": 0}, "max_size_mb must be"),
        ({"iterations": 0}, "iterations must be a whole number"),
    ],
)
def test_bad_options_are_clear_errors(options, message):
    with pytest.raises(DipsyError, match=message):
        AIM(ZCDP(1.0), options=options).plan(None, Domain.from_sizes(SIZES))


def test_other_bad_requests_are_clear_errors():
    with pytest.raises(DipsyError, match="zCDP"):
        AIM(PureDP(1.0))
    with pytest.raises(DipsyError, match="single set"):
        AIM(ZCDP(1.0), sets=2)
    big = Domain.from_sizes({"x": 1000, "y": 1000, "z": 1000})
    with pytest.raises(DipsyError, match="workload=2"):
        AIM(ZCDP(1.0)).plan(None, big)
