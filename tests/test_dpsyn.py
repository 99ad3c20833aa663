"""DPSyn (NIST 2020 sprint 2; METHODS.md §4.3–4.4): budget regimes, group sizes, swapping, releases.

Fast inputs only: four PUMAs and a few categorical columns of the ACS excerpts, a generated data
set whose private distribution differs from its public one, and five Adult columns. Tolerances
come from the noise: a discrete Laplace of scale b exceeds t in absolute value with probability
at most exp(−t/b) (the continuous tail; the discrete one is lighter), so a bound of
b·ln(k/10⁻⁶) holds for all of k draws but once in a million runs.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

import dipsy
from dipsy.engine import Engine, engine_for
from dipsy.errors import DipsyError
from dipsy.methods.marginals import dpsyn
from dipsy.methods.marginals.dpsyn import DPSyn, DPSynModel, post_process_groups, regime, swap_select, thresholds
from dipsy.methods.marginals.marginal import Marginal
from dipsy.privacy import ZCDP, Accountant, ApproxDP, PureDP
from dipsy.privacy.composition import total_as
from dipsy.privacy.conversions import approx_to_zcdp
from dipsy.privacy.relation import ADD_REMOVE, individual
from dipsy.privacy.rng import Randomness
from dipsy.privacy.session import Session

ACS = ROOT / "examples" / "acs"
#: The Adult public/private split (a copy of shared/data/adult/pub025).
ADULT = Path(__file__).resolve().parent / "data" / "adult_pub025"

PUMAS = ["01-01301", "17-03529", "36-03710", "38-00100"]
ACS_COLUMNS = ["PUMA", "SEX", "MSP", "RAC1P", "OWN_RENT", "EDU"]
MILLION = math.log(1e6)  # ln(1/10⁻⁶): the Laplace tail factor of a once-in-a-million bound


def synthesize(data, domain, public, epsilon, seed=1, **options):
    return dipsy.synthesize(
        data, domain, method="dpsyn", epsilon=epsilon, delta=1e-9, seed=seed, options={"public": str(public), **options}
    )


def proportions(frame: pd.DataFrame, columns: list[str], shape: tuple[int, ...], codes=None) -> np.ndarray:
    """The cell proportions of ``columns`` (integer codes, or values mapped by ``codes``)."""
    index = tuple(frame[c].map(codes[c]).to_numpy() if codes else frame[c].to_numpy() for c in columns)
    return np.bincount(np.ravel_multi_index(index, shape), minlength=math.prod(shape)) / len(frame)


def tv(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


# -- thresholds and regimes (METHODS.md §4.3) --------------------------------------------------------


@pytest.mark.parametrize(
    "theta, expected",
    [
        (1, (1 / 1400, 0.02, 1 / 35, 0.04)),
        (7, (0.005, 0.14, 0.2, 0.28)),  # the challenge's θ
        (14, (0.01, 0.28, 0.4, 0.56)),
        (35, (0.025, 0.7, 1.0, 1.4)),
    ],
)
def test_thresholds(theta, expected):
    assert thresholds(theta) == pytest.approx(expected, rel=1e-12)


# θ = 7; group ε y = min(ε₃, ε₁ + x/2), x = ε − ε₀ − ε₁ − τ₁, marginal ε = ε − ε₀ − y, by hand.
# With Ñ = 10⁶: τ₁ = 1500·7/10⁶ = 0.0105, τ₂ = 0.063; ε₀ + ε₁ + τ₁ = 0.1555, ε₀ + ε₁ + τ₂ = 0.208.
@pytest.mark.parametrize(
    "epsilon, noisy_total, name, total, group, marginals",
    [
        (0.1, None, "public", 0.0, 0.1, 0.0),  # 1: ε < ε₂ = 0.2, no total measured
        (0.1, 1e6, "public", 0.0, 0.1, 0.0),  # 1: Ñ plays no part
        (0.199, None, "public", 0.0, 0.199, 0.0),
        (0.155, 1e6, "public", 0.0, 0.155, 0.0),  # still below ε₂
        (0.2, 1e6, "one-way", 0.005, 0.16225, 0.03275),  # 2b: x = 0.0445, y = 0.14 + 0.02225
        (0.25, 1e6, "two-way", 0.005, 0.18725, 0.05775),  # 2c: x = 0.0945, y = 0.14 + 0.04725
        (1.0, 1e6, "two-way", 0.005, 0.28, 0.715),  # 2c: y capped at ε₃
        (0.2079, 1e6, "one-way", 0.005, 0.14 + 0.0524 / 2, 0.2079 - 0.005 - 0.1662),  # just below ε₀ + ε₁ + τ₂
        (0.2081, 1e6, "two-way", 0.005, 0.14 + 0.0526 / 2, 0.2081 - 0.005 - 0.1663),  # just above it
        # Ñ = 5·10⁴: τ₁ = 0.21, ε₀ + ε₁ + τ₁ = 0.355 — 2a: the total is measured, then public marginals only
        (0.3, 5e4, "public", 0.005, 0.295, 0.0),
        # Ñ = 10⁵: τ₁ = 0.105, τ₂ = 0.63, x = 0.6 − 0.25 = 0.35 — 2b with y capped at ε₃
        (0.6, 1e5, "one-way", 0.005, 0.28, 0.315),
        # a negative noisy total counts as 1: τ₁ = 10500, everything public
        (50.0, -300.0, "public", 0.005, 49.995, 0.0),
    ],
)
def test_regime_by_hand(epsilon, noisy_total, name, total, group, marginals):
    r = regime(epsilon, 7, noisy_total)
    assert r.name == name
    assert (r.total_epsilon, r.group_epsilon, r.marginal_epsilon) == pytest.approx((total, group, marginals), abs=1e-12)


def test_the_methods_example():
    """METHODS.md §4.3's example, Ñ = 10⁶: ε = 0.1 → rule 1, 0.2 → one-way, ≥ 0.25 → two-way."""
    assert [regime(e, 7, 1e6).name for e in (0.1, 0.2, 0.25, 0.5, 4.0)] == ["public", "one-way", "two-way", "two-way", "two-way"]


def test_regime_needs_the_noisy_total_from_epsilon_2_on():
    with pytest.raises(ValueError, match="noisy total"):
        regime(0.2, 7, None)


def test_two_way_branch_uses_tau_1_as_the_code_does_not_tau_2_as_the_write_up():
    """METHODS.md §4.3 2c: x = ε − ε₀ − ε₁ − τ₂ in the write-up, − τ₁ in the code; dipsy follows the code."""
    r = regime(0.25, 7, 1e6)
    code = 0.14 + (0.25 - 0.005 - 0.14 - 0.0105) / 2  # 0.18725
    write_up = 0.14 + (0.25 - 0.005 - 0.14 - 0.063) / 2  # 0.161
    assert r.name == "two-way"
    assert r.group_epsilon == pytest.approx(code, abs=1e-12)
    assert abs(r.group_epsilon - write_up) > 0.02
    # The code's choice keeps y continuous where one-way turns into two-way (ε₀ + ε₁ + τ₂ = 0.208);
    # the write-up's would drop it there by (τ₂ − τ₁)/2 = 0.02625.
    below, above = regime(0.208 - 1e-9, 7, 1e6), regime(0.208 + 1e-9, 7, 1e6)
    assert (below.name, above.name) == ("one-way", "two-way")
    assert above.group_epsilon - below.group_epsilon == pytest.approx(0.0, abs=1e-8)


@pytest.mark.parametrize("tau, tau_value", [("tau1", 0.0105), ("tau2", 0.063)])
def test_regime_c_under_either_tau_rule(tau, tau_value):
    """Regime c, θ = 7, Ñ = 10⁶, ε = 0.25: x = ε − ε₀ − ε₁ − τ with τ₁ = 1500·7/10⁶ (the submitted
    code, 0.18725 for the group counts) or τ₂ = 6τ₁ (the write-up, 0.161); regime b has τ₁ under both."""
    r = regime(0.25, 7, 1e6, tau)
    y = 0.14 + (0.25 - 0.005 - 0.14 - tau_value) / 2
    assert r.name == "two-way" and r.group_epsilon == pytest.approx(y, abs=1e-12)
    assert r.marginal_epsilon == pytest.approx(0.25 - 0.005 - y, abs=1e-12)
    assert round(r.group_epsilon, 3) == {"tau1": 0.187, "tau2": 0.161}[tau]
    b = regime(0.2, 7, 1e6, tau)
    assert b.name == "one-way" and b.group_epsilon == pytest.approx(0.14 + (0.2 - 0.005 - 0.14 - 0.0105) / 2, abs=1e-12)
    with pytest.raises(ValueError, match="tau"):
        regime(0.25, 7, 1e6, "tau3")


@pytest.mark.parametrize(
    "options, group_epsilon",
    [({}, 0.18725), ({"tau": "tau1"}, 0.18725), ({"tau": "TAU2"}, 0.161), ({"tau": "tau2", "conversion": "bun-steinke"}, 0.161)],
)
def test_tau_and_conversion_options_reach_the_run(small_public, options, group_epsilon):
    """The option picks regime c's τ and the ρ the two-way marginals spend: all of CKS's ρ for
    (ε − ε₀ − y, δ), or the write-up's Bun–Steinke ρ (σ² rounded up: a hair less is spent)."""
    budget = ApproxDP(0.25, 1e-9)
    method = DPSyn(
        budget, options={"public": str(small_public), "groups": "G", "theta": 7, "pool": 50, "iterations": 1, **options}
    )
    plan = method.plan(None, SMALL)
    assert plan.parameters["tau"] == options.get("tau", "tau1").lower()
    assert plan.parameters["conversion"] == options.get("conversion", "cks")
    session = Session(
        engine_for(small_frame(300, 0), SMALL),
        plan.declared(budget),
        plan.relation,
        Randomness.from_seed(0),
        plan.measurements,
        True,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dpsyn, "regime", lambda e, t, n, tau="tau1", _r=dpsyn.regime: _r(e, t, None if n is None else 1e6, tau))
        model = method.fit(session, plan)
    session.close()
    assert model.regime.group_epsilon == pytest.approx(group_epsilon, abs=1e-12)
    rho = sum(s.budget.rho for s in session.spends if isinstance(s.budget, ZCDP))
    target = approx_to_zcdp(0.25 - 0.005 - group_epsilon, 1e-9, options.get("conversion", "cks"))
    assert target * (1 - 1e-6) <= rho <= target


@pytest.mark.parametrize("option, value", [("tau", "tau3"), ("conversion", "rdp")])
def test_unknown_tau_or_conversion_is_refused(small_public, option, value):
    with pytest.raises(DipsyError, match=f"option {option}="):
        DPSyn(ApproxDP(1.0, 1e-9), options={"public": str(small_public), option: value})


@settings(max_examples=300, deadline=None)
@given(epsilon=st.floats(1e-4, 50.0), theta=st.integers(1, 30), noisy_total=st.one_of(st.none(), st.floats(-1e5, 1e9)))
def test_regime_budget_always_adds_up(epsilon, theta, noisy_total):
    e0, e1, e2, e3 = theta / 1400, theta / 50, theta / 35, theta / 25
    if epsilon >= e2 and noisy_total is None:
        with pytest.raises(ValueError):
            regime(epsilon, theta, noisy_total)
        return
    r = regime(epsilon, theta, noisy_total)
    assert r.total_epsilon + r.group_epsilon + r.marginal_epsilon == pytest.approx(epsilon, rel=1e-12, abs=1e-15)
    assert min(r.total_epsilon, r.marginal_epsilon) >= 0 and r.group_epsilon > 0
    if epsilon < e2:
        assert (r.name, r.total_epsilon, r.marginal_epsilon) == ("public", 0.0, 0.0)
        return
    assert r.total_epsilon == pytest.approx(e0)
    tau1 = 1500 * theta / max(noisy_total, 1.0)
    if epsilon < e0 + e1 + tau1:
        assert (r.name, r.marginal_epsilon) == ("public", 0.0)
        return
    assert r.name == ("one-way" if epsilon < e0 + e1 + 6 * tau1 else "two-way")
    assert e1 <= r.group_epsilon <= e3 and r.marginal_epsilon > 0
    assert r.group_epsilon == pytest.approx(min(e3, e1 + (epsilon - e0 - e1 - tau1) / 2), rel=1e-12)


SMALL = dipsy.Domain.from_sizes({"G": 2, "A": 3, "B": 2})


def small_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.integers(0, k, n) for c, k in zip(SMALL.names, SMALL.shape())})


@pytest.fixture(scope="module")
def small_public(tmp_path_factory):
    # Parquet: every plan and fit opens it (the Hypothesis tests below, hundreds of times), and a Parquet file
    # opens in two thirds of a CSV's CPU, whose types are sniffed and checked first; the ACS and Adult
    # releases read their public data from CSV files
    path = tmp_path_factory.mktemp("small") / "public.parquet"
    small_frame(500, 0).to_parquet(path, index=False)
    return path


# 50 and 30 examples: each plans (and below, fits) from a public file; the regime arithmetic under
# them has 300 examples of its own above.
@settings(max_examples=50, deadline=None)
@given(epsilon=st.floats(1e-4, 50.0), theta=st.integers(1, 30), delta=st.floats(1e-15, 0.5))
def test_declared_spends_fit_the_budget(small_public, epsilon, theta, delta):
    """The plan's spends, fixed before any data are read, compose to at most (ε, δ)."""
    method = DPSyn(ApproxDP(epsilon, delta), options={"public": str(small_public), "groups": "G", "theta": theta})
    plan = method.plan(None, SMALL)
    accountant = Accountant(ApproxDP(epsilon, delta))
    for spend in plan.spends:  # raises if they would overspend
        accountant.spend(spend.label, spend.budget)
    assert sum(s.budget.epsilon for s in plan.spends) == pytest.approx(epsilon, rel=1e-12)
    assert len(plan.spends) == (1 if epsilon < theta / 35 else 2)
    # fixed up front: the group counts (regime 1), or the noisy total and an adaptive (ε − ε₀, δ)
    assert len(plan.measurements) == 1 and plan.relation == individual(theta)
    assert (plan.adaptive is None) == (epsilon < theta / 35)
    assert plan.measurements[0].cost == PureDP(epsilon if plan.adaptive is None else theta / 1400)


@settings(max_examples=30, deadline=None)
@given(
    epsilon=st.floats(0.03, 60.0),
    theta=st.integers(1, 8),
    delta=st.floats(1e-15, 0.5),
    noisy_total=st.floats(-1e4, 1e8),
    seed=st.integers(0, 3),
    tau=st.sampled_from(dpsyn.TAU_RULES),
    conversion=st.sampled_from(dpsyn.CONVERSIONS),
)
def test_what_fit_spends_is_within_the_budget_under_the_mixed_rule(
    small_public, epsilon, theta, delta, noisy_total, seed, tau, conversion
):
    """fit runs the regime's measurements through a session, whatever the noisy total: discrete
    Laplace spends (ε-DP) and discrete Gaussian ones (ρ-zCDP) mixed. Added by ``total_as`` — the ρ's
    summed and converted once at the δ the budget leaves — the statement's total is within (ε, δ),
    under either τ rule and either conversion."""
    budget = ApproxDP(epsilon, delta)
    method = DPSyn(
        budget,
        options={
            "public": str(small_public),
            "groups": "G",
            "theta": theta,
            "pool": 50,
            "iterations": 1,
            "tau": tau,
            "conversion": conversion,
        },
    )
    plan = method.plan(None, SMALL)
    session = Session(
        engine_for(small_frame(300, seed), SMALL),
        plan.declared(budget),
        plan.relation,
        Randomness.from_seed(seed),
        plan.measurements,
        plan.adaptive is not None,
    )
    with pytest.MonkeyPatch.context() as mp:  # the regime of any noisy total (Ñ is only ever used through it)
        mp.setattr(
            dpsyn, "regime", lambda e, t, n, tau="tau1", _r=dpsyn.regime: _r(e, t, None if n is None else noisy_total, tau)
        )
        model = method.fit(session, plan)
    session.close()
    spent = [s.budget for s in session.spends]
    assert session.spent == total_as(budget, spent) and not session.spent.exceeds(budget)
    assert session.spent.delta in (0.0, delta)  # δ only when a Gaussian ran
    assert any(isinstance(b, ZCDP) for b in spent) == (model.regime.name == "two-way")
    before = session.spends
    model.draw(Randomness.from_seed(seed))  # post-processing: no read, no spend
    assert session.spends == before


@pytest.mark.parametrize("n", [0, 1])
@pytest.mark.parametrize("epsilon", [0.01, 1.0, 5000.0])
def test_empty_and_one_row_data_release_without_error(small_public, n, epsilon, caplog):
    """n is never read: an empty file and a one-row file both release, from the noisy counts (every
    group at least ``least`` records); at a huge ε the noisy marginals of nothing say nothing and
    the public ones stand in."""
    regimes = set()
    for seed in range(4):
        with caplog.at_level(logging.INFO, logger="dipsy.methods.marginals.dpsyn"):
            release = dipsy.synthesize(
                small_frame(n, seed),
                SMALL,
                method="dpsyn",
                epsilon=epsilon,
                delta=1e-9,
                seed=seed,
                neighbouring="add-remove",
                options={"public": str(small_public), "groups": "G", "least": 30, "pool": 100, "iterations": 2},
            )
        table = release.tables[0]
        sizes = table.G.value_counts().reindex(range(2), fill_value=0)
        assert np.all(sizes >= 30) and list(table.columns) == list(SMALL.names)
        total = total_as(ApproxDP(epsilon, 1e-9), [s.budget for s in release.spends])
        assert not total.exceeds(ApproxDP(epsilon, 1e-9))
        regimes |= {line.split()[2].rstrip(":") for line in caplog.messages if line.startswith("dpsyn regime")}
    assert regimes <= {"public", "one-way", "two-way"} and regimes


# -- group sizes (§4.4) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "noisy, least, multiple, expected",
    [
        ([120, 1234, 1260], 300, 100, [300, 1200, 1300]),  # the docstring's
        ([-40, 0, 49, 50, 54, 55, 56, 64], 50, 10, [50, 50, 50, 50, 50, 60, 60, 60]),  # floor, then halves round up
        ([1249.9, 1250, 1250.1], 300, 100, [1200, 1300, 1300]),
        ([-5, 20, 170], 30, 100, [100, 100, 200]),  # least not a multiple: never rounded below it
        ([-3, 0, 4, 5], 0, 10, [0, 0, 0, 10]),
        ([-3, 2, 7], 0, 1, [0, 2, 7]),
        ([299, 300, 301], 300, 7, [301, 301, 301]),  # 300 is not a multiple of 7: the next one, 301
    ],
)
def test_post_process_groups(noisy, least, multiple, expected):
    out = post_process_groups(np.array(noisy), least, multiple)
    assert out.dtype == np.int64 and out.tolist() == expected
    assert np.all(out % multiple == 0) and np.all(out >= least)


# -- swap selection (§4.4) ---------------------------------------------------------------------------

SIZES = (3, 4, 2)
PAIRS = [(0, 1), (0, 2), (1, 2)]


def pool_and_targets(seed: int, size: int = 3000):
    """A uniform pool (last column: a record id no target reads) and the 2-way targets of a skewed joint."""
    rng = np.random.default_rng(seed)
    pool = np.column_stack([rng.integers(0, s, size) for s in SIZES] + [np.arange(size)])
    joint = (np.arange(1, 25) ** 2).reshape(SIZES).astype(float)  # shares 1/4900 … 576/4900
    targets = [Marginal(p, joint.sum(axis=tuple(a for a in range(3) if a not in p)) * 7.3) for p in PAIRS]
    return pool, targets


def l1_error(records: np.ndarray, targets: list[Marginal]) -> float:
    """Mean over targets of the L1 distance of the records' shares to the target's shares."""
    n = len(records)
    errors = []
    for t in targets:
        counts = np.bincount(np.ravel_multi_index(tuple(records[:, a] for a in t.attributes), t.counts.shape), minlength=t.cells)
        errors.append(np.abs(counts / n - t.counts.ravel() / t.total).sum())
    return float(np.mean(errors))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [100, 400])
def test_swap_select_approaches_the_targets(seed, n):
    pool, targets = pool_and_targets(seed)
    chosen = swap_select(pool, targets, n, n, np.random.default_rng(seed))
    assert chosen.shape == (n, 4)
    ids = chosen[:, 3]
    assert len(set(ids.tolist())) == n  # n distinct records of the pool, unchanged
    assert np.array_equal(chosen, pool[ids])
    at_random = pool[np.random.default_rng(100 + seed).permutation(len(pool))[:n]]
    # Swapping stops when no cell is off its target by more than one record: then each marginal is
    # within (its cells)/n of its target in L1; a random n of the uniform pool is ~0.5 away.
    assert l1_error(chosen, targets) <= np.mean([t.cells for t in targets]) / n
    assert l1_error(chosen, targets) < l1_error(at_random, targets) / 5


def test_swap_select_is_deterministic_under_a_seed():
    pool, targets = pool_and_targets(0)
    first = swap_select(pool, targets, 200, 200, np.random.default_rng(5))
    again = swap_select(pool, targets, 200, 200, np.random.default_rng(5))
    other = swap_select(pool, targets, 200, 200, np.random.default_rng(6))
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("n", [0, 50, 51, 120])
def test_swap_select_when_n_reaches_the_pool(n):
    pool, targets = pool_and_targets(0, size=50)
    chosen = swap_select(pool, targets, n, 10, np.random.default_rng(1))
    assert chosen.shape == (n, 4)
    assert set(chosen[:, 3].tolist()) <= set(range(50))
    assert np.array_equal(chosen, pool[chosen[:, 3]])  # whole pool records
    if n == 50:
        assert sorted(chosen[:, 3].tolist()) == list(range(50))  # the pool itself, in some order


# -- end to end on ACS ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def acs(tmp_path_factory):
    """Four PUMAs, PUMA and five categorical columns: the 2018 file is public, the 2019 file confidential."""
    folder = tmp_path_factory.mktemp("acs")
    for name in ("national2018", "national2019"):
        frame = pd.read_csv(ACS / f"{name}.csv", dtype=str, keep_default_na=False)
        frame[frame.PUMA.isin(PUMAS)][ACS_COLUMNS].to_csv(folder / f"{name}.csv", index=False)
    domain = dipsy.Domain.load(ACS / "domain.yaml").project(ACS_COLUMNS)
    return folder / "national2019.csv", folder / "national2018.csv", domain


ACS_OPTIONS = {"groups": "PUMA", "pool": 2000, "least": 50, "multiple": 10, "iterations": 10}


@pytest.fixture(scope="module")
def acs_run(acs):
    """Releases of the ACS subset, each made once: ``acs_run(θ or None for the default, ε, seed)``."""
    private, public, domain = acs
    made = {}

    def run(theta, epsilon, seed=3):
        if (theta, epsilon, seed) not in made:
            options = ACS_OPTIONS | ({} if theta is None else {"theta": theta})
            made[theta, epsilon, seed] = synthesize(private, domain, public, epsilon, seed=seed, **options)
        return made[theta, epsilon, seed]

    return run


@pytest.mark.parametrize("theta, epsilon", [(7, 0.1), (None, 0.1)])  # rule 1; θ = 1 (default), rule 2a
def test_acs_release_in_the_public_regime(acs, acs_run, theta, epsilon):
    private, _, domain = acs
    release = acs_run(theta, epsilon)
    theta = theta or 1
    table = release.tables[0]
    assert list(table.columns) == ACS_COLUMNS
    for column in ACS_COLUMNS:
        assert set(table[column]) <= {str(c) for c in domain[column].categories}, column

    # one block per PUMA of the domain — those absent from the data too — of the declared sizes
    sizes = table.PUMA.value_counts().reindex([str(c) for c in domain["PUMA"].categories], fill_value=0)
    assert np.all(sizes % 10 == 0) and np.all(sizes >= 50)
    # and of the noisy count's size: |size − max(count, least)| <= multiple/2 + |noise|, noise scale θ/ε_group
    truth = pd.read_csv(private, dtype=str, keep_default_na=False).PUMA.value_counts().reindex(sizes.index, fill_value=0)
    group_epsilon = epsilon if epsilon < theta / 35 else epsilon - theta / 1400
    bound = 5 + theta / group_epsilon * math.log(len(sizes) / 1e-6)
    assert np.all(np.abs(sizes - np.maximum(truth, 50)) <= bound)
    assert np.all(sizes[truth > 0] > 50)  # the real PUMAs are far above the floor

    # the reuse rule: groups of equal size carry the same records
    rest = [c for c in ACS_COLUMNS if c != "PUMA"]
    blocks = {p: g[rest].sort_values(rest).reset_index(drop=True) for p, g in table.groupby("PUMA")}
    equal = [(size, list(group.index)) for size, group in sizes.groupby(sizes) if len(group) > 1]
    assert equal, "expected several groups at the floor size"
    for _size, pumas in equal:
        for p in pumas[1:]:
            pd.testing.assert_frame_equal(blocks[p], blocks[pumas[0]])


def test_acs_statement_names_everything_public(acs, acs_run):
    public = acs[1]
    release = acs_run(7, 0.1)
    statement = release.statement.claim()  # seeded: what the same run states unseeded
    assert statement["definition"] == "approximate-DP"
    # the statement is what ran: at ε = 0.1 < ε₂ = 0.2 only the group counts, by the discrete
    # Laplace — (0.1, 0)-DP, within the (0.1, 1e-9) asked for
    assert (statement["epsilon_total"], statement["delta_total"], statement["sets"]) == (0.1, 0.0, 1)
    assert "θ = 7" in statement["neighbouring"] and "individual" in statement["neighbouring"]
    assert any(public.name in item for item in statement["public"])
    assert any("θ = 7" in item for item in statement["public"])
    total = total_as(ApproxDP(0.1, 1e-9), [s.budget for s in release.spends])
    assert total.epsilon <= 0.1 * (1 + 1e-12) and total.delta <= 1e-9
    assert release.options["public"] == {"file": public.name, "sha256": dipsy.api.fingerprint(public)}
    assert str(public.parent) not in json.dumps(release.metadata(), default=str)  # never the operator's path
    assert release.parameters["theta"] == 7 and release.parameters["groups"] == ["PUMA"]
    assert release.parameters["thresholds"]["epsilon_2"] == pytest.approx(0.2)
    assert not any(k.startswith("_") for k in release.parameters)


def test_default_neighbouring_is_add_remove_one_record(acs_run):
    statement = acs_run(None, 0.1).statement
    assert statement.relation == ADD_REMOVE and statement.neighbouring == ADD_REMOVE.describe()


def test_same_seed_same_release(acs, acs_run):
    private, public, domain = acs
    again = synthesize(private, domain, public, 0.1, seed=3, theta=7, **ACS_OPTIONS).tables[0]
    pd.testing.assert_frame_equal(again, acs_run(7, 0.1, 3).tables[0])
    assert not again.equals(acs_run(7, 0.1, 12).tables[0])


def test_rows_scales_the_noisy_group_sizes(acs, acs_run):
    """rows=R: the same noisy counts (the seed's noise), each real group its noisy share of R."""
    private, public, domain = acs
    full = acs_run(None, 0.1).tables[0].PUMA.value_counts()
    small = synthesize(private, domain, public, 0.1, seed=3, rows=2000, **ACS_OPTIONS).tables[0].PUMA.value_counts()
    truth = pd.read_csv(private, dtype=str, keep_default_na=False).PUMA.value_counts()
    real = [str(p) for p in truth.index]
    share = small[real] / full[real]
    assert share.max() < 0.5  # far fewer records than the noisy counts (thousands per PUMA)
    assert share.max() - share.min() < 0.03  # one factor for every group, up to rounding to 10
    assert abs(small[real].sum() - 2000 * full[real].sum() / full[full > 50].sum()) <= 10 * len(real)


@pytest.mark.parametrize("columns", [["PUMA", "SEX"], ["SEX"]])
@pytest.mark.parametrize("epsilon, name", [(0.01, "public"), (40.0, "two-way")])  # θ = 1; n ≈ 5600 (Ñ >= 225 suffices)
def test_one_column_besides_the_groups(acs, caplog, columns, epsilon, name):
    """No pair to measure: the one column's marginal is the target (public or noisy)."""
    private, public, domain = acs
    options = {k: v for k, v in ACS_OPTIONS.items() if k != "groups" or "PUMA" in columns}
    with caplog.at_level(logging.INFO, logger="dipsy.methods.marginals.dpsyn"):
        table = synthesize(private, domain.project(columns), public, epsilon, seed=2, **options).tables[0]
    assert f"dpsyn regime {name}:" in caplog.text
    assert list(table.columns) == columns and set(table.SEX) <= {"1", "2"}
    if "PUMA" not in columns:  # one group of every record: n within the noise of its count, scale <= 1/0.01
        n = len(pd.read_csv(private, usecols=["SEX"]))
        assert len(table) % 10 == 0 and abs(len(table) - n) <= 5 + 100 * MILLION


# -- end to end on data whose private distribution is not the public one -------------------------------

SHIFTED = dipsy.Domain.from_sizes({"G": 3, "A": 4, "B": 4, "C": 3})
SHIFTED_N = 20_000


@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
    """Private: A skewed, B = A with probability 0.85; public: A and B uniform and independent.

    G has 3 groups of shares 0.6, 0.3, 0.1, so with pool = 4000 the largest two groups are drawn by
    GUM directly and the smallest is swapped out of the pool.
    """
    rng = np.random.default_rng(2024)

    def draw(n, private):
        g = rng.choice(3, n, p=[0.6, 0.3, 0.1])
        if private:
            a = rng.choice(4, n, p=[0.55, 0.25, 0.15, 0.05])
            b = np.where(rng.random(n) < 0.85, a, rng.integers(0, 4, n))
        else:
            a, b = rng.integers(0, 4, n), rng.integers(0, 4, n)
        return pd.DataFrame({"G": g, "A": a, "B": b, "C": rng.choice(3, n, p=[0.2, 0.3, 0.5])})

    folder = tmp_path_factory.mktemp("shifted")
    private, public = draw(SHIFTED_N, True), draw(5000, False)
    private.to_csv(folder / "private.csv", index=False)
    public.to_csv(folder / "public.csv", index=False)
    return folder / "private.csv", folder / "public.csv", private, public


# θ = 1: ε₀ = 1/1400, ε₁ = 0.02, ε₂ = 1/35 ≈ 0.0286, ε₃ = 0.04; Ñ = 20000 + Lap(1400), τ₁ = 1500/Ñ.
# Each ε below lies in its regime unless |Ñ − 20000| > 13000 (probability < 10⁻⁴):
# 0.02 < ε₂; 0.04 < ε₀ + ε₁ + τ₁ while Ñ < 38000; 0.25 in [ε₀ + ε₁ + τ₁, ε₀ + ε₁ + τ₂) for Ñ in
# [6600, 39000); 2.0 >= ε₀ + ε₁ + τ₂ for Ñ >= 4600.
REGIMES = {0.02: "public", 0.04: "public", 0.25: "one-way", 2.0: "two-way"}


@pytest.fixture(scope="module")
def shifted_runs(shifted):
    """One release per ε of REGIMES, with a record of the regime and of every confidential query."""
    private, public, _, _ = shifted
    runs = {}
    with pytest.MonkeyPatch.context() as mp:
        log = {}
        for name in ("contingency", "values", "num_rows"):

            def spy(self, *args, _name=name, _original=getattr(Engine, name), **kwargs):  # noqa: B008 - bound per name
                if getattr(self, "path", None) == private:  # the public engine reads the public file: free
                    columns = args[0] if args else kwargs.get("columns")
                    log["queries"].append((log["phase"], _name, None if columns is None else tuple(columns)))
                return _original(self, *args, **kwargs)

            mp.setattr(Engine, name, spy)

        def sample(self, k, rand, _original=DPSynModel.sample):
            log["phase"] = "sample"
            return _original(self, k, rand)

        mp.setattr(DPSynModel, "sample", sample)

        def recorded_regime(*args, _original=dpsyn.regime, **kwargs):
            log["regime"] = _original(*args, **kwargs)
            return log["regime"]

        mp.setattr(dpsyn, "regime", recorded_regime)

        for epsilon in REGIMES:
            log.update(queries=[], phase="fit", regime=None)
            release = synthesize(private, SHIFTED, public, epsilon, seed=5, groups="G", pool=4000, iterations=10)
            runs[epsilon] = release, log["regime"], list(log["queries"])
    return runs


@pytest.mark.parametrize("epsilon", list(REGIMES))
def test_shifted_regime_and_spends(shifted_runs, epsilon):
    release, r, _ = shifted_runs[epsilon]
    assert r.name == REGIMES[epsilon]
    spends = [s.budget for s in release.spends]
    # ε-DP and ρ-zCDP spends mixed, added as the session's accountant adds them (total_as): what this path spent
    total = total_as(ApproxDP(epsilon, 1e-9), spends)
    assert total.epsilon <= epsilon * (1 + 1e-12) and total.delta <= 1e-9
    # the statement: the declared (ε, δ) of the privacy filter whatever regime ran (from ε₂ = 1/35 the regime is
    # chosen from the noisy total); below ε₂ nothing is adaptive and the plan's fixed measurements are the guarantee
    stated = release.statement.total
    if epsilon >= 1 / 35:
        assert stated.epsilon == pytest.approx(epsilon, rel=1e-12) and stated.delta == 1e-9
    else:
        assert stated == total
    assert any(isinstance(b, ZCDP) for b in spends) == (r.name == "two-way")
    sizes = release.tables[0].G.value_counts().sort_index()
    multiple = 10 if r.name == "public" else 100
    assert list(sizes.index) == [0, 1, 2] and np.all(sizes % multiple == 0) and np.all(sizes >= 300)


@pytest.mark.parametrize(
    "epsilon, expected",
    [
        (0.02, {("G",)}),  # rule 1: the group counts only — no total, no marginal
        (0.04, {("G",)}),  # 2a: the noisy total, then the group counts only
        (0.25, {("G",), ("A",), ("B",), ("C",)}),
        (2.0, {("G",), ("A", "B"), ("A", "C"), ("B", "C")}),
    ],
)
def test_the_confidential_data_are_read_only_for_the_regime_s_measurements(shifted_runs, epsilon, expected):
    _, r, queries = shifted_runs[epsilon]
    assert {q[2] for q in queries if q[1] == "contingency"} == expected
    assert not [q for q in queries if q[1] == "values"]
    # the row count: checked (nothing released) when fitting; measured as Ñ only from ε₂ on
    # every read is a measurement in fit (none in sampling); the row count only as Ñ, from ε₂ on
    assert not [q for q in queries if q[0] == "sample"]
    assert [q[1] for q in queries].count("num_rows") == (1 if epsilon >= 1 / 35 else 0)


def test_measurements_are_used_where_private_and_public_data_differ(shifted, shifted_runs):
    """Public regime: the public shares; one-way: private one-way shares; two-way: the private dependence.

    Noise at these ε is far below the bounds: one-way cells have Laplace noise of scale
    3/0.209 ≈ 14 on 20,000 records (TV ~ 0.002); two-way cells discrete Gaussian noise of σ ≈ 8
    (ρ ≈ 0.044 over 3 pairs) on 16 cells (TV ~ 0.003).
    """
    _, _, private, public = shifted
    a = lambda f: proportions(f, ["A"], (4,))  # noqa: E731
    ab = lambda f: proportions(f, ["A", "B"], (4, 4))  # noqa: E731
    public_gap_a, public_gap_ab = tv(a(private), a(public)), tv(ab(private), ab(public))  # ≈ 0.30, ≈ 0.65
    dependence = tv(ab(private), np.outer(a(private), proportions(private, ["B"], (4,))).ravel())
    assert public_gap_a > 0.25 and dependence > 0.4  # the construction does what it should

    error = {e: (tv(a(private), a(run[0].tables[0])), tv(ab(private), ab(run[0].tables[0]))) for e, run in shifted_runs.items()}
    for e in (0.02, 0.04):  # the public shares, not the private ones
        assert error[e][0] > public_gap_a / 2 and error[e][1] > public_gap_ab / 2
    assert error[0.25][0] < 0.02 and error[0.25][1] > dependence / 2  # right shares, no dependence
    assert error[2.0][0] < 0.02 and error[2.0][1] < 0.05  # both
    assert error[2.0][1] < error[0.02][1] / 10
    # the smallest group went through swap selection from the pool and keeps the dependence too
    small = lambda f: f[f.G == 2]  # noqa: E731
    assert tv(ab(small(private)), ab(small(shifted_runs[2.0][0].tables[0]))) < 0.1


# -- errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, words",
    [
        ({"options": {}}, "public"),
        ({"options": {"public": "/nonexistent/public.csv"}}, "does not exist"),
        ({"groups": "COUNTY"}, "not in the domain"),
        ({"groups": ",".join(ACS_COLUMNS)}, "every column is a group"),
        ({"groups": " , "}, "names no column"),
        ({"multiple": 0}, "whole number"),
        ({"delta": None}, "delta="),  # the API names its parameter, not the flag
        ({"sets": 0}, "sets must be a whole number >= 1"),  # m > 1 is allowed: tests/test_marginal_sets.py
    ],
)
def test_errors(acs, change, words):
    private, public, domain = acs
    options = {"public": str(public), "groups": "PUMA"} | {k: v for k, v in change.items() if k in ("groups", "multiple")}
    args = {"epsilon": 1.0, "delta": 1e-9, "sets": 1, "options": options}
    args |= {k: v for k, v in change.items() if k not in ("groups", "multiple")}
    with pytest.raises(DipsyError, match=words):
        dipsy.synthesize(private, domain, method="dpsyn", seed=1, **args)


def test_a_public_file_without_valid_rows_is_refused(acs, tmp_path):
    private, _, domain = acs
    empty = tmp_path / "empty.csv"
    empty.write_text(",".join(ACS_COLUMNS) + "\n" + ",".join(["99-99999", "7", "9", "99", "9", "99"]) + "\n")
    with pytest.raises(DipsyError, match="public data set has no rows"):
        synthesize(private, domain, empty, 1.0, **ACS_OPTIONS)


# -- Adult (no groups) -----------------------------------------------------------------------------------


def test_adult_without_groups():
    columns = ["age", "workclass", "race", "sex", "income>50K"]
    domain = dipsy.Domain.load(ADULT / "adult_pub025_01-domain.json").project(columns)
    n = len(pd.read_csv(ADULT / "priv.csv", usecols=["age"]))
    release = synthesize(ADULT / "priv.csv", domain, ADULT / "pub.csv", 1.0, seed=4, iterations=10)
    table = release.tables[0]
    assert list(table.columns) == columns
    for c, size in zip(columns, domain.shape(columns)):
        assert table[c].between(0, size - 1).all(), c
    # θ = 1, ε = 1, Ñ ≈ 32,000: two-way, group ε y = ε₃ = 0.04, so rows = n + Lap(25) rounded to 100
    assert len(table) % 100 == 0
    assert abs(len(table) - n) <= 50 + 25 * MILLION


@pytest.mark.parametrize("search, sweeps", [(None, 30), (0, None), (4, 4)])
def test_gum_s_pool_goes_through_the_local_search(shifted, monkeypatch, search, sweeps):
    """In the two-way regime the pool GUM makes is handed to the local search with GUM's own
    targets (default 30 sweeps; ``search=0`` skips it), and the release states the sweeps."""
    private, public, _, _ = shifted
    calls = []

    def spy(records, targets, sizes, n_sweeps, rng, _original=dpsyn.refine_records, **kwargs):
        calls.append((n_sweeps, sorted(t.attributes for t in targets)))
        return _original(records, targets, sizes, n_sweeps, rng, **kwargs)

    monkeypatch.setattr(dpsyn, "refine_records", spy)
    options = {} if search is None else {"search": search}
    release = synthesize(private, SHIFTED, public, 2.0, seed=5, groups="G", pool=4000, iterations=10, **options)
    assert release.parameters["search"] == (30 if search is None else search)
    if sweeps is None:
        assert calls == []
    else:  # the pool of the groups of every size is searched towards the pairs the run measured
        assert calls and all(c == (sweeps, [(1, 2), (1, 3), (2, 3)]) for c in calls)
