"""The measurement core: measurements state their cost and add their own noise; the session charges
before it reads and refuses what the plan did not budget; relations are values."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dipsy
from dipsy.engine import NumpyEngine
from dipsy.errors import DipsyError, PrivacyError
from dipsy.privacy import ZCDP, ApproxDP, PureDP
from dipsy.privacy.measurement import (
    ACTIVE,
    DiscreteGaussian,
    DiscreteLaplace,
    Laplace,
    Measurement,
    PosteriorDraw,
    Statistic,
    Table,
    Total,
)
from dipsy.privacy.relation import ADD_REMOVE, SUBSTITUTE, Relation, convert, group_factor, individual
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace_pmf
from dipsy.privacy.session import Session

DOMAIN = dipsy.Domain.from_sizes({"x": 3})
DATA = pd.DataFrame({"x": [0, 1, 1, 2, 2, 2]})


def engine():
    return NumpyEngine(DATA, DOMAIN)


def table(epsilon=1.0, relation=ADD_REMOVE, label="table"):
    return Measurement(label, Table(("x",)), DiscreteLaplace.for_budget(PureDP(epsilon)), relation)


# -- measurements ---------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, sensitivity, scale", [(1.0, 1, Fraction(1)), (0.5, 2, Fraction(4)), (0.1, 1, Fraction(10))])
def test_discrete_laplace_cost_is_sensitivity_over_scale(epsilon, sensitivity, scale):
    mech = DiscreteLaplace.for_budget(PureDP(epsilon), sensitivity)
    assert mech.scale == pytest.approx(scale) and mech.cost.epsilon == pytest.approx(epsilon)


@pytest.mark.parametrize("rho, sensitivity", [(0.5, 1), (0.015, 1), (0.1, 7), (1e-4, 2)])
def test_discrete_gaussian_rounds_sigma2_up_and_spends_at_most_rho(rho, sensitivity):
    mech = DiscreteGaussian.for_budget(ZCDP(rho), sensitivity)
    assert mech.sigma2 >= Fraction(sensitivity) ** 2 / (2 * Fraction(rho))
    assert mech.cost.rho <= rho and mech.cost.rho == pytest.approx(rho, rel=1e-3)
    assert mech.sigma2.denominator <= 1024


def test_laplace_float_cost():
    assert Laplace.for_budget(PureDP(0.25), 2.0).cost == PureDP(0.25)


def test_posterior_draw_refuses_a_prior_too_weak_for_its_stated_epsilon():
    bound = lambda a: math.log1p(10 / a)  # noqa: E731  (the Dirichlet-multinomial's, n = 10)
    with pytest.raises(ValueError, match="more than"):
        PosteriorDraw("dm", 1.0, 10 / math.expm1(1.0) / 2, draw=lambda y, a, r: y, bound=bound)
    ok = PosteriorDraw("dm", 1.0, 10 / math.expm1(1.0), draw=lambda y, a, r: y, bound=bound)
    assert ok.cost == PureDP(1.0)
    assert ok.weakened(0.5).strength == pytest.approx(ok.strength / 2) and ok.weakened(0.5).cost == PureDP(1.0)


def test_the_noise_a_measurement_adds_is_the_noise_it_states():
    """Tumult's habit: the noise test accepts the stated scale and rejects a wrong one (4,500 draws:
    a scale of 2.5 instead of 2 is rejected at p ≈ 1e-30, 1 at p < 1e-300)."""
    m = Measurement("t", Table(("x",)), DiscreteLaplace.for_budget(PureDP(0.5)), ADD_REMOVE)
    rand, data = Randomness.from_seed(5), engine()
    noise = np.concatenate([m.run(data, rand) - np.array([1, 2, 3]) for _ in range(1500)])
    values = np.arange(-12, 13)
    observed = np.array([np.sum(noise == v) for v in values] + [np.sum(np.abs(noise) > 12)])
    for scale, accept in ((Fraction(2), True), (Fraction(1), False)):
        p = discrete_laplace_pmf(values, scale)
        expected = noise.size * np.append(p, 1 - p.sum())
        pvalue = stats.chisquare(observed, expected).pvalue
        assert (pvalue > 1e-4) if accept else (pvalue < 1e-6), (scale, pvalue)


def test_tables_and_totals_answer_from_the_engine():
    assert Table(("x",)).answer(engine()).tolist() == [1, 2, 3]
    assert Total().answer(engine()).tolist() == [6]
    assert Statistic("sum of codes", lambda e: e.values(["x"])["x"].sum()).answer(engine()) == 8


# -- the session ------------------------------------------------------------------------------------


def session(planned=(), total=PureDP(1.0), adaptive=False, relation=ADD_REMOVE, **kw):  # noqa: B008 - a frozen value
    return Session(engine(), total, relation, Randomness.from_seed(0), planned, adaptive, **kw)


def test_session_runs_a_planned_measurement_once_and_charges_it_first():
    m = table()
    s = session([m])
    out = s.measure(m)
    assert out.shape == (3,) and s.spent == PureDP(1.0) and s.ran == (m,)
    with pytest.raises(PrivacyError, match="not budgeted"):
        s.measure(m)


def test_session_refuses_a_measurement_the_plan_did_not_budget():
    s = session([table()])
    with pytest.raises(PrivacyError, match="not budgeted"):
        s.measure(table())  # an equal-looking, but other, measurement
    assert s.ran == ()


def test_session_refuses_another_relation():
    m = table(relation=SUBSTITUTE)
    with pytest.raises(PrivacyError, match="private under"):
        session([m]).measure(m)


def test_the_filter_bounds_an_adaptive_method_step_by_step():
    s = session(total=PureDP(1.0), adaptive=True)
    for _ in range(4):
        s.measure(table(0.25))
    assert s.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(PrivacyError, match="declared total"):
        s.measure(table(0.01))
    assert len(s.ran) == 4


def test_a_closed_session_reads_nothing():
    m = table()
    s = session([m])
    s.close()
    with pytest.raises(PrivacyError, match="closed"):
        s.measure(m)


def test_mixed_definitions_compose_under_an_approximate_budget():
    lap = Measurement("lap", Table(("x",)), DiscreteLaplace.for_budget(PureDP(0.5)), ADD_REMOVE)
    gau = Measurement("gau", Table(("x",)), DiscreteGaussian.for_budget(ZCDP(0.01)), ADD_REMOVE)
    s = session([lap, gau], total=ApproxDP(2.0, 1e-6))
    s.measure(lap)
    s.measure(gau)
    assert isinstance(s.spent, ApproxDP) and 0.5 < s.spent.epsilon < 2.0


def test_tamper_weakens_the_noise_but_not_the_recorded_cost():
    m = table(1.0)
    s = session([m], tamper=lambda x: replace(x, mechanism=x.mechanism.weakened(0.5)))
    s.measure(m)
    assert s.spent == PureDP(1.0) and s.ran[0].mechanism.scale == Fraction(1)


def test_measurement_marks_itself_active_while_it_runs():
    seen = []
    m = Measurement(
        "t", Statistic("peek", lambda e: seen.append(ACTIVE.get()) or 0), DiscreteLaplace.for_budget(PureDP(1.0)), ADD_REMOVE
    )
    session([m]).measure(m)
    assert seen == [m] and ACTIVE.get() is None


# -- relations --------------------------------------------------------------------------------------


def test_relations_are_values_with_their_prose():
    assert individual(1) == ADD_REMOVE and individual(7).unit == "individual"
    assert "θ = 7" in individual(7).describe() and "same number of rows" in SUBSTITUTE.describe()
    assert Relation.from_dict(individual(7).to_dict()) == individual(7)
    with pytest.raises(DipsyError):
        Relation("substitute", 2)
    with pytest.raises(DipsyError):
        Relation("swap")


@pytest.mark.parametrize(
    "spent, target, k",
    [
        (SUBSTITUTE, SUBSTITUTE, 1),
        (ADD_REMOVE, SUBSTITUTE, 2),
        (individual(5), SUBSTITUTE, 2),
        (ADD_REMOVE, ADD_REMOVE, 1),
        (individual(5), ADD_REMOVE, 1),
        (ADD_REMOVE, individual(5), 5),
        (individual(2), individual(5), 3),
        (SUBSTITUTE, ADD_REMOVE, None),
        (SUBSTITUTE, individual(3), None),
    ],
)
def test_group_factor(spent, target, k):
    assert group_factor(spent, target) == k


def test_group_privacy_per_definition():
    assert convert(PureDP(1.0), ADD_REMOVE, SUBSTITUTE) == PureDP(2.0)
    assert convert(ZCDP(0.1), ADD_REMOVE, SUBSTITUTE).rho == pytest.approx(0.4)
    approx = convert(ApproxDP(1.0, 1e-9), ADD_REMOVE, SUBSTITUTE)
    assert approx.epsilon == 2.0 and approx.delta == pytest.approx(2 * math.e * 1e-9)
    with pytest.raises(DipsyError, match="cannot count"):
        convert(PureDP(1.0), SUBSTITUTE, ADD_REMOVE)
