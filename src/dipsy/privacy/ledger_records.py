"""The ledger's schema and migration, the rules of a reservation, and the values it reads back
(:mod:`.ledger` holds the file and its transactions).

Tables (see :mod:`.ledger` for what they hold and the migration rule):

- ``spends``: one row per spend: data set, release, time, method, label, definition, amounts,
  ``relation`` (kind) and ``theta`` (NULL on rows from before relations were kept),
  ``guarantee`` ("dp", "test", "local") and ``status`` ("pending", "released");
- ``caps``: one row per capped data set: definition, amounts, when set, relation and θ;
- ``cap_changes``: every change of a cap (old and new as JSON, when, how).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields, replace
from typing import Iterable

from ..errors import BudgetError, DipsyError
from .accountant import Spend
from .budget import BUDGET_TYPES, ZCDP, Budget, LocalDP
from .composition import total_under
from .conversions import zcdp_to_epsilon
from .relation import Relation

#: What a spend's guarantee may be: worst-case DP; a seeded test release (its noise can be
#: regenerated from the published seed: not private); a local (e.g. asymptotic) guarantee.
GUARANTEES = ("dp", "test", "local")

_TABLES = (
    "CREATE TABLE IF NOT EXISTS spends (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, release_id TEXT NOT NULL,"
    " created TEXT NOT NULL, method TEXT NOT NULL, label TEXT NOT NULL, definition TEXT NOT NULL, epsilon REAL,"
    " delta REAL, rho REAL, relation TEXT, theta INTEGER, guarantee TEXT NOT NULL DEFAULT 'dp',"
    " status TEXT NOT NULL DEFAULT 'released')",
    "CREATE INDEX IF NOT EXISTS spends_dataset ON spends (dataset_id)",
    "CREATE INDEX IF NOT EXISTS spends_release ON spends (release_id)",
    "CREATE TABLE IF NOT EXISTS caps (dataset_id TEXT PRIMARY KEY, definition TEXT NOT NULL, epsilon REAL, delta REAL,"
    " rho REAL, set_at TEXT NOT NULL, relation TEXT, theta INTEGER)",
    "CREATE TABLE IF NOT EXISTS cap_changes (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, old TEXT, new TEXT NOT NULL,"
    " changed_at TEXT NOT NULL, how TEXT NOT NULL)",
)
#: Columns added since the first schema, with what the rows already there get.
_ADDED = {
    "spends": (("relation", "TEXT"), ("theta", "INTEGER"), ("guarantee", "TEXT NOT NULL DEFAULT 'dp'"),
               ("status", "TEXT NOT NULL DEFAULT 'released'")),
    "caps": (("relation", "TEXT"), ("theta", "INTEGER")),
}
_DEFAULTS = {"relation": None, "theta": None}
_SPEND_DEFAULTS = {"guarantee": "dp", "status": "released"}


def migrate(db: sqlite3.Connection) -> None:
    """Create the tables, or add the columns an older ledger lacks (inside the caller's transaction)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'spends'").fetchone() is not None:
        for table, added in _ADDED.items():
            have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
            for name, kind in added:
                if have and name not in have:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    for statement in _TABLES:
        db.execute(statement)


def rows_of(cursor: Iterable[sqlite3.Row]) -> list[dict]:
    """Rows as dicts, with the defaults of the columns an old ledger lacks."""
    out = []
    for row in cursor:
        d = {**_DEFAULTS, **dict(row)}
        out.append({**_SPEND_DEFAULTS, **d} if "release_id" in d else d)
    return out


def budget_of(row) -> Budget:
    """The budget a spend or cap row records (a zCDP row's ``delta`` is a statement, not read)."""
    kind = BUDGET_TYPES[row["definition"]]
    return kind(**{f.name: row[f.name] or 0.0 for f in fields(kind)})


def relation_of(row) -> Relation | None:
    """The relation a row records; None for a row from before relations were kept."""
    return Relation(row["relation"], int(row["theta"] or 1)) if row["relation"] else None


def cap_json(cap: Budget, relation: Relation | None) -> str:
    return json.dumps({**cap.to_dict(), "relation": relation.to_dict() if relation else None})


@dataclass(frozen=True)
class Reservation:
    """A reserved release: its spends are recorded as pending.

    ``total`` is the data set's DP total after it: in the cap's definition and relation when the
    data set has a cap (``cap``, ``cap_relation``); otherwise the sum of its spends under this
    release's relation in this release's definition (None when the release mixes definitions or
    is not a "dp" release).
    """

    release_id: str
    dataset_id: str
    relation: Relation
    guarantee: str
    total: Budget | None
    cap: Budget | None = None
    cap_relation: Relation | None = None


@dataclass(frozen=True)
class CapChange:
    """One change of a data set's cap: from ``old`` (None: it had none) to ``new``, and how."""

    dataset_id: str
    old: Budget | None
    old_relation: Relation | None
    new: Budget
    new_relation: Relation
    when: str
    how: str  # "set", "lowered", "raised", "redefined", "relation recorded"

    def describe(self) -> str:
        old = f"{self.old} under {self.old_relation or 'an unrecorded relation'}" if self.old else "none"
        return f"{self.when}: {self.how}: {old} → {self.new} under {self.new_relation}"


def cap_change_of(row) -> CapChange:
    old = json.loads(row["old"]) if row["old"] else None
    new = json.loads(row["new"])

    def parts(d):
        if d is None:
            return None, None
        return Budget.from_dict(d), Relation.from_dict(d["relation"]) if d["relation"] else None

    return CapChange(row["dataset_id"], *parts(old), *parts(new), row["changed_at"], row["how"])


@dataclass(frozen=True)
class DatasetTotal:
    """What one data set has spent: its DP total (in the cap's definition and relation when it
    has a cap; else one line per definition and relation), in how many releases, against which cap.
    """

    dataset_id: str
    spent: Budget
    releases: int
    cap: Budget | None
    #: zCDP only: the smallest δ at which a release stated its ρ as (ε, δ)-DP (None if none did).
    stated_delta: float | None = None
    #: The relation ``spent`` is under (None: spends recorded before relations were kept).
    relation: Relation | None = None
    cap_relation: Relation | None = None
    #: Releases reserved and never confirmed (a killed run): counted in ``spent``.
    pending: int = 0
    #: Seeded test releases and local-guarantee releases of the data set: never in ``spent``.
    tests: int = 0
    local: int = 0
    note: str | None = None

    def describe(self) -> str:
        """The total (for ρ-zCDP also the (ε, δ) it implies at the stated δ, CKS 2020), its
        relation, and loudly what it leaves out or may over-count."""
        text = str(self.spent)
        if isinstance(self.spent, ZCDP) and self.stated_delta and self.spent.rho > 0:
            text += f" (ε = {zcdp_to_epsilon(self.spent.rho, self.stated_delta):.4g} at δ = {self.stated_delta:g})"
        text += f" under {self.relation}" if self.relation else " under an unrecorded relation (counted as the worst case)"
        parts = [text]
        if self.pending:
            parts.append(f"{_n(self.pending, 'unfinished release')}, counted")
        if self.tests:
            parts.append(f"{_n(self.tests, 'test release')} (seeded: not private — never publish them)")
        if self.local:
            parts.append(f"{_n(self.local, 'local-guarantee release')} (not worst-case DP: not in this total)")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


def dataset_totals(dataset_id: str, rows: list[dict], cap_row: dict | None) -> list[DatasetTotal]:
    """The lines :meth:`.ledger.Ledger.totals` shows for one data set."""
    dp = [r for r in rows if r["guarantee"] == "dp"]
    cap = budget_of(cap_row) if cap_row else None
    cap_relation = relation_of(cap_row) if cap_row else None
    out, note = [], None
    if cap is not None and cap_relation is None:
        note = "the cap's relation is not recorded: the next release's becomes it"
    elif cap is not None:
        try:
            spent = total_under(cap, cap_relation, [(budget_of(r), relation_of(r)) for r in dp])
            out.append(_line(dataset_id, spent, dp, cap, cap_relation, cap_relation))
        except BudgetError as e:
            note = f"the spends cannot count in the cap's relation ({e.problem})"
    if not out:
        groups: dict[tuple, list[dict]] = {}
        for r in dp:
            groups.setdefault((r["definition"], relation_of(r)), []).append(r)
        for (_, relation), rs in groups.items():
            budgets = [budget_of(r) for r in rs]
            out.append(_line(dataset_id, sum(budgets[1:], budgets[0]), rs, cap, relation, cap_relation))
    if not out:  # test or local releases only, or a cap set before any release
        first = rows[0] if rows else cap_row
        out.append(_line(dataset_id, type(budget_of(first)).zero(), [], cap, relation_of(first), cap_relation))
    tests, local = ({r["release_id"] for r in rows if r["guarantee"] == g} for g in ("test", "local"))
    out[0] = replace(out[0], tests=len(tests), local=len(local), note=note)
    return out


def _line(dataset_id, spent, rows, cap, relation, cap_relation) -> DatasetTotal:
    deltas = [r["delta"] for r in rows if r["definition"] == "zCDP" and r["delta"]]
    pending = {r["release_id"] for r in rows if r["status"] == "pending"}
    return DatasetTotal(dataset_id, spent, len({r["release_id"] for r in rows}), cap, min(deltas) if deltas else None,
                        relation, cap_relation, len(pending))


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def decide(stored: dict | None, earlier: list[dict], any_caps: bool, reused: bool, dataset_id: str, release_id: str,
           spends: list[Spend], relation: Relation, cap: Budget | None, cap_relation: Relation | None, raise_cap: bool,
           guarantee: str, dataset_id_given: bool) -> tuple[Reservation, tuple | None]:
    """What :meth:`.ledger.Ledger.reserve` does with a request: the reservation and the cap change
    (None: none), or the refusal.

    ``stored`` is the data set's cap row, ``earlier`` its spend rows, ``any_caps`` whether any data
    set has a cap, ``reused`` whether ``release_id`` is already recorded; the rest is the request.
    Every DP spend, earlier and new, counts against the cap after :func:`.composition.total_under`
    (group privacy into the cap's relation, then composition in its definition).
    """
    if not dataset_id_given and (cap is not None or any_caps):
        raise DipsyError("a data set named by its file's hash escapes its cap when the file is re-saved, and this "
                         "ledger holds caps (or this release sets one)", "name the data set with --dataset-id (the same name every time)")
    if reused:
        raise DipsyError(f"release {release_id!r} is already in the ledger", "reserve each release under a new id")
    if guarantee == "dp" and any(isinstance(s.budget, LocalDP) for s in spends):
        raise BudgetError("a local guarantee (ε_x of one data set) is not worst-case DP: it cannot be recorded as a DP spend, "
                          "nor count against a DP cap", "record it with guarantee 'local' (it is then shown, never counted)")
    change = None
    if cap is not None:
        change = cap_change(stored, cap, cap_relation, relation, raise_cap, dataset_id)
    elif stored is not None and stored["relation"] is None:  # an old cap takes this release's relation
        change = (budget_of(stored), relation, "relation recorded")
    limit, limit_relation = change[:2] if change else ((budget_of(stored), relation_of(stored)) if stored else (None, None))
    dp = [(budget_of(r), relation_of(r)) for r in earlier if r["guarantee"] == "dp"]
    new = [(s.budget, relation) for s in spends] if guarantee == "dp" else []
    if limit is None:
        definition = spends[0].budget.definition
        mine = [b for b, r in dp + new if r == relation and b.definition == definition]
        uniform = new and all(s.budget.definition == definition for s in spends)
        total = sum(mine[1:], mine[0]) if uniform else None
        return Reservation(release_id, dataset_id, relation, guarantee, total), change
    before, after = total_under(limit, limit_relation, dp), total_under(limit, limit_relation, dp + new)
    if after.exceeds(limit):
        raise BudgetError(
            f"data set {dataset_id[:16]!r} has spent {before} of its cap {limit} (under {limit_relation}); this release"
            f" (under {relation}) would take it to {after}; nothing was spent",
            "spend less, or raise the cap with --budget-cap if the data steward agrees",
        )
    return Reservation(release_id, dataset_id, relation, guarantee, after, limit, limit_relation), change


def cap_change(stored: dict | None, cap: Budget, cap_relation: Relation | None, relation: Relation, raise_cap: bool,
               dataset_id: str) -> tuple[Budget, Relation, str] | None:
    """(new cap, its relation, how) when ``cap`` changes the stored one; None when it stays.

    The first cap is set (in ``cap_relation``, else the release's ``relation``); the same cap is
    no change; a lower one (same definition and relation, no component larger) is kept; a higher
    or differently defined one raises :class:`BudgetError` unless ``raise_cap``. A stored cap of
    unknown relation (an old ledger's) takes the new relation.
    """
    if stored is None:
        return cap, cap_relation or relation, "set"
    old, old_relation = budget_of(stored), relation_of(stored)
    new_relation = cap_relation or old_relation or relation
    if old == cap and old_relation == new_relation:
        return None
    lower = type(old) is type(cap) and all(v <= old.to_dict()[k] for k, v in cap.to_dict().items() if k != "definition")
    if lower and old_relation in (None, new_relation):
        return cap, new_relation, "lowered" if old != cap else "relation recorded"
    if not raise_cap:
        raise BudgetError(
            f"data set {dataset_id[:16]!r} has the cap {old} under {old_relation or 'an unrecorded relation'}; the cap"
            f" {cap} under {new_relation} would raise or redefine it; nothing was spent",
            "leave out --budget-cap to keep the cap, or pass --raise-cap if the data steward agrees",
        )
    return cap, new_relation, "raised" if type(old) is type(cap) and old_relation == new_relation else "redefined"
