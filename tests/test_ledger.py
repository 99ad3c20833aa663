"""The budget ledger: relations, guarantees, the reserve/confirm protocol, caps, identity, migration.

The first test is THE CONVERSION TABLE: what one spend counts as against a cap of each definition
under each relation, with every expected value worked out by hand from the rules:

- group factor k: add/remove → substitute k = 2; add/remove θ_f → θ_t k = ⌈θ_t/θ_f⌉; substitute
  → add/remove refused (the release may publish n exactly);
- group privacy: ε ⇒ kε (Dwork & Roth 2014, Thm 2.2); ρ ⇒ k²ρ (Bun & Steinke 2016, Prop. 1.9);
  (ε, δ) ⇒ (kε, k e^{(k−1)ε} δ) (Vadhan 2017, Lemma 2.2);
- then into the cap's definition: ε ⇒ ε²/2-zCDP, ε ⇒ (ε, 0); ρ ⇒ (ε, δ) by CKS 2020 at the cap's
  δ = 1e-6; (ε, δ) into a pure or zCDP cap and ρ into a pure cap refused.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from dipsy.errors import BudgetError, DipsyError
from dipsy.privacy import ZCDP, ApproxDP, Ledger, PureDP, Spend
from dipsy.privacy.budget import LocalDP
from dipsy.privacy.composition import TABLE_CAPS, conversion_table, format_conversion_table, total_under
from dipsy.privacy.relation import ADD_REMOVE, SUBSTITUTE, Relation, individual, substitute_values

S, A1, A3 = SUBSTITUTE, ADD_REMOVE, individual(3)
NO_K, NOT_EXPRESSIBLE = "†", "‡"  # refused: no group factor; cannot be expressed in the cap's definition
#: CKS 2020 ε for ρ at δ = 1e-6, by an independent grid over α of
#: ε = min_α αρ + (log(1/δ) + (α − 1) log(1 − 1/α) − log α)/(α − 1):
CKS_1E6 = {0.1: 2.141939, 0.4: 4.604440, 0.9: 7.306417}


def P(e):
    return PureDP(e)


def Z(r):
    return ZCDP(r)


def A(e, d):
    return ApproxDP(e, d)


X, N = NOT_EXPRESSIBLE, NO_K
#: spend relation, cap relation, k, then for the spends ε = 1, ρ = 0.1, (ε, δ) = (1, 1e-9) in that
#: order, each against a pure, a zCDP and an (ε, δ = 1e-6) cap.
TABLE = [
    (S, S, 1, [P(1), Z(0.5), A(1, 0), X, Z(0.1), A(2.141939, 1e-6), X, X, A(1, 1e-9)]),
    (S, A1, None, [N] * 9),
    (S, A3, None, [N] * 9),
    # k = 2: ε 2, ρ 0.5·4 = 2 (= 2²/2); ρ 0.1·4 = 0.4; δ = 2·e¹·1e-9 = 5.43656e-9
    (A1, S, 2, [P(2), Z(2.0), A(2, 0), X, Z(0.4), A(4.604440, 1e-6), X, X, A(2, 5.436564e-9)]),
    (A1, A1, 1, [P(1), Z(0.5), A(1, 0), X, Z(0.1), A(2.141939, 1e-6), X, X, A(1, 1e-9)]),
    # k = ⌈3/1⌉ = 3: ε 3, ρ 9/2 = 4.5; ρ 0.1·9 = 0.9; δ = 3·e²·1e-9 = 2.216717e-8
    (A1, A3, 3, [P(3), Z(4.5), A(3, 0), X, Z(0.9), A(7.306417, 1e-6), X, X, A(3, 2.216717e-8)]),
    (A3, S, 2, [P(2), Z(2.0), A(2, 0), X, Z(0.4), A(4.604440, 1e-6), X, X, A(2, 5.436564e-9)]),
    # k = ⌈1/3⌉ = 1: an individual-level spend covers the record level
    (A3, A1, 1, [P(1), Z(0.5), A(1, 0), X, Z(0.1), A(2.141939, 1e-6), X, X, A(1, 1e-9)]),
    (A3, A3, 1, [P(1), Z(0.5), A(1, 0), X, Z(0.1), A(2.141939, 1e-6), X, X, A(1, 1e-9)]),
]
SPENDS = (PureDP(1.0), ZCDP(0.1), ApproxDP(1.0, 1e-9))
CASES = [
    (sr, cr, k, spend, cap, cells[3 * i + j])
    for sr, cr, k, cells in TABLE
    for i, spend in enumerate(SPENDS)
    for j, cap in enumerate(TABLE_CAPS)
]


def test_the_hand_table_covers_every_pair():
    assert len(CASES) == 81 == len(conversion_table())
    assert {(sr, cr) for sr, cr, *_ in TABLE} == {(a, b) for a in (S, A1, A3) for b in (S, A1, A3)}


@pytest.mark.parametrize(
    "spent, cap_relation, k, spend, cap, expected",
    CASES,
    ids=[f"{c[0]}->{c[1]}:{c[3].definition}->{c[4].definition}" for c in CASES],
)
def test_conversion_table(spent, cap_relation, k, spend, cap, expected):
    row = next(
        r
        for r in conversion_table()
        if (r.spend_relation, r.cap_relation, r.spend, r.cap_definition) == (spent, cap_relation, spend, cap.definition)
    )
    assert row.k == k
    if isinstance(expected, str):
        assert row.result is None and row.refusal == expected
        with pytest.raises(BudgetError):
            total_under(cap, cap_relation, [(spend, spent)])
        return
    got = total_under(cap, cap_relation, [(spend, spent)])
    assert type(got) is type(expected) and row.result == got
    for name, value in expected.to_dict().items():
        if name != "definition":
            assert getattr(got, name) == pytest.approx(value, rel=1e-6, abs=1e-300), name


PRINTED = """\
| spent under | cap under | k | ε = 1 → pure | ε = 1 → zCDP | ε = 1 → (ε, δ) | ρ = 0.1 → pure | ρ = 0.1 → zCDP | ρ = 0.1 → (ε, δ) | (1, 1e-09) → pure | (1, 1e-09) → zCDP | (1, 1e-09) → (ε, δ) |
|---|---|---|---|---|---|---|---|---|---|---|---|
| substitute | substitute | 1 | ε = 1 | ρ = 0.5 | (1, 0) | refused ‡ | ρ = 0.1 | (2.142, 1e-06) | refused ‡ | refused ‡ | (1, 1e-09) |
| substitute | add-remove | — | refused † | refused † | refused † | refused † | refused † | refused † | refused † | refused † | refused † |
| substitute | add-remove (θ = 3) | — | refused † | refused † | refused † | refused † | refused † | refused † | refused † | refused † | refused † |
| add-remove | substitute | 2 | ε = 2 | ρ = 2 | (2, 0) | refused ‡ | ρ = 0.4 | (4.604, 1e-06) | refused ‡ | refused ‡ | (2, 5.437e-09) |
| add-remove | add-remove | 1 | ε = 1 | ρ = 0.5 | (1, 0) | refused ‡ | ρ = 0.1 | (2.142, 1e-06) | refused ‡ | refused ‡ | (1, 1e-09) |
| add-remove | add-remove (θ = 3) | 3 | ε = 3 | ρ = 4.5 | (3, 0) | refused ‡ | ρ = 0.9 | (7.306, 1e-06) | refused ‡ | refused ‡ | (3, 2.217e-08) |
| add-remove (θ = 3) | substitute | 2 | ε = 2 | ρ = 2 | (2, 0) | refused ‡ | ρ = 0.4 | (4.604, 1e-06) | refused ‡ | refused ‡ | (2, 5.437e-09) |
| add-remove (θ = 3) | add-remove | 1 | ε = 1 | ρ = 0.5 | (1, 0) | refused ‡ | ρ = 0.1 | (2.142, 1e-06) | refused ‡ | refused ‡ | (1, 1e-09) |
| add-remove (θ = 3) | add-remove (θ = 3) | 1 | ε = 1 | ρ = 0.5 | (1, 0) | refused ‡ | ρ = 0.1 | (2.142, 1e-06) | refused ‡ | refused ‡ | (1, 1e-09) |"""


def test_the_printed_table_matches_the_hand_table():
    printed = format_conversion_table()
    assert printed.startswith(PRINTED + "\n\n")
    assert "† substitute → add/remove" in printed and "‡ the spend cannot be expressed" in printed
    # and the hand values, rounded as printed, are the printed cells
    for line, (sr, cr, k, cells) in zip(PRINTED.splitlines()[2:], TABLE):
        shown = [c.strip() for c in line.strip("|").split("|")]
        assert shown[:3] == [str(sr), str(cr), "—" if k is None else str(k)]
        for text, cell in zip(shown[3:], cells):
            if isinstance(cell, str):
                assert text == f"refused {cell}"
            elif isinstance(cell, ApproxDP):
                assert text == f"({cell.epsilon:.4g}, {cell.delta:.4g})"
            else:
                assert text == (f"ε = {cell.epsilon:.4g}" if isinstance(cell, PureDP) else f"ρ = {cell.rho:.4g}")


# -- the audit's reproduction ----------------------------------------------------------------------


def one(e: float) -> list[Spend]:
    return [Spend("all", PureDP(e))]


def test_audit_add_remove_then_substitute_against_a_substitute_cap(tmp_path):
    """Cap ε = 2 under substitution; a laplace-sanitizer release under add/remove at ε = 1 counts 2."""
    led = Ledger(tmp_path / "l.sqlite")
    r = led.reserve("d", "lap", "laplace-sanitizer", one(1.0), ADD_REMOVE, cap=PureDP(2.0), cap_relation=SUBSTITUTE)
    assert r.total == PureDP(2.0) and r.cap_relation == SUBSTITUTE
    led.confirm("lap")
    with pytest.raises(BudgetError, match=r"would take it to ε = 3"):
        led.reserve("d", "dm", "dirichlet-multinomial", one(1.0), SUBSTITUTE)
    assert [s["release_id"] for s in led.spends("d")] == ["lap"]


def test_audit_substitute_cap_set_by_the_dirichlet_multinomial_release(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "dm", "dirichlet-multinomial", one(1.0), SUBSTITUTE, cap=PureDP(2.0))  # sets the cap's relation
    assert led.cap_relation("d") == SUBSTITUTE
    with pytest.raises(BudgetError, match=r"would take it to ε = 3"):  # 1 + 2·1
        led.reserve("d", "lap", "laplace-sanitizer", one(1.0), ADD_REMOVE)
    [total] = led.totals()
    assert (total.spent, total.relation, total.cap) == (PureDP(1.0), SUBSTITUTE, PureDP(2.0))


def test_audit_a_cap_under_add_remove_refuses_a_substitute_release(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "lap", "laplace-sanitizer", one(1.0), ADD_REMOVE, cap=PureDP(2.0))
    with pytest.raises(BudgetError, match="state this data set's cap under substitution"):
        led.reserve("d", "dm", "dirichlet-multinomial", one(0.1), SUBSTITUTE)
    assert len(led.spends("d")) == 1


def test_individual_level_spends_are_not_added_to_record_level_ones_as_one_unit(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "privsyn", [Spend("a", ZCDP(0.1))], individual(3), cap=ZCDP(5.0), cap_relation=individual(6))
    assert led.reserve("d", "r2", "privsyn", [Spend("a", ZCDP(0.1))], ADD_REMOVE).total.rho == pytest.approx(0.4 + 3.6)
    # without a cap, one line per definition and relation
    led.reserve("e", "r3", "m", one(1.0), ADD_REMOVE)
    led.reserve("e", "r4", "m", one(1.0), individual(3))
    led.reserve("e", "r5", "m", one(0.5), ADD_REMOVE)
    lines = [t for t in led.totals() if t.dataset_id == "e"]
    assert [(t.spent, t.relation, t.releases) for t in lines] == [(PureDP(1.5), ADD_REMOVE, 2), (PureDP(1.0), individual(3), 1)]
    with pytest.raises(DipsyError, match="2 relations"):
        led.spent("e")
    assert led.spent("e", relation=individual(3)) == PureDP(1.0)


def test_substitute_values_relations_are_told_apart_by_their_public_columns(tmp_path):
    """Two rdt releases, one repeating race and one sex, were once added as "ε = 1 under
    substitute-values" (finding 1): together they show every record's education, race and sex. A
    relation's public columns are part of its value: a spend converts to a substitute-values cap
    only when the cap's public columns include its own (k = 1), and is refused otherwise, naming
    the release it conflicts with."""
    race, sex = substitute_values(["education", "race"]), substitute_values(["education", "sex"])
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("adult", "rdt-race", "rdt", one(0.5), race, cap=PureDP(1.0))
    with pytest.raises(BudgetError, match=r"shows sex exactly for every record.*conflicts with release rdt-race \(rdt"):
        led.reserve("adult", "rdt-sex", "rdt", one(0.5), sex)
    assert [r["release_id"] for r in led.spends("adult")] == ["rdt-race"]
    assert led.cap_relation("adult") == race and led.spends("adult")[0]["relation_value"]  # stored whole
    led.reserve("adult", "lap", "laplace-sanitizer", one(0.25), SUBSTITUTE)  # substitute → any substitute-values: k = 1
    with pytest.raises(BudgetError, match="would take it to ε = 1.25"):
        led.reserve("adult", "rdt-edu", "rdt", one(0.5), substitute_values(["education"]))  # {education} ⊆ cap's: k = 1
    # without a cap, each relation is its own line: never one unit
    led.reserve("u", "a", "rdt", one(0.5), race)
    led.reserve("u", "b", "rdt", one(0.5), sex)
    assert [(t.spent, t.relation) for t in led.totals() if t.dataset_id == "u"] == [(PureDP(0.5), race), (PureDP(0.5), sex)]
    both = substitute_values(["education", "race", "sex"])  # a cap under the union covers both, honestly
    assert total_under(PureDP(2.0), both, [(PureDP(0.5), race), (PureDP(0.5), sex)]) == PureDP(1.0)


# -- guarantees ------------------------------------------------------------------------------------


def test_test_releases_are_shown_never_counted_nor_checked(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "m", one(1.0), SUBSTITUTE, cap=PureDP(1.0))
    for i in range(2):  # far over the cap, and not refused: a seeded release is no DP spend
        led.reserve("d", f"t{i}", "m", one(50.0), SUBSTITUTE, guarantee="test")
    [total] = led.totals()
    assert (total.spent, total.releases, total.tests) == (PureDP(1.0), 1, 2)
    assert "2 test releases (seeded: not private — never publish them)" in total.describe()
    assert led.spent("d") == PureDP(1.0)
    assert {s["guarantee"] for s in led.spends("d")} == {"dp", "test"}
    with pytest.raises(ValueError, match="guarantee"):
        led.reserve("d", "x", "m", one(1.0), SUBSTITUTE, guarantee="private-ish")
    with pytest.raises(ValueError, match="local guarantees"):  # a local release spends local guarantees only
        led.reserve("d", "x", "m", one(1.0), SUBSTITUTE, guarantee="local")


LOCAL = Relation("response-removed", public=("x",), response="y")


def local(e: float) -> list[Spend]:
    return [Spend("draws", LocalDP(e))]


def test_a_dp_cap_refuses_local_releases_unless_the_data_set_has_a_local_cap(tmp_path):
    """A spent DP cap once let a local release through (finding 6): now a data set with a DP cap
    refuses local-guarantee releases until it also has a cap for them, which they count against,
    under one local relation, shown beside the DP total."""
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "m", one(1.0), ADD_REMOVE, cap=PureDP(1.0))
    with pytest.raises(BudgetError, match="no cap for local releases.*--budget-cap local="):
        led.reserve("d", "p1", "pseudo-posterior", local(6.34), LOCAL, guarantee="local")
    with pytest.raises(BudgetError, match="no cap for local releases"):  # asked before the run, the same answer
        led.check("d", "p1", local(0.0), LOCAL, guarantee="local")
    with pytest.raises(BudgetError, match="another kind"):  # a DP cap cannot be a local one
        led.reserve("d", "p1", "pseudo-posterior", local(6.34), LOCAL, guarantee="local", cap=PureDP(9.0))
    assert [s["release_id"] for s in led.spends("d")] == ["r1"]
    r = led.reserve("d", "p1", "pseudo-posterior", local(6.34), LOCAL, guarantee="local", cap=LocalDP(10.0))
    assert (r.total, r.cap, r.cap_relation) == (LocalDP(6.34), LocalDP(10.0), LOCAL)
    assert led.cap("d", local=True) == LocalDP(10.0) and led.cap("d") == PureDP(1.0)
    assert led.check("d", "p2", local(0.0), LOCAL, guarantee="local").total == LocalDP(6.34)
    with pytest.raises(BudgetError, match="would take it to local ε_x = 12.68"):
        led.reserve("d", "p2", "pseudo-posterior", local(6.34), LOCAL, guarantee="local")
    other = Relation("response-in-range", public=("x",), response="y", within=(0.6, 1.2))
    with pytest.raises(BudgetError, match="conflicts with release p1"):  # another neighbour notion: never added
        led.reserve("d", "p3", "pseudo-posterior", local(0.1), other, guarantee="local")
    dp_line, local_line = led.totals()
    assert (dp_line.spent, dp_line.local) == (PureDP(1.0), 1)
    assert (local_line.spent, local_line.cap, local_line.relation) == (LocalDP(6.34), LocalDP(10.0), LOCAL)
    assert "not worst-case DP" in local_line.describe()


def test_an_uncapped_data_set_shows_one_composed_total_per_relation(tmp_path):
    """One dpsyn release at (3, 1e-9) once showed as a pure ε = 0.00214 line and an (ε, δ) line
    (finding 10): its spends now compose into one total under its relation."""
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "dpsyn", [Spend("total", PureDP(0.00214)), Spend("rest", ApproxDP(2.99786, 1e-9))], ADD_REMOVE)
    [line] = led.totals()
    assert line.spent == ApproxDP(3.0, 1e-9) and line.releases == 1
    led.reserve("d", "r2", "privsyn", [Spend("all", ZCDP(0.01))], ADD_REMOVE, stated_delta=1e-9)
    [line] = led.totals()  # the zCDP spend, stated at δ = 1e-9, converts there and composes
    assert isinstance(line.spent, ApproxDP) and line.spent.delta == pytest.approx(2e-9)
    assert line.spent.epsilon == pytest.approx(
        3.0 + total_under(ApproxDP(9, 1e-9), ADD_REMOVE, [(ZCDP(0.01), ADD_REMOVE)]).epsilon
    )


def test_a_data_set_with_test_releases_only_is_shown(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "t", "m", one(1.0), SUBSTITUTE, guarantee="test")
    [total] = led.totals()
    assert (total.spent, total.releases, total.tests) == (PureDP(0.0), 0, 1)


# -- the protocol ----------------------------------------------------------------------------------


def test_reserve_confirm_cancel_and_a_killed_run_counts(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "ok", "m", one(1.0), SUBSTITUTE, cap=PureDP(3.0))
    assert {s["status"] for s in led.spends("d")} == {"pending"}
    led.confirm("ok")
    led.confirm("ok")  # again: no change
    led.reserve("d", "failed", "m", one(1.0), SUBSTITUTE)
    assert led.cancel("failed") == 1 and led.cancel("ok") == 0  # a released spend is never cancelled
    led.reserve("d", "killed", "m", one(1.0), SUBSTITUTE)  # never confirmed: the run was killed
    [total] = led.totals()
    assert (total.spent, total.releases, total.pending) == (PureDP(2.0), 2, 1)
    assert "1 unfinished release, counted" in total.describe()
    with pytest.raises(BudgetError, match="nothing was spent"):
        led.reserve("d", "more", "m", one(1.5), SUBSTITUTE)
    with pytest.raises(DipsyError, match="no release"):
        led.confirm("never-reserved")
    with pytest.raises(DipsyError, match="already in the ledger"):
        led.reserve("d", "ok", "m", one(0.1), SUBSTITUTE)


def test_a_locked_ledger_is_a_clear_error_not_a_traceback(tmp_path):
    path = tmp_path / "l.sqlite"
    led = Ledger(path, timeout=0.2)
    led.reserve("d", "r1", "m", one(1.0), SUBSTITUTE)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(DipsyError, match="is locked: another dipsy run held it") as err:
            led.reserve("d", "r2", "m", one(1.0), SUBSTITUTE)
        assert err.value.__cause__ is None and "\n" not in str(err.value)
        assert led.totals()[0].spent == PureDP(1.0)  # reading is not blocked by a reservation
    finally:
        blocker.close()


def _race(path: str, i: int, barrier, results) -> None:
    led = Ledger(path)
    barrier.wait()
    try:
        led.reserve("ds", f"r{i}", "m", one(1.0), SUBSTITUTE, cap=PureDP(5.0))
        results.put("reserved")
    except BudgetError:
        results.put("refused")
    except Exception as e:  # noqa: BLE001 - reported to the parent
        results.put(repr(e))


def test_eight_processes_racing_for_a_cap_of_five(tmp_path):
    path = tmp_path / "race" / "l.sqlite"  # absent: the racers create it, too
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(str(path), i, barrier, results)) for i in range(8)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert outcomes == ["refused"] * 3 + ["reserved"] * 5
    led = Ledger(path)
    assert led.spent("ds") == PureDP(5.0) and len(led.spends("ds")) == 5
    assert [c.how for c in led.cap_history("ds")] == ["set"]


# -- caps ------------------------------------------------------------------------------------------


def test_cap_changes_are_refused_unless_lower_and_all_recorded(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "m", one(0.5), SUBSTITUTE, cap=PureDP(3.0))
    led.reserve("d", "r2", "m", one(0.5), SUBSTITUTE, cap=PureDP(3.0))  # the same again: no change
    led.reserve("d", "r3", "m", one(0.5), ADD_REMOVE, cap=PureDP(2.5))  # lower: kept, in the stored relation
    assert (led.cap("d"), led.cap_relation("d")) == (PureDP(2.5), SUBSTITUTE)
    for cap, kwargs in ((PureDP(4.0), {}), (ApproxDP(2.0, 1e-9), {}), (PureDP(2.0), {"cap_relation": ADD_REMOVE})):
        with pytest.raises(BudgetError, match="would raise or redefine it"):
            led.reserve("d", "x", "m", one(0.1), SUBSTITUTE, cap=cap, **kwargs)
    assert led.cap("d") == PureDP(2.5) and len(led.spends("d")) == 3
    led.reserve("d", "r4", "m", one(0.1), SUBSTITUTE, cap=PureDP(4.0), raise_cap=True)
    led.set_cap("d", PureDP(3.0), SUBSTITUTE)  # lower, without a release
    history = led.cap_history("d")
    assert [(c.how, c.old, c.new) for c in history] == [
        ("set", None, PureDP(3.0)),
        ("lowered", PureDP(3.0), PureDP(2.5)),
        ("raised", PureDP(2.5), PureDP(4.0)),
        ("lowered", PureDP(4.0), PureDP(3.0)),
    ]
    assert all(c.new_relation == SUBSTITUTE for c in history) and "set: none → ε = 3 under substitute" in history[0].describe()


def test_a_refused_release_leaves_a_new_cap_unrecorded(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "m", one(1.0), SUBSTITUTE)
    with pytest.raises(BudgetError):
        led.reserve("d", "r2", "m", one(1.0), SUBSTITUTE, cap=PureDP(1.5))
    assert led.cap("d") is None and led.cap_history("d") == [] and not led.has_caps()


def test_has_caps_and_a_hash_named_data_set(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    assert not led.has_caps()
    led.reserve("sha", "r1", "m", one(1.0), SUBSTITUTE, dataset_id_given=False)  # no caps anywhere: fine
    with pytest.raises(DipsyError, match="--dataset-id"):  # a cap on a hash-named data set
        led.reserve("sha", "r2", "m", one(1.0), SUBSTITUTE, cap=PureDP(5.0), dataset_id_given=False)
    led.reserve("ce", "r3", "m", one(1.0), SUBSTITUTE, cap=PureDP(5.0))
    assert led.has_caps()
    with pytest.raises(DipsyError, match="--dataset-id"):
        led.reserve("sha", "r4", "m", one(1.0), SUBSTITUTE, dataset_id_given=False)


def test_zcdp_totals_are_stated_as_epsilon_delta(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.reserve("d", "r1", "privsyn", [Spend("a", ZCDP(0.0075)), Spend("b", ZCDP(0.0075))], ADD_REMOVE, stated_delta=1e-9)
    [total] = led.totals()
    assert total.describe().startswith("ρ = 0.015 (ε = ") and "at δ = 1e-09) under add-remove" in total.describe()


# -- creation and reading --------------------------------------------------------------------------


def test_reading_never_creates_and_writing_creates_lazily(tmp_path):
    path = tmp_path / "sub" / "l.sqlite"
    with pytest.raises(DipsyError, match=f"no ledger at {path}"):
        Ledger(path, create=False)
    with pytest.raises(DipsyError, match="no ledger at"):
        Ledger.open_existing(path)
    led = Ledger(path)
    assert led.totals() == [] and led.spends() == [] and led.cap("d") is None and not led.has_caps()
    assert led.cancel("r") == 0
    with pytest.raises(BudgetError):  # refused against the empty ledger: nothing is created
        led.reserve("d", "r1", "m", one(2.0), SUBSTITUTE, cap=PureDP(1.0))
    with pytest.raises(DipsyError, match="no ledger"):
        led.confirm("r1")
    assert not (tmp_path / "sub").exists()
    led.reserve("d", "r1", "m", one(1.0), SUBSTITUTE, cap=PureDP(1.0))
    assert path.is_file() and Ledger.open_existing(path).spent("d") == PureDP(1.0)


def test_a_folder_or_a_file_in_the_way_is_a_clear_error(tmp_path):
    with pytest.raises(DipsyError, match="it is a folder"):
        Ledger(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(DipsyError, match="is not a folder"):
        Ledger(tmp_path / "file" / "l.sqlite")
    (tmp_path / "empty.sqlite").write_bytes(b"")  # a first write that never committed
    assert Ledger.open_existing(tmp_path / "empty.sqlite").totals() == []
    (tmp_path / "junk.sqlite").write_text("not a database")
    with pytest.raises(DipsyError, match="is not a dipsy budget ledger"):
        Ledger(tmp_path / "junk.sqlite").totals()
    with pytest.raises(DipsyError, match="is not a dipsy budget ledger"):  # nor written into
        Ledger(tmp_path / "junk.sqlite").reserve("d", "r", "m", one(1.0), SUBSTITUTE)
    assert (tmp_path / "junk.sqlite").read_text() == "not a database"


# -- migration -------------------------------------------------------------------------------------

OLD_SCHEMA = """
CREATE TABLE spends (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, release_id TEXT NOT NULL, created TEXT NOT NULL,
    method TEXT NOT NULL, label TEXT NOT NULL, definition TEXT NOT NULL, epsilon REAL, delta REAL, rho REAL);
CREATE INDEX spends_dataset ON spends (dataset_id);
CREATE TABLE caps (dataset_id TEXT PRIMARY KEY, definition TEXT NOT NULL, epsilon REAL, delta REAL, rho REAL,
    set_at TEXT NOT NULL);
INSERT INTO spends VALUES (1, 'old', 'r0', '2024-01-01', 'dirichlet-multinomial', 'all', 'pure-DP', 1.0, NULL, NULL);
INSERT INTO spends VALUES (2, 'old2', 'r0b', '2024-01-01', 'laplace-sanitizer', 'all', 'pure-DP', 1.0, NULL, NULL);
INSERT INTO spends VALUES (3, 'capped', 'r0c', '2024-01-01', 'laplace-sanitizer', 'all', 'pure-DP', 0.5, NULL, NULL);
INSERT INTO caps VALUES ('capped', 'pure-DP', 3.0, NULL, NULL, '2024-01-01');
"""


@pytest.fixture
def old_ledger(tmp_path) -> Path:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    return path


def test_an_old_ledger_reads_without_being_changed(old_ledger):
    before = old_ledger.read_bytes()
    led = Ledger.open_existing(old_ledger)
    rows = led.spends("old")
    assert rows[0]["relation"] is None and rows[0]["guarantee"] == "dp" and rows[0]["status"] == "released"
    totals = {t.dataset_id: t for t in led.totals()}
    assert totals["old"].relation is None and "unrecorded relation" in totals["old"].describe()
    assert totals["capped"].cap == PureDP(3.0) and "not recorded" in totals["capped"].describe()
    assert led.has_caps() and led.cap_relation("capped") is None and led.cap_history("capped") == []
    assert old_ledger.read_bytes() == before


def test_an_old_spend_counts_twice_under_substitution_and_not_at_all_under_add_remove(old_ledger):
    led = Ledger(old_ledger)
    r = led.reserve("old", "r1", "m", one(0.5), SUBSTITUTE, cap=PureDP(2.5))  # 2·1 + 0.5
    assert r.total == PureDP(2.5)
    with pytest.raises(BudgetError):
        led.reserve("old", "r2", "m", one(0.01), SUBSTITUTE)
    with pytest.raises(BudgetError, match="before the ledger kept neighbouring relations"):
        led.reserve("old2", "r3", "m", one(0.1), ADD_REMOVE, cap=PureDP(10.0))
    with sqlite3.connect(old_ledger) as db:
        columns = {r[1] for r in db.execute("PRAGMA table_info(spends)")}
    assert {"relation", "theta", "guarantee", "status"} <= columns


def test_an_old_cap_takes_the_relation_of_the_next_release(old_ledger):
    led = Ledger(old_ledger)
    led.reserve("capped", "r1", "m", one(0.5), SUBSTITUTE)  # the old 0.5 counts 1: total 1.5 of 3
    assert led.cap_relation("capped") == SUBSTITUTE
    [change] = led.cap_history("capped")
    assert (change.how, change.old, change.old_relation, change.new) == ("relation recorded", PureDP(3.0), None, PureDP(3.0))
    [total] = [t for t in led.totals() if t.dataset_id == "capped"]
    assert total.spent == PureDP(1.5) and total.relation == SUBSTITUTE
