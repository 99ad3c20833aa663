"""Budgets across definitions: what a user asks for, and what a data set has spent in total."""

import math

import pytest

from dipsy.errors import BudgetError, DipsyError
from dipsy.privacy import ZCDP, ApproxDP, Ledger, PureDP, Spend
from dipsy.privacy.composition import parse_cap, requested_budget, total_as
from dipsy.privacy.conversions import approx_to_zcdp, zcdp_to_epsilon
from dipsy.privacy.relation import ADD_REMOVE, SUBSTITUTE


@pytest.mark.parametrize(
    "definition, given, expected",
    [
        ("pure-DP", {"epsilon": 1.0}, PureDP(1.0)),
        ("pure-DP", {"epsilon": "0.25"}, PureDP(0.25)),
        ("zCDP", {"rho": 0.5}, ZCDP(0.5)),
        ("zCDP", {"rho": "0.5", "delta": 1e-6}, ZCDP(0.5)),
        ("zCDP", {"epsilon": 1.0, "delta": 1e-9}, ZCDP(approx_to_zcdp(1.0, 1e-9))),
        ("approximate-DP", {"epsilon": 2.0, "delta": "1e-9"}, ApproxDP(2.0, 1e-9)),
    ],
)
def test_requested_budget(definition, given, expected):
    budget, delta = requested_budget(definition, **given)
    assert budget == expected
    assert delta == (float(given["delta"]) if "delta" in given else None)


@pytest.mark.parametrize(
    "definition, given, words",
    [
        ("pure-DP", {"epsilon": 1.0, "delta": 1e-9}, "takes --epsilon only"),
        ("pure-DP", {"rho": 1.0}, "takes --epsilon only"),
        ("pure-DP", {}, "epsilon must be"),
        ("zCDP", {"epsilon": 1.0}, "needs --rho, or --epsilon with --delta"),
        ("zCDP", {"epsilon": 1.0, "delta": 1e-9, "rho": 0.1}, "not both"),
        ("zCDP", {"rho": -1}, "rho must be"),
        ("zCDP", {"epsilon": 1.0, "delta": 1.5}, "delta must lie in (0, 1)"),
        ("zCDP", {"epsilon": 1.0, "delta": "x"}, "delta must lie in (0, 1)"),
        ("approximate-DP", {"epsilon": 1.0}, "needs --epsilon and --delta"),
        ("approximate-DP", {"rho": 1.0, "delta": 1e-9}, "needs --epsilon and --delta"),
        ("Rényi", {"epsilon": 1.0}, "unknown privacy definition"),
    ],
)
def test_requested_budget_refuses(definition, given, words):
    with pytest.raises(DipsyError) as info:
        requested_budget(definition, **given)
    assert words in str(info.value)


def test_total_as_each_definition():
    assert total_as(PureDP(3), [PureDP(1), PureDP(0.5)]) == PureDP(1.5)
    assert total_as(ZCDP(1), [PureDP(1), ZCDP(0.1)]) == ZCDP(0.6)  # ε-DP is ε²/2-zCDP
    assert total_as(ApproxDP(5, 1e-6), [PureDP(1), ApproxDP(2, 1e-7)]) == ApproxDP(3, 1e-7)
    # zCDP spends are added as ρ and converted once, at the δ the (ε, δ) spends leave
    mixed = total_as(ApproxDP(10, 1e-6), [PureDP(1), ApproxDP(1, 4e-7), ZCDP(0.2), ZCDP(0.3)])
    assert mixed.delta == 1e-6
    assert math.isclose(mixed.epsilon, 2 + zcdp_to_epsilon(0.5, 6e-7), rel_tol=1e-12)
    # converting once is tighter than converting each at half the δ and adding
    assert mixed.epsilon < 2 + zcdp_to_epsilon(0.2, 3e-7) + zcdp_to_epsilon(0.3, 3e-7)


@pytest.mark.parametrize(
    "cap, spends, words",
    [
        (PureDP(5), [ZCDP(0.1)], "cap is pure ε-DP"),
        (PureDP(5), [ApproxDP(1, 1e-9)], "cap is pure ε-DP"),
        (ZCDP(5), [ApproxDP(1, 1e-9)], "cap is ρ-zCDP"),
        (ApproxDP(5, 1e-9), [ApproxDP(1, 1e-9), ZCDP(0.1)], "leaving none for the zCDP ones"),
    ],
)
def test_total_as_refuses_what_it_cannot_express(cap, spends, words):
    with pytest.raises(BudgetError) as info:
        total_as(cap, spends)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "text, expected",
    [("2", PureDP(2)), (2.5, PureDP(2.5)), ("2,1e-6", ApproxDP(2, 1e-6)), (" rho = 0.5 ", ZCDP(0.5)), (ZCDP(1), ZCDP(1))],
)
def test_parse_cap(text, expected):
    assert parse_cap(text) == expected


@pytest.mark.parametrize("text", ["", "a", "1,2,3", "rho=-1", "1,0", "0"])
def test_parse_cap_refuses(text):
    with pytest.raises(DipsyError):
        parse_cap(text)


def test_ledger_caps_releases_of_mixed_definitions(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    total = led.reserve("d", "r1", "m", [Spend("a", PureDP(1.0))], SUBSTITUTE, cap=ApproxDP(3.0, 1e-6)).total
    assert total == ApproxDP(1.0, 0.0)
    rho = approx_to_zcdp(1.5, 1e-6)  # converts to ε = 1.5 at the whole δ: total 2.5 <= 3
    total = led.reserve("d", "r2", "privsyn", [Spend("b", ZCDP(rho))], SUBSTITUTE).total
    assert total.epsilon == pytest.approx(2.5, rel=1e-6)
    with pytest.raises(BudgetError, match="nothing was spent"):
        led.reserve("d", "r3", "privsyn", [Spend("c", ZCDP(rho))], SUBSTITUTE)
    assert len(led.spends("d")) == 2  # the refused release left no trace
    # a pure cap refuses a zCDP release outright, before anything is recorded
    led.reserve("e", "r4", "m", [Spend("a", PureDP(1.0))], SUBSTITUTE, cap=PureDP(5.0))
    with pytest.raises(BudgetError, match="cap is pure"):
        led.reserve("e", "r5", "privsyn", [Spend("b", ZCDP(0.01))], SUBSTITUTE)
    assert len(led.spends("e")) == 1


def test_ledger_states_a_zcdp_total_as_epsilon_delta(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    rho = approx_to_zcdp(1.0, 1e-9)
    for release, delta in (("r1", 1e-9), ("r2", 1e-6)):
        led.reserve(
            "d", release, "privsyn", [Spend("a", ZCDP(rho / 2)), Spend("b", ZCDP(rho / 2))], ADD_REMOVE, stated_delta=delta
        )
    [total] = led.totals()
    assert total.spent.rho == pytest.approx(2 * rho)  # δ is a statement, not a spend: ρ's add
    assert total.stated_delta == 1e-9  # the smallest δ any release stated
    assert "at δ = 1e-09" in total.describe()
    assert float(total.describe().split("ε = ")[1].split()[0]) == pytest.approx(zcdp_to_epsilon(2 * rho, 1e-9), rel=1e-3)
