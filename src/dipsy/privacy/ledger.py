"""A persistent ledger of what each data set has spent across releases (SQLite).

The ledger is the data steward's record, kept beside the confidential data and never released: a
data set is named by an identifier (by default the SHA-256 of its file), and every release adds
its spends. A cap, once set for a data set, refuses any release that would take the total past
it — checked and recorded in one exclusive transaction, so two releases run at once cannot both
slip under the cap. Releases of different privacy definitions (ε-DP, ρ-zCDP, (ε, δ)-DP) count
against one cap by the compositions of :mod:`.composition`.

The default location is ``$DIPSY_LEDGER`` when set, else ``ledger.sqlite`` in the user's data
directory (e.g. ``~/.local/share/dipsy`` on Linux).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence

import platformdirs

from ..errors import BudgetError, DipsyError
from .accountant import Spend
from .budget import BUDGET_TYPES, ZCDP, Budget
from .conversions import zcdp_to_epsilon
from .composition import total_as

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY,
    dataset_id TEXT NOT NULL,
    release_id TEXT NOT NULL,
    created TEXT NOT NULL,
    method TEXT NOT NULL,
    label TEXT NOT NULL,
    definition TEXT NOT NULL,
    epsilon REAL,
    delta REAL,
    rho REAL
);
CREATE INDEX IF NOT EXISTS spends_dataset ON spends (dataset_id);
CREATE TABLE IF NOT EXISTS caps (
    dataset_id TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    epsilon REAL,
    delta REAL,
    rho REAL,
    set_at TEXT NOT NULL
);
"""
_AMOUNTS = ("epsilon", "delta", "rho")


def default_ledger_path() -> Path:
    """``$DIPSY_LEDGER``, or ``ledger.sqlite`` under the user's data directory."""
    env = os.environ.get("DIPSY_LEDGER")
    return Path(env) if env else Path(platformdirs.user_data_dir("dipsy")) / "ledger.sqlite"


@dataclass(frozen=True)
class DatasetTotal:
    """What one data set has spent under one definition, in how many releases, against which cap."""

    dataset_id: str
    spent: Budget
    releases: int
    cap: Budget | None
    #: zCDP only: the smallest δ at which a release stated its ρ as (ε, δ)-DP (None if none did).
    stated_delta: float | None = None

    def describe(self) -> str:
        """The total, and for ρ-zCDP the (ε, δ) it implies at the stated δ (CKS 2020)."""
        if isinstance(self.spent, ZCDP) and self.stated_delta and self.spent.rho > 0:
            return f"{self.spent} (ε = {zcdp_to_epsilon(self.spent.rho, self.stated_delta):.4g} at δ = {self.stated_delta:g})"
        return str(self.spent)


class Ledger:
    """The budget ledger in the SQLite file at ``path`` (created with its folder when absent).

    >>> import tempfile, pathlib
    >>> from dipsy.privacy.budget import PureDP
    >>> led = Ledger(pathlib.Path(tempfile.mkdtemp()) / "l.sqlite")
    >>> with led.charge("ce", "r1", "dirichlet-multinomial", [Spend("set 1", PureDP(1.0))], cap=PureDP(1.5)):
    ...     pass
    >>> led.spent("ce")
    PureDP(epsilon=1.0)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._connect()) as db:
                db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise DipsyError(f"cannot open the budget ledger {str(self.path)!r} ({e})", "pass --ledger with a writable path") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    # -- reading --------------------------------------------------------------------------------

    def cap(self, dataset_id: str) -> Budget | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM caps WHERE dataset_id = ?", (dataset_id,)).fetchone()
        return _budget(row) if row else None

    def spent(self, dataset_id: str, definition: str = "pure-DP") -> Budget:
        """Total spent by ``dataset_id`` under ``definition`` (zero when nothing is recorded)."""
        with closing(self._connect()) as db:
            return _total(db, dataset_id, definition)

    def spends(self, dataset_id: str | None = None) -> list[dict]:
        """Every recorded spend, oldest first, optionally for one data set."""
        query = "SELECT * FROM spends" + (" WHERE dataset_id = ?" if dataset_id else "") + " ORDER BY id"
        with closing(self._connect()) as db:
            return [dict(r) for r in db.execute(query, (dataset_id,) if dataset_id else ())]

    def totals(self) -> list[DatasetTotal]:
        """One line per data set and definition: total spent, number of releases, cap."""
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT dataset_id, definition, SUM(epsilon) AS epsilon, SUM(rho) AS rho,"
                " CASE WHEN definition = 'zCDP' THEN MIN(delta) ELSE SUM(delta) END AS delta,"
                " COUNT(DISTINCT release_id) AS releases FROM spends GROUP BY dataset_id, definition"
                " ORDER BY MIN(id)"
            ).fetchall()
            out = []
            for r in rows:
                cap_row = db.execute("SELECT * FROM caps WHERE dataset_id = ?", (r["dataset_id"],)).fetchone()
                out.append(DatasetTotal(r["dataset_id"], _budget(r), r["releases"], _budget(cap_row) if cap_row else None,
                                        r["delta"] if r["definition"] == "zCDP" else None))
        return out

    # -- writing --------------------------------------------------------------------------------

    @contextmanager
    def charge(
        self, dataset_id: str, release_id: str, method: str, spends: Sequence[Spend], cap: Budget | None = None,
        stated_delta: float | None = None,
    ) -> Iterator[Budget]:
        """Check and record ``spends`` for ``dataset_id``; commit only if the block succeeds.

        ``cap``, when given, becomes the data set's cap; otherwise the stored cap (if any) holds.
        ``stated_delta``: the δ at which a zCDP release states its ρ as (ε, δ), kept in the zCDP
        rows' ``delta`` column (a statement, not a spend: zCDP totals add ρ only).
        The block runs inside an exclusive transaction: a failure inside it records nothing, and a
        release that would pass the cap raises :class:`BudgetError` before the block runs.
        Yields the data set's total after this release.
        """
        if not spends:
            raise ValueError("a charge needs at least one spend")
        definition = spends[0].budget.definition
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            if cap is not None:
                db.execute(
                    "INSERT OR REPLACE INTO caps VALUES (?, ?, ?, ?, ?, ?)",
                    (dataset_id, cap.definition, *_amounts(cap), now),
                )
            row = db.execute("SELECT * FROM caps WHERE dataset_id = ?", (dataset_id,)).fetchone()
            limit = _budget(row) if row else None
            if limit is None:
                before = _total(db, dataset_id, definition)
                after = before + _sum(spends)
            else:  # earlier releases may be of other definitions: add them up in the cap's
                earlier = [_budget(r) for r in db.execute("SELECT * FROM spends WHERE dataset_id = ?", (dataset_id,))]
                before = total_as(limit, earlier)
                after = total_as(limit, earlier + [s.budget for s in spends])
                if after.exceeds(limit):
                    raise BudgetError(
                        f"data set {dataset_id[:16]!r} has spent {before} of its cap {limit}; this release needs"
                        f" {_sum(spends)} more; nothing was spent",
                        "spend less, or raise the cap with --budget-cap if the data steward agrees",
                    )
            db.executemany(
                "INSERT INTO spends (dataset_id, release_id, created, method, label, definition, epsilon, delta, rho)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(dataset_id, release_id, now, method, s.label, s.budget.definition, *_amounts(s.budget, stated_delta)) for s in spends],
            )
            yield after
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()


def _amounts(b: Budget, stated_delta: float | None = None) -> tuple:
    d = b.to_dict()
    if isinstance(b, ZCDP):
        d["delta"] = stated_delta
    return tuple(d.get(k) for k in _AMOUNTS)


def _budget(row: sqlite3.Row) -> Budget:
    kind = BUDGET_TYPES[row["definition"]]
    return kind(**{k: row[k] or 0.0 for k in _AMOUNTS if k in kind.__dataclass_fields__})


def _total(db: sqlite3.Connection, dataset_id: str, definition: str) -> Budget:
    row = db.execute(
        "SELECT ? AS definition, SUM(epsilon) AS epsilon, SUM(delta) AS delta, SUM(rho) AS rho"
        " FROM spends WHERE dataset_id = ? AND definition = ?",
        (definition, dataset_id, definition),
    ).fetchone()
    return _budget(row)


def _sum(spends: Sequence[Spend]) -> Budget:
    total = spends[0].budget
    for s in spends[1:]:
        total = total + s.budget
    return total
