"""The domain's edit rules enforced on synthetic records and tables: rejection and redraw.

Every method's records are drawn by :meth:`~dipsy.methods.base.Model.draw_chunks` (and
:meth:`~dipsy.methods.base.Model.draw`), which hand each chunk of a set to
:meth:`Enforcement.records` when the released domain has rules (:mod:`dipsy.domain.rules`):

1. The chunk's records that lie in a forbidden cell of some rule are rejected.
2. Their places are filled from a fresh draw of the *same* set from the same fitted model
   (``Model.chunks(k)`` again: no new set is charged), as the model's rows may stand in for each
   other (:meth:`~dipsy.methods.base.Model.exchangeable`): by default with records chosen at random
   among the fresh draw's allowed ones *with the same cells of the if/then rules' conditions*
   (:attr:`Enforcement.conditions`: a rejected 10-year-old is replaced by an allowed 10-to-14-year-old,
   so the release keeps the model's age distribution; after :data:`RELAX_AFTER` fresh draws, any
   allowed record); for DPSyn, whose records are placed group by group (each group its noisy size),
   among those of the same group too; and for a model whose row ``i`` stands for the data's record
   ``i`` (rdt labelling the records' public columns, the pseudo-posterior with its predictors), row
   ``i`` gets row ``i`` of the fresh draw when it is allowed (*aligned*), so that what the row
   repeats is kept where it was.
3. Step 2 repeats until no rejected place is left, at most :data:`MAX_REDRAWS` times; it stops
   earlier, with a :class:`~dipsy.errors.DipsyError` naming the rule that rejects most, when
   fewer than :data:`MIN_ACCEPTANCE` of the records drawn are allowed.

A set keeps its number of rows. For records drawn i.i.d. from a distribution ``P`` (the marginal
methods' graphical models), with ``A`` the columns of the rules' conditions, the records released
are i.i.d. from ``P(A) · P(rest | A, allowed)``: the model's distribution of ``A`` is kept, and the
other columns are drawn given ``A`` within the allowed cells. (Conditioning all of ``P`` on the
allowed cells instead, as replacing by any allowed record does, moves the distribution of ``A``
where the model puts much mass in forbidden cells: on the ACS excerpt mst's releases had 10.6 %
under 15 where the original has 15.6 %, as a record under 15 must carry 'N' in five to eight
columns; benchmarks/survey_missing.py.) GUM's records, privsyn's and dpsyn's, are not i.i.d.: a
rejected one is replaced by an allowed record of another run of GUM on the same targets. For a
count method, whose set is its released counts, the rejected records are replaced by records
drawn from the set's allowed ones with the same conditions' cells.

The marginal methods also hold the rules' forbidden cells at 0 in their models, where the model
can hold them, so that fewer records reach this step: AIM in its estimation (structural zeros of
the graphical model, :func:`~dipsy.methods.marginals.estimation.estimate`), privsyn, dpsyn and mst
in their consistent marginals that hold a rule's columns (:func:`~dipsy.methods.marginals.marginal.held_at_zero`).
Enforcement here then checks every record all the same.

A released table (``--release table``) gets its forbidden cells set to zero (:meth:`Enforcement.table`);
its total is then the sum of the allowed cells.

Privacy
-------
Post-processing (Dwork & Roth 2014, Prop. 2.1). The fitted model holds only what the
measurements released (design rule 3); each fresh draw of set ``k`` is the function
``Model.chunks(k)`` of that set's measurements, public inputs and fresh randomness that the
release would have drawn anyway, and the rules are public (the domain). The records kept, the
number of redraws and the acceptance rate written to release.json are therefore functions of the
DP output, public input and randomness independent of the data: they have the guarantee of the
measurements, and set ``k`` still depends only on the measurements of set ``k`` (its per-set
guarantee is unchanged). Columns that a method repeats as they are (declared ``role: public``)
are public too. The guarantee is unchanged; so is the statement, but for the line that says the
rules were enforced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from ..domain import Domain
from ..domain.codec import encode_column
from ..domain.rules import Rule, RuleCells, breaks
from ..errors import DipsyError

#: A set is refused when fewer than this share of the records drawn for it are allowed: filling it
#: would take more than about 1/MIN_ACCEPTANCE fresh draws of the set, and a share that low says a
#: rule and the model disagree (a rule the data break too, a typing error in a rule).
MIN_ACCEPTANCE = 0.01
#: The most fresh draws of one chunk (each as large as the chunk): enough for every acceptance above
#: :data:`MIN_ACCEPTANCE` when rows stand in for each other (about ``(1 − p)/p`` draws, 99 at 1 %),
#: and for aligned rows each allowed at least one time in five (``0.8¹⁰⁰ × 10⁶ ≈ 2·10⁻⁴`` of a
#: million rows left after 100 draws).
MAX_REDRAWS = 100
#: Fresh draws after which a hole takes an allowed record of any cell of the rules' conditions
#: (:attr:`Enforcement.conditions`; still of its own group): the few holes left in cells whose
#: records the model seldom allows would otherwise call for many fresh draws (a privsyn set on the
#: ACS excerpt: 21 runs of GUM, 391 s, with 20; 1 run without matching).
RELAX_AFTER = 3
#: Records drawn before :data:`MIN_ACCEPTANCE` is judged (fewer say too little of the rate).
MIN_JUDGED = 1000
#: What enforcement does, for release.json and the statement.
HOW_RECORDS = (
    "post-processing: each synthetic record in a forbidden cell of an edit rule was rejected and its place filled "
    "from fresh draws of the same set from the same fitted model, by an allowed record with the same values of the "
    "rules' conditions where one was drawn (no new measurement, no further privacy cost; Dwork & Roth 2014, Prop. 2.1)"
)
HOW_TABLE = (
    "post-processing: every cell that an edit rule forbids was set to 0 in the released table (its total is the "
    "sum of the allowed cells; no further privacy cost, Dwork & Roth 2014, Prop. 2.1)"
)

Chunk: TypeAlias = dict[str, np.ndarray] | pd.DataFrame


@dataclass
class SetTally:
    """What enforcement did to one set: records examined (drawn and checked), allowed, rejected
    per rule, and fresh draws made."""

    examined: int = 0
    allowed: int = 0
    redraws: int = 0
    broken: dict[str, int] = field(default_factory=dict)

    def add(self, by_rule: np.ndarray, names: Sequence[str]) -> None:
        self.examined += by_rule.shape[1]
        self.allowed += int((~by_rule.any(axis=0)).sum())
        for name, count in zip(names, by_rule.sum(axis=1).tolist()):
            self.broken[name] = self.broken.get(name, 0) + int(count)

    @property
    def acceptance(self) -> float | None:
        return self.allowed / self.examined if self.examined else None


class Enforcement:
    """The released domain's rules, enforced on each set drawn; what it did, for release.json.

    Parameters
    ----------
    domain
        The released columns' domain (its rules are the ones enforced).
    dropped
        The rules of the full domain that name a column not released, with those columns
        (:meth:`Domain.dropped_rules`): not enforced, and said so.
    fixed
        Columns the method repeats as they are (public): a rule on these alone cannot be met by
        redrawing.

    >>> d = Domain.from_dict({"columns": {"a": {"kind": "integer", "lower": 0, "upper": 1}},
    ...     "rules": [{"name": "no ones", "forbidden": {"columns": ["a"], "combinations": [[1]]}}]})
    >>> e = Enforcement(d)
    >>> out = list(e.records(lambda: iter([{"a": np.array([0, 1, 0, 1])}]), np.random.default_rng(0)))
    >>> out[0]["a"].tolist(), e.to_dict()["records"]["examined"] >= 4
    ([0, 0, 0, 0], True)
    """

    def __init__(self, domain: Domain, dropped: Sequence[tuple[Rule, tuple[str, ...]]] = (), fixed: Sequence[str] = ()) -> None:
        self.domain = domain
        self.cells: tuple[RuleCells, ...] = domain.rule_cells
        self.dropped = tuple(dropped)
        self.fixed = tuple(fixed)
        self.columns = tuple(dict.fromkeys(c for r in self.cells for c in r.columns))
        #: The columns of the if/then rules' conditions: a rejected record is replaced by one with the
        #: same cells of these (its age, when a rule says what the under-15s must carry).
        self.conditions = tuple(dict.fromkeys(c for r in domain.rules if r.kind == "if" for c, _ in r.when))
        self.sets: list[SetTally] = []
        self.zeroed: list[float] = []

    def __bool__(self) -> bool:
        return bool(self.cells)

    # -- records --------------------------------------------------------------------------------

    def records(
        self, fresh: Callable[[], Iterator[Chunk]], rng: np.random.Generator, within: tuple[str, ...] | None = ()
    ) -> Iterator[Chunk]:
        """One set's chunks from ``fresh()`` (each call a fresh draw of the set, in chunks), with every
        record in a forbidden cell replaced as the module's docstring says: by an allowed record of a
        fresh draw with the same values of the columns ``within`` (``()``: any allowed record), or,
        with ``within=None``, by the fresh draw's record in the same place (rows aligned)."""
        tally = SetTally()
        self.sets.append(tally)
        for c, chunk in enumerate(fresh()):
            yield self._fix(chunk, c, fresh, rng, within, tally, len(self.sets))

    def _keys(self, chunk: Chunk, names: Sequence[str]) -> list[np.ndarray]:
        """The cell codes of ``names`` in ``chunk`` (records a model decoded itself are encoded: a
        value inside a bin matches the bin, not the value)."""
        if isinstance(chunk, pd.DataFrame):
            return [encode_column(chunk[n].reset_index(drop=True), self.domain[n]).codes for n in names]
        return [np.asarray(chunk[n]) for n in names]

    def _fix(
        self,
        chunk: Chunk,
        c: int,
        fresh: Callable[[], Iterator[Chunk]],
        rng: np.random.Generator,
        within: tuple[str, ...] | None,
        tally: SetTally,
        k: int,
    ) -> Chunk:
        by_rule = self._breaks(chunk)
        tally.add(by_rule, self._names)
        holes = np.flatnonzero(by_rule.any(axis=0))
        if not holes.size:
            return chunk
        self._refuse_fixed(by_rule, k)
        columns = {n: np.array(_column(chunk, n), copy=True) for n in _names(chunk)}
        aligned = within is None
        kind = () if aligned else tuple(dict.fromkeys((*(within or ()), *self.conditions)))  # ``within`` first
        keys = self._keys(chunk, kind)
        for attempt in range(MAX_REDRAWS):
            if attempt == RELAX_AFTER and not aligned:  # a cell of the conditions the model seldom allows
                kind, keys = kind[: len(within or ())], keys[: len(within or ())]
            self._judge(tally, k)
            tally.redraws += 1
            # Aligned rows: the fresh draw's chunk in the same place; else its first chunk (a count
            # method's chunks are exchangeable, and the first is as large as any).
            source = next(islice(fresh(), c, c + 1), None) if aligned else next(iter(fresh()), None)
            if source is None or _rows(source) == 0:
                continue
            found = self._breaks(source)
            ok = np.asarray(~found.any(axis=0), dtype=bool)
            if aligned:
                places = holes[holes < ok.size]
                tally.add(found[:, places], self._names)
                take = source_rows = places[ok[places]]
            else:
                tally.add(found, self._names)
                allowed = np.flatnonzero(ok)
                offered = [key[allowed] for key in self._keys(source, kind)]
                take, source_rows = _matched(holes, [key[holes] for key in keys], allowed, offered, rng)
            holes = np.setdiff1d(holes, take, assume_unique=True)
            for n, values in columns.items():
                values[take] = np.asarray(_column(source, n))[source_rows]
            if not holes.size:
                return _rebuilt(chunk, columns)
        worst = max(tally.broken, key=lambda r: tally.broken[r])
        raise DipsyError(
            f"after {MAX_REDRAWS} fresh draws, {holes.size:,} record(s) of set {k} still break the edit rules (most "
            f"often {worst!r}: {tally.broken[worst]:,} of the {tally.examined:,} records drawn)"
            + (
                f"; rows whose columns released as they are ({', '.join(self.fixed)}) admit almost no allowed record"
                if aligned and self.fixed
                else ""
            ),
            f"check the rule {worst!r} against the data (dipsy evaluate counts its breaks in the original) and the "
            "method's options; or remove the rule",
        )

    def _judge(self, tally: SetTally, k: int) -> None:
        """Refuse a set whose records are almost all rejected (rather than draw on and on)."""
        rate = tally.acceptance
        if rate is None or tally.examined < MIN_JUDGED or rate >= MIN_ACCEPTANCE:
            return
        worst = max(tally.broken, key=lambda r: tally.broken[r])
        raise DipsyError(
            f"only {rate:.2%} of the {tally.examined:,} records drawn for set {k} meet the edit rules, fewer than the "
            f"{MIN_ACCEPTANCE:.0%} enforcement needs to fill the set by drawing again; the rule {worst!r} rejects most "
            f"({tally.broken[worst] / tally.examined:.1%} of the records drawn break it)",
            f"check the rule {worst!r} (dipsy domain check lists the rules; dipsy evaluate counts their breaks in the "
            "original): a rule the data break too, or one that forbids what the model puts most of its records in, "
            "cannot be enforced by redrawing; fix or remove it, or give the method more budget",
        )

    def _refuse_fixed(self, by_rule: np.ndarray, k: int) -> None:
        """A rule on columns the method repeats as they are: their values cannot be redrawn."""
        for cells, row in zip(self.cells, by_rule):
            if self.fixed and set(cells.columns) <= set(self.fixed) and row.any():
                raise DipsyError(
                    f"{int(row.sum()):,} record(s) of set {k} break the rule {cells.name!r}, whose columns "
                    f"({', '.join(cells.columns)}) the method releases as they are (declared public): no redraw changes them",
                    f"check those columns against the rule (dipsy evaluate counts its breaks in the original); fix the "
                    f"data or the rule, or synthesize one of {', '.join(cells.columns)}",
                )

    @property
    def _names(self) -> list[str]:
        return [c.name for c in self.cells]

    def _breaks(self, chunk: Chunk) -> np.ndarray:
        """(rules × records): which record lies in a forbidden cell of which rule."""
        return breaks(self.cells, dict(zip(self.columns, self._keys(chunk, self.columns))), _rows(chunk))

    # -- tables ---------------------------------------------------------------------------------

    def table(self, counts: np.ndarray) -> np.ndarray:
        """A released table (flat, C order over the domain's columns) with every forbidden cell set to 0."""
        shape = self.domain.shape()
        out = np.array(counts, copy=True).reshape(shape)
        removed = 0.0
        for cells in self.cells:
            mask = np.broadcast_to(cells.mask(self.domain.names), shape)
            removed += float(out[mask].sum())
            out[mask] = 0
        self.zeroed.append(removed)
        return out.reshape(-1)

    def forbidden_cells(self) -> int:
        """How many cells of the full cross-tabulation some rule forbids (from the domain alone)."""
        shape = self.domain.shape()
        total = np.zeros(shape, dtype=bool)
        for cells in self.cells:
            total |= np.broadcast_to(cells.mask(self.domain.names), shape)
        return int(total.sum())

    # -- the record of it -----------------------------------------------------------------------

    def statement_line(self, kind: str) -> str | None:
        """The statement's line under ``transformations`` (None without rules)."""
        if not self.cells:
            return None
        count = len(self.cells)
        what = (
            "forbidden cells of the released table set to 0"
            if kind == "table"
            else "synthetic records in a forbidden cell rejected and drawn again from the same fitted model"
        )
        return (
            f"{count} edit rule(s) declared in the domain (listed under 'rules'): {what}, after synthesis; "
            "post-processing of the DP output with public input (Dwork & Roth 2014, Prop. 2.1), so the guarantee is unchanged"
        )

    def to_dict(self, kind: str = "records") -> dict[str, Any]:
        """The release.json entry ``rules``: the rules enforced and how, those not enforced (a
        column not released), and what enforcement did (records: how many were drawn, allowed,
        broke each rule, and the fresh draws per set; a table: the cells set to 0 and the sum of
        their released counts). Functions of the DP output and the public domain only."""
        out: dict[str, Any] = {
            "enforced": [
                {"name": c.name, "rule": c.rule.text(), "columns": list(c.columns), "forbidden_cells": int(c.forbidden.sum())}
                for c in self.cells
            ],
            "not_enforced": [
                {
                    "name": rule.name,
                    "rule": rule.text(),
                    "why": f"its column(s) {', '.join(left)} are not released, so the release neither keeps nor breaks it",
                }
                for rule, left in self.dropped
            ],
        }
        if not self.cells:
            return out
        if kind == "table":
            out["how"] = HOW_TABLE
            out["table"] = {"forbidden_cells": self.forbidden_cells(), "count_set_to_zero_per_set": list(self.zeroed)}
            return out
        out["how"] = HOW_RECORDS
        examined = sum(t.examined for t in self.sets)
        allowed = sum(t.allowed for t in self.sets)
        out["records"] = {
            "examined": examined,
            "allowed": allowed,
            "acceptance_rate": allowed / examined if examined else None,
            "acceptance_rate_per_set": [t.acceptance for t in self.sets],
            "fresh_draws_per_set": [t.redraws for t in self.sets],
            "broken_per_rule": {c.name: sum(t.broken.get(c.name, 0) for t in self.sets) for c in self.cells},
            "note": (
                "counts over every record drawn and checked, the first draw and the fresh draws: what the fitted model "
                "put in forbidden cells before enforcement (none of them is in the release)"
            ),
        }
        return out


def _matched(
    holes: np.ndarray, wanted: Sequence[np.ndarray], allowed: np.ndarray, offered: Sequence[np.ndarray], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Which holes get which allowed rows of a fresh draw: rows chosen at random among those whose
    cells (``offered``, one array per column, aligned with ``allowed``) equal the hole's (``wanted``,
    aligned with ``holes``), as many as there are; any allowed row when no column is matched.
    Returns (holes filled, their source rows)."""
    order = rng.permutation(allowed.size)
    allowed, offered = allowed[order], [o[order] for o in offered]
    if not wanted:
        n = min(holes.size, allowed.size)
        return holes[:n], allowed[:n]
    keys = pd.MultiIndex.from_arrays([np.concatenate([a, b]) for a, b in zip(wanted, offered)]).factorize()[0]
    hole_keys, row_keys = keys[: holes.size], keys[holes.size :]
    filled, rows = [], []
    for key in np.unique(hole_keys):  # one pass per cell of the matched columns, not per record
        wanting, candidates = holes[hole_keys == key], allowed[row_keys == key]
        n = min(wanting.size, candidates.size)
        filled.append(wanting[:n])
        rows.append(candidates[:n])
    return np.concatenate(filled), np.concatenate(rows)


def _names(chunk: Chunk) -> list[str]:
    return list(chunk.columns) if isinstance(chunk, pd.DataFrame) else list(chunk)


def _column(chunk: Chunk, name: str) -> np.ndarray:
    return chunk[name].to_numpy() if isinstance(chunk, pd.DataFrame) else np.asarray(chunk[name])


def _rows(chunk: Chunk) -> int:
    if isinstance(chunk, pd.DataFrame):
        return len(chunk)
    return len(next(iter(chunk.values()))) if chunk else 0


def _rebuilt(chunk: Chunk, columns: dict[str, np.ndarray]) -> Chunk:
    """The chunk with its columns replaced (a DataFrame keeps its column order and index)."""
    if isinstance(chunk, pd.DataFrame):
        return pd.DataFrame(columns, columns=chunk.columns, index=chunk.index)
    return columns


__all__ = ["Enforcement", "MAX_REDRAWS", "MIN_ACCEPTANCE", "SetTally"]
