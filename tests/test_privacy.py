"""Budgets, the accountant and the persistent ledger."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dipsy.errors import BudgetError, DipsyError
from dipsy.privacy import ZCDP, Accountant, ApproxDP, Ledger, PureDP, Spend, make_rng
from dipsy.privacy.budget import Budget, positive
from dipsy.privacy.relation import SUBSTITUTE

amounts = st.floats(min_value=0, max_value=10, allow_nan=False)


@given(amounts, amounts, amounts)
def test_pure_budgets_compose_by_addition(a, b, c):
    assert (PureDP(a) + PureDP(b)).epsilon == a + b
    assert ((PureDP(a) + PureDP(b)) + PureDP(c)).epsilon == pytest.approx((PureDP(a) + (PureDP(b) + PureDP(c))).epsilon)


def test_other_definitions_compose_componentwise_and_do_not_mix():
    assert ApproxDP(1.0, 1e-6) + ApproxDP(0.5, 1e-6) == ApproxDP(1.5, 2e-6)
    assert ZCDP(0.1) + ZCDP(0.2) == ZCDP(0.1 + 0.2)
    with pytest.raises(BudgetError, match="cannot compare or add"):
        PureDP(1.0) + ZCDP(1.0)
    assert Budget.from_dict(ApproxDP(1.0, 1e-9).to_dict()) == ApproxDP(1.0, 1e-9)


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, "x", None, True])
def test_bad_amounts_are_refused(bad):
    with pytest.raises(DipsyError):
        PureDP(bad) if not isinstance(bad, str) else PureDP(positive("epsilon", bad))
    with pytest.raises(DipsyError, match="epsilon must be a finite number > 0"):
        positive("epsilon", bad)
    with pytest.raises(BudgetError):
        ApproxDP(1.0, 1.0)


@pytest.mark.parametrize("m", [1, 3, 7, 10, 49])
def test_m_equal_shares_fit_the_budget_exactly(m):
    acc = Accountant(PureDP(0.1))
    for k in range(m):
        acc.spend(f"set {k}", PureDP(0.1).scaled(1 / m))
    assert acc.spent.epsilon == pytest.approx(0.1)
    with pytest.raises(BudgetError):
        acc.spend("one more", PureDP(1e-6))


@settings(max_examples=200)
@given(total=st.floats(0.01, 10), spends=st.lists(st.floats(0, 5), max_size=20))
def test_accountant_never_passes_its_budget_and_a_refusal_changes_nothing(total, spends):
    acc = Accountant(PureDP(total))
    for k, e in enumerate(spends):
        before = (acc.spent, acc.spends)
        try:
            acc.spend(f"s{k}", PureDP(e))
        except BudgetError:
            assert (acc.spent, acc.spends) == before
        assert acc.spent.epsilon <= total * (1 + 1e-9)
        assert acc.spent.epsilon == pytest.approx(sum(s.budget.epsilon for s in acc.spends))


def test_ledger_records_across_instances_and_refuses_to_pass_the_cap(tmp_path):
    path = tmp_path / "sub" / "ledger.sqlite"
    after = Ledger(path).reserve(
        "ce", "r1", "dirichlet-multinomial", [Spend("a", PureDP(0.5)), Spend("b", PureDP(0.5))], SUBSTITUTE, cap=PureDP(1.5)
    )
    assert after.total == PureDP(1.0)
    led = Ledger(path)  # a new process sees the same record
    led.confirm("r1")
    assert led.spent("ce") == PureDP(1.0) and led.cap("ce") == PureDP(1.5)
    with pytest.raises(BudgetError, match="cap"):
        led.reserve("ce", "r2", "dirichlet-multinomial", [Spend("c", PureDP(0.6))], SUBSTITUTE)
    assert led.spent("ce") == PureDP(1.0)
    led.reserve("ce", "r3", "dirichlet-multinomial", [Spend("d", PureDP(0.5))], SUBSTITUTE)
    assert led.spent("ce") == PureDP(1.5)
    assert led.spent("other") == PureDP(0.0)
    [total] = led.totals()
    assert (total.dataset_id, total.releases, total.cap) == ("ce", 2, PureDP(1.5))


def test_a_cancelled_reservation_records_nothing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("ce", "r1", "m", [Spend("a", PureDP(1.0))], SUBSTITUTE)  # then writing the release failed
    led.cancel("r1")
    assert led.spends() == [] and led.spent("ce") == PureDP(0.0)


def test_unwritable_ledger_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(DipsyError, match="cannot open the budget ledger"):
        Ledger(tmp_path / "file" / "ledger.sqlite")


def test_seeded_generators_repeat_and_bad_seeds_are_refused():
    assert make_rng(3).random() == make_rng(3).random()
    assert make_rng().random() != make_rng().random()
    with pytest.raises(DipsyError, match="seed"):
        make_rng(-1)
