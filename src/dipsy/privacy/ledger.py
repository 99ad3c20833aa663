"""A persistent ledger of what each data set has spent across releases (SQLite).

The ledger is the data steward's record, kept beside the confidential data and never released: a
data set is named by an identifier (by default the SHA-256 of its file), and every release adds
its spends, each with the neighbouring relation it was spent under (:mod:`.relation`) and its
guarantee (``"dp"``; ``"test"``: seeded, not private; ``"local"``: not worst-case DP).

A release runs in three steps, so that the lock is held for milliseconds, never through a synthesis:

1. :meth:`Ledger.reserve` — one short ``BEGIN IMMEDIATE`` transaction checks the cap and inserts the
   spends as ``pending``; a release that would pass the cap raises :class:`BudgetError` and
   records nothing. Two runs at once cannot both slip under the cap.
2. :meth:`Ledger.confirm` once the release exists (``released``), or :meth:`Ledger.cancel` when the
   run failed before anything became visible (the pending spends are deleted).
3. A killed run leaves its spends ``pending``: they count (a kill may over-count, never under-count).

A data set's cap is stated in one definition and one relation (by default the relation of the
release that first sets it; a relation is a whole value, with the columns it leaves public).
Every DP spend counts against it after conversion into that relation by group privacy and into
that definition by composition (:func:`.composition.total_under`), or is refused, naming the
releases whose relations conflict. ``test`` spends are recorded and shown, never added into a
total and never checked. ``local`` spends (a local ε_x, not worst-case DP) never count against the
DP cap: a data set with a DP cap refuses them unless it also has a cap for local releases
(``local_caps``, :class:`~dipsy.privacy.budget.LocalDP`, under one local relation), which they
count against instead. Caps change only as :meth:`Ledger.reserve` describes, each change kept in
``cap_changes``.

Schema (one file): ``spends`` (id, dataset_id, release_id, created, method, label, definition,
epsilon, delta, rho, relation, theta, relation_value, guarantee, status), ``caps`` and
``local_caps`` (dataset_id, definition, epsilon, delta, rho, set_at, relation, theta,
relation_value) and ``cap_changes`` (id, dataset_id, old, new, changed_at, how). For zCDP spends
``delta`` holds the δ the release stated its ρ at (a statement, not a spend).

Migration: a ledger written before relations were kept opens as it is; the first write adds the
new columns and tables. Its spends get ``relation`` NULL, ``guarantee`` "dp" and ``status``
"released"; its caps get ``relation`` NULL. A spend of unknown relation counts as the worst case:
twice under a substitute cap (``k = 2`` is the largest group factor any relation needs), refused
under an add/remove cap (it may have been a substitute release). A cap of unknown relation takes
the relation of the next release that reserves against it (recorded in ``cap_changes``). Rows
written before relations carried their public columns (``relation_value`` NULL) had none.

Creation is lazy: ``Ledger(path)`` creates nothing; the folder and file are made by the first
:meth:`Ledger.reserve` (or :meth:`Ledger.set_cap`) that is not refused. ``Ledger(path, create=False)``
(:meth:`Ledger.open_existing`) refuses a missing file. Reading never creates or changes the file.

The default location is ``$DIPSY_LEDGER`` when set, else ``ledger.sqlite`` in the user's data
directory (e.g. ``~/.local/share/dipsy`` on Linux).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ..errors import DipsyError
from ..interrupts import held
from .accountant import Spend
from .budget import Budget, LocalDP
from .known import check_not_lost, default_ledger_path, remember
from .ledger_records import (
    GUARANTEES,
    CapChange,
    DatasetTotal,
    Reservation,
    budget_of,
    cap_change,
    cap_change_of,
    cap_json,
    dataset_totals,
    decide,
    is_ledger,
    migrate,
    relation_columns,
    relation_of,
    rows_of,
)
from .relation import Relation, parse

__all__ = ["GUARANTEES", "CapChange", "DatasetTotal", "Ledger", "Reservation", "default_ledger_path"]


class Ledger:
    """The budget ledger in the SQLite file at ``path``.

    Parameters
    ----------
    path
        The ledger file.
    create
        True: the first accepted :meth:`reserve` creates the file and its folder (nothing is
        created before). False: the file must exist (:class:`DipsyError` "no ledger at PATH").
    timeout
        Seconds a write waits for another run's lock before a :class:`DipsyError`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from dipsy.privacy.budget import PureDP
    >>> from dipsy.privacy.relation import SUBSTITUTE
    >>> led = Ledger(pathlib.Path(tempfile.mkdtemp()) / "l.sqlite")
    >>> r = led.reserve("ce", "r1", "dirichlet-multinomial", [Spend("set 1", PureDP(1.0))], SUBSTITUTE, cap=PureDP(1.5))
    >>> led.confirm("r1")
    >>> r.total, led.spent("ce")
    (PureDP(epsilon=1.0), PureDP(epsilon=1.0))
    """

    def __init__(self, path: str | Path, *, create: bool = True, timeout: float = 30.0) -> None:
        self.path, self.create, self.timeout = Path(path), create, timeout
        if self.path.is_dir():
            raise DipsyError(
                f"cannot open the budget ledger {str(self.path)!r} (it is a folder)", "pass --ledger with a file path"
            )
        if not create and not self.path.is_file():
            check_not_lost(self.path)
            raise DipsyError(f"no ledger at {self.path}", "check --ledger: reading a ledger never creates one")
        parent = next((p for p in self.path.absolute().parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise DipsyError(
                f"cannot open the budget ledger {str(self.path)!r} ({parent} is not a folder)",
                "pass --ledger with a writable path",
            )

    @classmethod
    def open_existing(cls, path: str | Path, *, timeout: float = 30.0) -> Ledger:
        """The ledger at ``path``, which must exist (for reading: nothing is ever created)."""
        return cls(path, create=False, timeout=timeout)

    # -- reading --------------------------------------------------------------------------------

    def cap(self, dataset_id: str, local: bool = False) -> Budget | None:
        """The data set's DP cap, or with ``local`` its cap for local-guarantee releases (None if it has
        none); its relation is :meth:`cap_relation`'s."""
        row = self._cap_row(dataset_id, local)
        return budget_of(row) if row else None

    def cap_relation(self, dataset_id: str, local: bool = False) -> Relation | None:
        """The relation the data set's (local) cap is stated under (None: no cap, or an old cap's unknown one)."""
        row = self._cap_row(dataset_id, local)
        return relation_of(row) if row else None

    def has_caps(self) -> bool:
        """Whether any data set in this ledger has a cap (DP or local)."""
        with self._reading() as db:
            return db is not None and _any_caps(db)

    def holds(self, dataset_id: str, release_id: str) -> bool:
        """Whether the ledger records the release ``release_id`` of the data set ``dataset_id``."""
        with self._reading() as db:
            return (
                db is not None
                and db.execute(
                    "SELECT 1 FROM spends WHERE dataset_id = ? AND release_id = ? LIMIT 1", (dataset_id, release_id)
                ).fetchone()
                is not None
            )

    def cap_history(self, dataset_id: str) -> list[CapChange]:
        """Every change of the data set's cap, oldest first."""
        with self._reading() as db:
            if db is None or not _has_table(db, "cap_changes"):
                return []
            rows = db.execute("SELECT * FROM cap_changes WHERE dataset_id = ? ORDER BY id", (dataset_id,)).fetchall()
        return [cap_change_of(r) for r in rows]

    def spent(self, dataset_id: str, definition: str = "pure-DP", relation: Relation | None = None) -> Budget:
        """The sum of the data set's DP spends recorded in ``definition`` under ``relation``.

        Pending spends count; ``test`` and ``local`` ones do not. ``relation`` may be left out
        when those spends share one relation; otherwise :class:`DipsyError` (spends under
        different relations are never added as one unit: see :meth:`totals`).
        """
        rows = [r for r in self.spends(dataset_id) if r["guarantee"] == "dp" and r["definition"] == definition]
        relations = {relation_of(r) for r in rows}
        if relation is None and len(relations) > 1:
            raise DipsyError(
                f"data set {dataset_id!r} has {definition} spends under {len(relations)} relations",
                "give relation=, or read totals() for the total in the cap's relation",
            )
        total = Budget.from_dict({"definition": definition, "epsilon": 0.0, "delta": 0.0, "rho": 0.0})
        for r in rows:
            if relation is None or relation_of(r) == relation:
                total = total + budget_of(r)
        return total

    def spends(self, dataset_id: str | None = None) -> list[dict]:
        """Every recorded spend, oldest first, optionally for one data set (old rows get the defaults)."""
        query = "SELECT * FROM spends" + (" WHERE dataset_id = ?" if dataset_id else "") + " ORDER BY id"
        with self._reading() as db:
            return [] if db is None else rows_of(db.execute(query, (dataset_id,) if dataset_id else ()))

    def totals(self) -> list[DatasetTotal]:
        """One line per capped data set (its DP total in the cap's definition and relation), and per
        relation for a data set without a cap (composed across definitions); then one line per local
        relation of its local-guarantee releases (against its local cap); with the pending, test and
        local counts.
        """
        with self._reading() as db:
            if db is None:
                return []
            rows = rows_of(db.execute("SELECT * FROM spends ORDER BY id"))
            caps = {r["dataset_id"]: r for r in rows_of(db.execute("SELECT * FROM caps ORDER BY rowid"))}
            local = (
                {r["dataset_id"]: r for r in rows_of(db.execute("SELECT * FROM local_caps ORDER BY rowid"))}
                if _has_table(db, "local_caps")
                else {}
            )
        order = list(dict.fromkeys([r["dataset_id"] for r in rows] + list(caps) + list(local)))
        return [t for d in order for t in dataset_totals(d, [r for r in rows if r["dataset_id"] == d], caps.get(d), local.get(d))]

    # -- writing --------------------------------------------------------------------------------

    def reserve(
        self,
        dataset_id: str,
        release_id: str,
        method: str,
        spends: Sequence[Spend],
        relation: Relation | str,
        *,
        cap: Budget | None = None,
        raise_cap: bool = False,
        stated_delta: float | None = None,
        guarantee: str = "dp",
        dataset_id_given: bool = True,
        cap_relation: Relation | None = None,
    ) -> Reservation:
        """Check the cap and record ``spends`` as pending, in one short exclusive transaction.

        Parameters
        ----------
        dataset_id, release_id, method
            What is released from what; ``release_id`` is new (it names the release to
            :meth:`confirm` or :meth:`cancel`).
        spends
            The release's declared spends, each in its own definition.
        relation
            The neighbouring relation they were spent under.
        cap
            The data set's cap, if given with this release. The first cap is recorded; the same
            cap again changes nothing; a lower one (same definition and relation, no component
            larger) is recorded; a higher or differently defined one is refused unless
            ``raise_cap``. Every change is kept (:meth:`cap_history`).
        raise_cap
            Allow ``cap`` to raise or redefine the stored cap (the data steward's decision).
        stated_delta
            The δ at which a zCDP release states its ρ as (ε, δ) (kept in the zCDP rows' ``delta``).
        guarantee
            ``"dp"``; ``"test"`` (seeded: its noise can be regenerated, so it is not private) or
            ``"local"`` (not worst-case DP): these are recorded, never counted nor checked.
        dataset_id_given
            False when ``dataset_id`` is the file's hash: then a cap is refused (the same data
            re-saved would get a fresh budget), and so is any release while the ledger holds caps.
        cap_relation
            The relation a new cap is stated under (default: the stored cap's, else ``relation``).

        Returns
        -------
        Reservation
            With the data set's DP total after this release (see :class:`Reservation`).

        Raises
        ------
        BudgetError
            The release would pass the cap, cannot be converted into the cap's relation or
            definition, or the cap change is refused. Nothing is recorded (nor created).
        DipsyError
            A hash-named data set with caps in play, a reused ``release_id``, a busy ledger.
        """
        relation = parse(relation) if isinstance(relation, str) else relation
        if not spends:
            raise ValueError("a reservation needs at least one spend")
        if guarantee not in GUARANTEES:
            raise ValueError(f"guarantee must be one of {GUARANTEES}, got {guarantee!r}")
        ask = (dataset_id, release_id, list(spends), relation, cap, cap_relation, raise_cap, guarantee, dataset_id_given)
        if not self.path.exists():  # a refusal against an empty ledger creates nothing
            decide(None, None, [], False, False, *ask)
        now = _now()
        with self._transaction() as db:
            state = _state(db, dataset_id, release_id)
            reservation, change, local = decide(*(state + ask))
            if change is not None:
                _write_cap(db, dataset_id, state[1 if local else 0], *change, now, "local_caps" if local else "caps")
            db.executemany(
                "INSERT INTO spends (dataset_id, release_id, created, method, label, definition, epsilon, delta, rho,"
                " relation, theta, relation_value, guarantee, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                [
                    (
                        dataset_id,
                        release_id,
                        now,
                        method,
                        s.label,
                        s.budget.definition,
                        *_amounts(s.budget, stated_delta),
                        *relation_columns(relation),
                        guarantee,
                    )
                    for s in spends
                ],
            )
        return reservation

    def check(
        self,
        dataset_id: str,
        release_id: str,
        spends: Sequence[Spend],
        relation: Relation,
        *,
        cap: Budget | None = None,
        raise_cap: bool = False,
        guarantee: str = "dp",
        dataset_id_given: bool = True,
        cap_relation: Relation | None = None,
    ) -> Reservation:
        """What :meth:`reserve` would do now, without recording anything (nor creating the file):
        the reservation, or its refusal. A release whose cost is known only after it runs (a local
        guarantee) asks first with a zero spend, to be refused before it reads, and to learn the
        room its cap leaves; its :meth:`reserve` afterwards checks again, atomically.
        """
        ask = (dataset_id, release_id, list(spends), relation, cap, cap_relation, raise_cap, guarantee, dataset_id_given)
        with self._reading() as db:
            state = (None, None, [], False, False) if db is None else _state(db, dataset_id, release_id)
        return decide(*(state + ask))[0]

    def confirm(self, release_id: str) -> None:
        """Mark a reserved release as released (again: no change); :class:`DipsyError` if unknown."""
        with self._transaction(create=False) as db:
            db.execute("UPDATE spends SET status = 'released' WHERE release_id = ?", (release_id,))
            if not db.execute("SELECT 1 FROM spends WHERE release_id = ? LIMIT 1", (release_id,)).fetchone():
                raise DipsyError(f"no release {release_id!r} in the ledger {self.path}", "reserve it first")

    def cancel(self, release_id: str) -> int:
        """Delete a release's pending spends (only for a run that failed before anything was
        visible); released spends stay. Returns how many spends were deleted."""
        if not self.path.exists():
            return 0
        with self._transaction(create=False) as db:
            return db.execute("DELETE FROM spends WHERE release_id = ? AND status = 'pending'", (release_id,)).rowcount

    def set_cap(self, dataset_id: str, cap: Budget, relation: Relation, *, raise_cap: bool = False) -> None:
        """Set the data set's cap under ``relation`` without a release, by :meth:`reserve`'s rules (a
        :class:`~dipsy.privacy.budget.LocalDP` cap is its cap for local-guarantee releases)."""
        table = "local_caps" if isinstance(cap, LocalDP) else "caps"
        with self._transaction() as db:
            stored = _one(rows_of(db.execute(f"SELECT * FROM {table} WHERE dataset_id = ?", (dataset_id,))))
            change = cap_change(stored, cap, relation, relation, raise_cap, dataset_id)
            if change is not None:
                _write_cap(db, dataset_id, stored, *change, _now(), table)

    # -- the file -------------------------------------------------------------------------------

    def _cap_row(self, dataset_id: str, local: bool = False) -> dict | None:
        table = "local_caps" if local else "caps"
        with self._reading() as db:
            if db is None or not _has_table(db, table):
                return None
            return _one(rows_of(db.execute(f"SELECT * FROM {table} WHERE dataset_id = ?", (dataset_id,))))

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """A read-only connection (None when there is no file): reading never creates or migrates."""
        if not self.path.exists():
            yield None
            return
        with (
            self._errors(),
            closing(
                sqlite3.connect(self.path.absolute().as_uri() + "?mode=ro", uri=True, timeout=self.timeout, isolation_level=None)
            ) as db,
        ):
            db.row_factory = sqlite3.Row
            db.execute("BEGIN")  # one snapshot for every query of the block
            # an empty file (a first write that never committed) is an empty ledger; a foreign one is refused
            yield db if is_ledger(db, self.path) else None

    @contextmanager
    def _transaction(self, create: bool = True) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, committed if the block succeeds (schema migrated first)."""
        new = not self.path.exists()
        if new and not (create and self.create):
            raise DipsyError(f"no ledger at {self.path}", "check --ledger")
        if new:
            check_not_lost(self.path)  # a ledger dipsy created is never silently started afresh
        with self._errors():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)) as db:
                db.row_factory = sqlite3.Row
                db.execute("BEGIN IMMEDIATE")
                try:
                    is_ledger(db, self.path)
                    migrate(db)
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            if new:
                remember(self.path)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise DipsyError(
                    f"the budget ledger {self.path} is locked: another dipsy run held it for over {self.timeout:g} s",
                    "try again when that run has finished (a run holds the lock only to reserve or confirm, never while it synthesizes)",
                ) from None
            raise DipsyError(
                f"cannot use the budget ledger {str(self.path)!r} ({e})", "pass --ledger with a writable path"
            ) from None
        except sqlite3.DatabaseError as e:
            raise DipsyError(
                f"{self.path} is not a dipsy budget ledger ({e})",
                "pass --ledger with dipsy's budget ledger (a file dipsy created); a file that is not one is never written into",
            ) from None
        except (OSError, sqlite3.Error) as e:
            raise DipsyError(
                f"cannot open the budget ledger {str(self.path)!r} ({e})", "pass --ledger with a writable path"
            ) from None


def take_back(ledger: Ledger, release_id: str, error: BaseException) -> None:
    """Cancel the pending spends of a run that failed with ``error`` before anything of it became
    visible, with SIGINT and SIGTERM held so that a second interruption cannot tear the
    cancellation. If the ledger refuses, the spends stay pending (counted, which is safe) and
    ``error``, the failure being reported, gets a note saying so."""
    try:
        with held():
            ledger.cancel(release_id)
    except Exception as e:  # noqa: BLE001 - the run's own failure is the one to report
        error.add_note(f"its spend stays pending in the ledger {ledger.path} (release {release_id}): {e}")


def _state(db: sqlite3.Connection, dataset_id: str, release_id: str) -> tuple[dict | None, dict | None, list[dict], bool, bool]:
    """What :func:`decide` needs of the ledger: the data set's DP cap and local cap rows, its spends,
    whether any data set has a cap, and whether ``release_id`` is taken."""
    stored = _one(rows_of(db.execute("SELECT * FROM caps WHERE dataset_id = ?", (dataset_id,))))
    local = (
        _one(rows_of(db.execute("SELECT * FROM local_caps WHERE dataset_id = ?", (dataset_id,))))
        if _has_table(db, "local_caps")
        else None
    )
    earlier = rows_of(db.execute("SELECT * FROM spends WHERE dataset_id = ? ORDER BY id", (dataset_id,)))
    reused = db.execute("SELECT 1 FROM spends WHERE release_id = ? LIMIT 1", (release_id,)).fetchone() is not None
    return stored, local, earlier, _any_caps(db), reused


def _any_caps(db: sqlite3.Connection) -> bool:
    return any(
        _has_table(db, t) and db.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() is not None for t in ("caps", "local_caps")
    )


def _write_cap(
    db: sqlite3.Connection, dataset_id: str, stored, cap: Budget, relation: Relation, how: str, now: str, table: str = "caps"
) -> None:
    db.execute(
        f"INSERT OR REPLACE INTO {table} (dataset_id, definition, epsilon, delta, rho, set_at, relation, theta,"
        " relation_value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (dataset_id, cap.definition, *_amounts(cap), now, *relation_columns(relation)),
    )
    old = cap_json(budget_of(stored), relation_of(stored)) if stored else None
    db.execute(
        "INSERT INTO cap_changes (dataset_id, old, new, changed_at, how) VALUES (?, ?, ?, ?, ?)",
        (dataset_id, old, cap_json(cap, relation), now, how),
    )


def _amounts(b: Budget, stated_delta: float | None = None) -> tuple:
    d = b.to_dict()
    if b.definition == "zCDP":
        d["delta"] = stated_delta
    return tuple(d.get(k) for k in ("epsilon", "delta", "rho"))


def _one(rows: list[dict]) -> dict | None:
    return rows[0] if rows else None


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
