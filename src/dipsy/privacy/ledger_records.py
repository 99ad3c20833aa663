"""The ledger's schema and migration, the rules of a reservation, and the values it reads back
(:mod:`.ledger` holds the file and its transactions).

Tables (see :mod:`.ledger` for what they hold and the migration rule):

- ``spends``: one row per spend: data set, release, time, method, label, definition, amounts,
  ``relation`` (kind) and ``theta`` (NULL on rows from before relations were kept), the whole
  relation as JSON in ``relation_value`` (its public columns, response and range; NULL on rows
  from before relations carried them, which had none), ``guarantee`` ("dp", "test", "local") and
  ``status`` ("pending", "released");
- ``caps``: one row per capped data set: its DP cap's definition, amounts, when set, relation, θ
  and ``relation_value``;
- ``local_caps``: the same, for the data sets that have a cap on their local-guarantee releases
  (definition ``local``: the most their local ε_x may add up to);
- ``cap_changes``: every change of a cap (old and new as JSON, when, how).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

from ..errors import BudgetError, DipsyError
from .accountant import Spend
from .budget import BUDGET_TYPES, ZCDP, Budget, LocalDP, PureDP
from .composition import composed_total, total_under
from .conversions import zcdp_to_epsilon
from .relation import Relation, fix_for, group_factor, why_not

#: What a spend's guarantee may be: worst-case DP; a seeded test release (its noise can be
#: regenerated from the published seed: not private); a local (e.g. asymptotic) guarantee.
GUARANTEES = ("dp", "test", "local")

_TABLES = (
    "CREATE TABLE IF NOT EXISTS spends (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, release_id TEXT NOT NULL,"
    " created TEXT NOT NULL, method TEXT NOT NULL, label TEXT NOT NULL, definition TEXT NOT NULL, epsilon REAL,"
    " delta REAL, rho REAL, relation TEXT, theta INTEGER, guarantee TEXT NOT NULL DEFAULT 'dp',"
    " status TEXT NOT NULL DEFAULT 'released', relation_value TEXT)",
    "CREATE INDEX IF NOT EXISTS spends_dataset ON spends (dataset_id)",
    "CREATE INDEX IF NOT EXISTS spends_release ON spends (release_id)",
    "CREATE TABLE IF NOT EXISTS caps (dataset_id TEXT PRIMARY KEY, definition TEXT NOT NULL, epsilon REAL, delta REAL,"
    " rho REAL, set_at TEXT NOT NULL, relation TEXT, theta INTEGER, relation_value TEXT)",
    "CREATE TABLE IF NOT EXISTS local_caps (dataset_id TEXT PRIMARY KEY, definition TEXT NOT NULL, epsilon REAL, delta REAL,"
    " rho REAL, set_at TEXT NOT NULL, relation TEXT, theta INTEGER, relation_value TEXT)",
    "CREATE TABLE IF NOT EXISTS cap_changes (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, old TEXT, new TEXT NOT NULL,"
    " changed_at TEXT NOT NULL, how TEXT NOT NULL)",
)
#: Columns added since the first schema, with what the rows already there get.
_ADDED = {
    "spends": (
        ("relation", "TEXT"),
        ("theta", "INTEGER"),
        ("guarantee", "TEXT NOT NULL DEFAULT 'dp'"),
        ("status", "TEXT NOT NULL DEFAULT 'released'"),
        ("relation_value", "TEXT"),
    ),
    "caps": (("relation", "TEXT"), ("theta", "INTEGER"), ("relation_value", "TEXT")),
}
_DEFAULTS = {"relation": None, "theta": None, "relation_value": None}
_SPEND_DEFAULTS = {"guarantee": "dp", "status": "released"}


#: SQLite's application id of a dipsy ledger, in the file's header: "dips" in ASCII.
APPLICATION_ID = 0x64697073
#: The columns a ledger's tables have had from the first schema on.
_REQUIRED = {
    "spends": {"id", "dataset_id", "release_id", "created", "method", "label", "definition", "epsilon", "delta", "rho"},
    "caps": {"dataset_id", "definition", "epsilon", "delta", "rho", "set_at"},
}


def is_ledger(db: sqlite3.Connection, path: object) -> bool:
    """Whether the SQLite file holds a dipsy ledger (False: it is empty); :class:`DipsyError` for a
    file that is something else — another application's database, or tables of another shape —
    which dipsy neither reads as a ledger nor writes into.

    A file dipsy wrote carries :data:`APPLICATION_ID`; one written before dipsy set it has id 0
    and the ledger's tables, and gets the id with its next write (:func:`migrate`).
    """
    app = db.execute("PRAGMA application_id").fetchone()[0]
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    fix = "pass --ledger with dipsy's budget ledger (a file dipsy created); a file that is not one is never written into"
    if app not in (0, APPLICATION_ID):
        raise DipsyError(f"{path} is not a dipsy budget ledger (it is another application's SQLite database)", fix)
    if not tables:
        return False
    for table, columns in _REQUIRED.items():
        have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")} if table in tables else set()
        if not columns <= have:
            raise DipsyError(
                f"{path} is not a dipsy budget ledger (it has no {table} table of spends and caps as dipsy writes it)", fix
            )
    return True


def migrate(db: sqlite3.Connection) -> None:
    """Create the tables, or add the columns an older ledger lacks, and mark the file as a ledger
    (inside the caller's transaction; :func:`is_ledger` has passed)."""
    if db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
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
    """The relation a row records, whole; None for a row from before relations were kept."""
    if row["relation_value"]:
        return Relation.from_dict(json.loads(row["relation_value"]))
    return Relation(row["relation"], int(row["theta"] or 1)) if row["relation"] else None


def relation_columns(relation: Relation) -> tuple[str, int, str]:
    """What a row stores of ``relation``: its kind, θ and the whole value as JSON."""
    return relation.kind, relation.theta, json.dumps(relation.to_dict(), sort_keys=True)


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
    new_relation: Relation | None  # None: a change recorded before relations were kept
    when: str
    how: str  # "set", "lowered", "raised", "redefined", "relation recorded"

    def describe(self) -> str:
        old = f"{self.old} under {self.old_relation or 'an unrecorded relation'}" if self.old else "none"
        return f"{self.when}: {self.how}: {old} → {self.new} under {self.new_relation}"


def cap_change_of(row) -> CapChange:
    old = json.loads(row["old"]) if row["old"] else None
    new = json.loads(row["new"])

    def parts(d: dict) -> tuple[Budget, Relation | None]:
        return Budget.from_dict(d), Relation.from_dict(d["relation"]) if d["relation"] else None

    old_cap, old_relation = parts(old) if old is not None else (None, None)
    return CapChange(row["dataset_id"], old_cap, old_relation, *parts(new), row["changed_at"], row["how"])


@dataclass(frozen=True)
class DatasetTotal:
    """One composed total of a data set: its DP total (in the cap's definition and relation when
    it has a cap; else one line per relation, composed across definitions by
    :func:`.composition.composed_total`), or its local total (one line per local relation, against
    its local cap), in how many releases, against which cap.
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
    #: Seeded test releases and local-guarantee releases of the data set: never in a DP ``spent``.
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
        if isinstance(self.spent, LocalDP):
            text += " (local-guarantee releases: not worst-case DP, never in a DP total)"
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


def dataset_totals(
    dataset_id: str, rows: list[dict], cap_row: dict | None, local_cap_row: dict | None = None
) -> list[DatasetTotal]:
    """The lines :meth:`.ledger.Ledger.totals` shows for one data set: its DP total(s), then one
    line per local relation of its local-guarantee releases."""
    dp = [r for r in rows if r["guarantee"] == "dp"]
    cap = budget_of(cap_row) if cap_row else None
    cap_relation = relation_of(cap_row) if cap_row else None
    out, note = [], None
    if cap is not None and cap_relation is None:
        note = "the cap's relation is not recorded: the next release's becomes it"
    elif cap is not None and cap_relation is not None:
        try:
            spent = total_under(cap, cap_relation, [(budget_of(r), relation_of(r)) for r in dp])
            out.append(_line(dataset_id, spent, dp, cap, cap_relation, cap_relation))
        except BudgetError as e:
            note = f"the spends cannot count in the cap's relation ({e.problem})"
    if not out:
        for relation, rs in _by_relation(dp).items():
            deltas = [r["delta"] for r in rs if r["definition"] == "zCDP" and r["delta"]]
            total = composed_total([budget_of(r) for r in rs], min(deltas) if deltas else None)
            if total is not None:
                out.append(_line(dataset_id, total, rs, cap, relation, cap_relation))
                continue
            for definition in dict.fromkeys(r["definition"] for r in rs):  # ρ and (ε, δ) with no δ to convert at
                part = [r for r in rs if r["definition"] == definition]
                budgets = [budget_of(r) for r in part]
                out.append(_line(dataset_id, sum(budgets[1:], budgets[0]), part, cap, relation, cap_relation))
    local_rows = [r for r in rows if r["guarantee"] == "local"]
    local_cap = budget_of(local_cap_row) if local_cap_row else None
    local_lines = []
    for relation, rs in _by_relation(local_rows).items():
        budgets = [budget_of(r) for r in rs]
        local_lines.append(
            _line(
                dataset_id,
                sum(budgets[1:], budgets[0]),
                rs,
                local_cap,
                relation,
                relation_of(local_cap_row) if local_cap_row else None,
            )
        )
    if local_cap is not None and not local_lines:
        local_lines.append(_line(dataset_id, LocalDP(0.0), [], local_cap, relation_of(local_cap_row), relation_of(local_cap_row)))
    if not out:  # test or local releases only, or a cap set before any release
        first = next((r for r in rows if r["guarantee"] != "local"), None) or cap_row
        if first is not None or not local_lines:
            first = first or rows[0]
            zero = type(budget_of(first)).zero() if first["definition"] != "local" else PureDP(0.0)
            out.append(_line(dataset_id, zero, [], cap, relation_of(first), cap_relation))
    tests = {r["release_id"] for r in rows if r["guarantee"] == "test"}
    if out:
        out[0] = replace(out[0], tests=len(tests), local=len({r["release_id"] for r in local_rows}), note=note)
    else:
        local_lines[0] = replace(local_lines[0], tests=len(tests), note=note)
    return out + local_lines


def _by_relation(rows: list[dict]) -> dict:
    groups: dict = {}
    for r in rows:
        groups.setdefault(relation_of(r), []).append(r)
    return groups


def _line(dataset_id, spent, rows, cap, relation, cap_relation) -> DatasetTotal:
    deltas = [r["delta"] for r in rows if r["definition"] == "zCDP" and r["delta"]]
    pending = {r["release_id"] for r in rows if r["status"] == "pending"}
    return DatasetTotal(
        dataset_id,
        spent,
        len({r["release_id"] for r in rows}),
        cap,
        min(deltas) if deltas else None,
        relation,
        cap_relation,
        len(pending),
    )


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def _releases(rows: list[dict]) -> str:
    """The releases of ``rows``, one phrase each: id, method and relation (for a refusal that names them)."""
    seen = dict.fromkeys((r["release_id"], r["method"], relation_of(r)) for r in rows)
    return "; ".join(
        f"release {rid[:12]} ({method}, under {relation or 'an unrecorded relation'})" for rid, method, relation in seen
    )


def decide(
    stored: dict | None,
    stored_local: dict | None,
    earlier: list[dict],
    any_caps: bool,
    reused: bool,
    dataset_id: str,
    release_id: str,
    spends: list[Spend],
    relation: Relation,
    cap: Budget | None,
    cap_relation: Relation | None,
    raise_cap: bool,
    guarantee: str,
    dataset_id_given: bool,
) -> tuple[Reservation, tuple[Budget, Relation, str] | None, bool]:
    """What :meth:`.ledger.Ledger.reserve` does with a request: the reservation, the cap change
    (None: none) and whether that change is of the local cap — or the refusal.

    ``stored`` is the data set's DP cap row, ``stored_local`` its local cap row, ``earlier`` its
    spend rows, ``any_caps`` whether any data set has a cap, ``reused`` whether ``release_id`` is
    already recorded; the rest is the request. Every DP spend, earlier and new, counts against the
    DP cap after :func:`.composition.total_under` (group privacy into the cap's relation, then
    composition in its definition); every local spend against the local cap, under its one local
    relation. A spend that cannot be converted into the cap's relation is refused, naming the
    releases it conflicts with.
    """
    if not isinstance(dataset_id, str) or not dataset_id.strip():
        raise DipsyError(
            f"the data set id {dataset_id!r} is empty: every release of the data set must count under one name",
            "pass --dataset-id with the data set's name (the same every time), or leave it out for the file's hash",
        )
    if not dataset_id_given and (cap is not None or any_caps):
        raise DipsyError(
            "a data set named by its file's hash escapes its cap when the file is re-saved, and this "
            "ledger holds caps (or this release sets one)",
            "name the data set with --dataset-id (the same name every time)",
        )
    if reused:
        raise DipsyError(f"release {release_id!r} is already in the ledger", "reserve each release under a new id")
    local_spends = any(isinstance(s.budget, LocalDP) for s in spends)
    if local_spends != all(isinstance(s.budget, LocalDP) for s in spends) or (guarantee == "local" and not local_spends):
        raise ValueError("a release's spends are all local guarantees (LocalDP), for a local release, or none are")
    if guarantee == "dp" and local_spends:
        raise BudgetError(
            "a local guarantee (ε_x of one data set) is not worst-case DP: it cannot be recorded as a DP spend, "
            "nor count against a DP cap",
            "record it with guarantee 'local' (it is then shown, never counted)",
        )
    if cap is not None and isinstance(cap, LocalDP) != local_spends:
        raise BudgetError(
            f"the cap {cap} is of another kind than this release's guarantee",
            "give a local-guarantee release a local cap (--budget-cap local=ε), and a DP release a DP cap",
        )
    if local_spends:
        return _decide_local(
            stored, stored_local, earlier, dataset_id, release_id, spends, relation, cap, cap_relation, raise_cap, guarantee
        )
    change = None
    if cap is not None:
        change = cap_change(stored, cap, cap_relation, relation, raise_cap, dataset_id)
    elif stored is not None and stored["relation"] is None:  # an old cap takes this release's relation
        change = (budget_of(stored), relation, "relation recorded")
    limit, limit_relation = change[:2] if change else ((budget_of(stored), relation_of(stored)) if stored else (None, None))
    dp_rows = [r for r in earlier if r["guarantee"] == "dp"]
    new = [(s.budget, relation) for s in spends] if guarantee == "dp" else []
    if limit is None:
        mine = [r for r in dp_rows if relation_of(r) == relation]
        deltas = [r["delta"] for r in mine if r["definition"] == "zCDP" and r["delta"]]
        total = (
            composed_total([budget_of(r) for r in mine] + [b for b, _ in new], min(deltas) if deltas else None) if new else None
        )
        return Reservation(release_id, dataset_id, relation, guarantee, total), change, False
    assert limit_relation is not None, "a stored cap without a relation takes this release's (the change above)"
    after = _within(
        dataset_id,
        "cap",
        limit,
        limit_relation,
        dp_rows,
        new,
        relation,
        "spend less, or raise the cap with --budget-cap if the data steward agrees",
    )
    return Reservation(release_id, dataset_id, relation, guarantee, after, limit, limit_relation), change, False


def _within(
    dataset_id: str,
    what: str,
    limit: Budget,
    limit_relation: Relation,
    rows: list[dict],
    new: list[tuple[Budget, Relation]],
    relation: Relation,
    fix: str,
) -> Budget:
    """The total of the spends ``rows`` and ``new`` under the ``what`` (a cap ``limit`` stated under
    ``limit_relation``), or the refusal: a relation that cannot convert (naming the releases), or a
    total past the cap."""
    _refuse_conflicts(dataset_id, rows, relation if new else None, limit_relation, what)
    old = [(budget_of(r), relation_of(r)) for r in rows]
    before, after = total_under(limit, limit_relation, old), total_under(limit, limit_relation, [*old, *new])
    if after.exceeds(limit):
        raise BudgetError(
            f"data set {dataset_id[:16]!r} has spent {before} of its {what} {limit} (under {limit_relation}); "
            f"this release (under {relation}) would take it to {after}; nothing was spent",
            fix,
        )
    return after


def _refuse_conflicts(dataset_id: str, rows: list[dict], relation: Relation | None, limit_relation: Relation, what: str) -> None:
    """Refuse when this release's ``relation`` (None: it spends nothing here) or an earlier spend's
    cannot be converted into the ``what``'s relation, naming the releases that conflict."""
    if relation is not None and group_factor(relation, limit_relation) is None:
        clash = [
            r
            for r in rows
            if (spent := relation_of(r)) is not None and spent != relation and group_factor(relation, spent) is None
        ]
        named = f"; it conflicts with {_releases(clash)}" if clash else ""
        raise BudgetError(
            f"this release is private under {relation}, which cannot count under the {what} of data set "
            f"{dataset_id[:16]!r}, stated under {limit_relation} ({why_not(relation, limit_relation)}){named}; "
            "nothing was spent",
            fix_for(relation, limit_relation),
        )
    stuck = [r for r in rows if (spent := relation_of(r)) is not None and group_factor(spent, limit_relation) is None]
    if stuck:
        raise BudgetError(
            f"the {what} of data set {dataset_id[:16]!r} would be stated under {limit_relation}, and earlier "
            f"spends cannot count there: {_releases(stuck)}; nothing was spent",
            "state the cap in a relation every release converts to",
        )


def _decide_local(
    stored: dict | None,
    stored_local: dict | None,
    earlier: list[dict],
    dataset_id: str,
    release_id: str,
    spends: list[Spend],
    relation: Relation,
    cap: Budget | None,
    cap_relation: Relation | None,
    raise_cap: bool,
    guarantee: str,
) -> tuple[Reservation, tuple[Budget, Relation, str] | None, bool]:
    """:func:`decide` for a release whose spends are local guarantees (ε_x of this data set).

    A local ε_x never counts against a DP cap: a data set whose DP cap would otherwise not cover
    such a release needs a cap of its own for local releases (``local_caps``), stated under one
    local relation; local spends of the same relation add (their density-ratio bounds multiply),
    and a spend under another local relation is refused there, naming the releases.
    """
    change = cap_change(stored_local, cap, cap_relation, relation, raise_cap, dataset_id) if cap is not None else None
    limit, limit_relation = (
        change[:2] if change else ((budget_of(stored_local), relation_of(stored_local)) if stored_local else (None, None))
    )
    rows = [r for r in earlier if r["guarantee"] == "local"]
    new = [s.budget for s in spends] if guarantee == "local" else []
    if limit is None:
        if stored is not None and guarantee == "local":
            raise BudgetError(
                f"data set {dataset_id[:16]!r} has the DP cap {budget_of(stored)}, which a local-guarantee release "
                "(not worst-case DP) never counts against, and no cap for local releases; nothing was released",
                "set one beside it with --budget-cap local=ε (the most the data set's local ε_x may add up to), "
                "if the data steward agrees",
            )
        mine = [budget_of(r) for r in rows if relation_of(r) == relation] + new
        total = sum(mine[1:], mine[0]) if new else None
        return Reservation(release_id, dataset_id, relation, guarantee, total), change, True
    assert limit_relation is not None, "a local cap is always recorded with its relation"
    after = _within(
        dataset_id,
        "cap for local releases",
        limit,
        limit_relation,
        rows,
        [(b, relation) for b in new],
        relation,
        "release less (a lower --epsilon ceiling, more down-weighting), or raise the local cap if the data steward agrees",
    )
    return Reservation(release_id, dataset_id, relation, guarantee, after, limit, limit_relation), change, True


def cap_change(
    stored: dict | None, cap: Budget, cap_relation: Relation | None, relation: Relation, raise_cap: bool, dataset_id: str
) -> tuple[Budget, Relation, str] | None:
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
