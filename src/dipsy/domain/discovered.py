"""What a domain says of the values a DP measurement of the confidential data gave it.

``dipsy domain discover`` (:mod:`dipsy.methods.discovery`) fills some of a skeleton's category lists
and bins by a differentially private measurement charged to the data set's ledger, and writes a
top-level ``discovered:`` block into the domain file::

    discovered:
      release_id: 5f0c…            # the discovery's id in the ledger
      dataset_id: ce
      ledger: ledger.sqlite         # the ledger's file name (never the operator's folder)
      seed: null                    # a number: a seeded test discovery, not private
      dipsy_version: 0.1.0
      date: '2026-01-31T12:00:00+00:00'
      columns:
        Race: {field: categories, definition: approximate-DP, epsilon: 0.5, delta: 5.0e-07,
               relation: add-remove, theta: 1, mechanism: '…'}
        Income: {field: bins, definition: pure-DP, epsilon: 0.5, delta: 0.0, relation: add-remove,
                 theta: 1, mechanism: '…'}

:class:`Discovery` is that block as a small frozen value kept on the :class:`~dipsy.domain.Domain`
(``Domain.discovered``). A release that uses such a domain states it in its statement's ``public``
list (:meth:`Discovery.statement`, added by :meth:`dipsy.methods.base.Synthesizer.public`): the
release's own guarantee does not include the discovery's cost; the data set's ledger total does.

A seeded discovery (a test, like a seeded release) is *marked*, not refused: its values are not
private, and every release that uses the domain says so first in its ``public`` list, in capitals
("NOT PRIVATE"). The release's own statement cannot say "not private" from here (its seed is the
release's own), so the steward must not publish it; ``dipsy domain discover --seed`` says the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import DomainError

#: What a discovery fills: a categorical (ordinal) column's categories, an integer or numeric column's bins.
FIELDS = ("categories", "bins")
DEFINITIONS = ("pure-DP", "approximate-DP")
RELATIONS = ("add-remove", "substitute")
_BLOCK = ("release_id", "dataset_id", "ledger", "seed", "dipsy_version", "date", "columns")
_COLUMN = ("field", "definition", "epsilon", "delta", "relation", "theta", "mechanism")


@dataclass(frozen=True)
class DiscoveredColumn:
    """One discovered field: which column and field, its cost (definition, ε, δ) and relation, how.

    >>> DiscoveredColumn("Race", "categories", "approximate-DP", 0.5, 1e-7, "add-remove", 1, "…").cost()
    '(ε, δ) = (0.5, 1e-07)'
    """

    column: str
    field: str
    definition: str
    epsilon: float
    delta: float
    relation: str
    theta: int
    mechanism: str

    def cost(self) -> str:
        return f"ε = {self.epsilon:g}" if self.definition == "pure-DP" else f"(ε, δ) = ({self.epsilon:g}, {self.delta:g})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "definition": self.definition,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "relation": self.relation,
            "theta": self.theta,
            "mechanism": self.mechanism,
        }

    @classmethod
    def from_dict(cls, column: str, spec: Any) -> DiscoveredColumn:
        where = f"the discovered block's column {column!r}"
        if not isinstance(spec, Mapping) or set(spec) != set(_COLUMN):
            raise DomainError(f"{where} is not a mapping of {', '.join(_COLUMN)}", _REWRITE)
        if spec["field"] not in FIELDS or spec["definition"] not in DEFINITIONS or spec["relation"] not in RELATIONS:
            raise DomainError(
                f"{where} has field {spec['field']!r}, definition {spec['definition']!r}, relation {spec['relation']!r}",
                f"use a field of {FIELDS}, a definition of {DEFINITIONS}, a relation of {RELATIONS}",
            )
        amounts = [spec["epsilon"], spec["delta"]]
        if (
            any(isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x < float("inf") for x in amounts)
            or not spec["delta"] < 1
            or isinstance(spec["theta"], bool)
            or not isinstance(spec["theta"], int)
            or spec["theta"] < 1
        ):
            raise DomainError(f"{where} has a cost that is not ε >= 0, 0 <= δ < 1, θ >= 1", _REWRITE)
        return cls(
            column,
            spec["field"],
            spec["definition"],
            float(spec["epsilon"]),
            float(spec["delta"]),
            spec["relation"],
            spec["theta"],
            str(spec["mechanism"]),
        )


_REWRITE = "write the block as 'dipsy domain discover' does, or remove it with the values it discovered"


@dataclass(frozen=True)
class Discovery:
    """The ``discovered:`` block of a domain: the DP discovery that released some of its values.

    >>> d = Discovery("r1", "ce", "ledger.sqlite", None, "0.1.0", "2026-01-01",
    ...               (DiscoveredColumn("Race", "categories", "approximate-DP", 0.5, 1e-7, "add-remove", 1, "…"),))
    >>> d.statement().split(", released")[0]
    'the categories of Race'
    >>> d.project(["Income"]) is None
    True
    """

    release_id: str
    dataset_id: str
    ledger: str | None
    seed: int | None
    dipsy_version: str
    date: str
    columns: tuple[DiscoveredColumn, ...]

    @property
    def seeded(self) -> bool:
        """A seeded discovery is a test: its noise can be regenerated, so its values are not private."""
        return self.seed is not None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.columns)

    def project(self, names: Iterable[str]) -> Discovery | None:
        """The block for the columns ``names`` keeps (None when it discovered none of them)."""
        keep = set(names)
        columns = tuple(c for c in self.columns if c.column in keep)
        if not columns:
            return None
        return Discovery(self.release_id, self.dataset_id, self.ledger, self.seed, self.dipsy_version, self.date, columns)

    def cost(self) -> str:
        """The composed cost of the listed columns, per relation (basic composition: ε's and δ's add,
        Dwork & Roth 2014, Thm 3.16)."""
        parts = []
        for relation in dict.fromkeys((c.relation, c.theta) for c in self.columns):
            cols = [c for c in self.columns if (c.relation, c.theta) == relation]
            eps, delta = sum(c.epsilon for c in cols), sum(c.delta for c in cols)
            amount = f"ε = {eps:g}" if delta == 0 else f"(ε, δ) = ({eps:g}, {delta:g})"
            unit = "one record" if relation[1] == 1 else f"one individual of at most {relation[1]} rows"
            parts.append(f"{amount} under {'add/remove' if relation[0] == 'add-remove' else 'substitution of'} {unit}")
        return "; ".join(parts)

    def what(self) -> str:
        """What was discovered, in words: ``the categories of A and B and the bins of C``."""
        fields = []
        for field in FIELDS:
            cols = [c.column for c in self.columns if c.field == field]
            if cols:
                fields.append(f"the {field} of {_listed(cols)}")
        return " and ".join(fields)

    def statement(self) -> str:
        """The sentence a release using this domain puts in its statement's ``public`` list."""
        what = self.what()
        where = (
            f"recorded in the ledger {self.ledger} of data set {self.dataset_id!r}"
            if self.ledger
            else f"recorded in no ledger: add it to data set {self.dataset_id!r}'s total yourself"
        )
        if self.seeded:
            return (
                f"NOT PRIVATE: {what}, released by a seeded test discovery {self.release_id} (seed {self.seed}): its "
                "noise can be regenerated from the seed, so these values are not differentially private, and neither "
                f"is a release that shows them; never publish it ({self.cost()}, stated but not counted; {where} as a test)"
            )
        return (
            f"{what}, released by DP discovery {self.release_id} ({self.cost()}; {where}); this release's guarantee "
            "does not include that cost, the data set's ledger total does"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "release_id": self.release_id,
            "dataset_id": self.dataset_id,
            "ledger": self.ledger,
            "seed": self.seed,
            "dipsy_version": self.dipsy_version,
            "date": self.date,
            "columns": {c.column: c.to_dict() for c in self.columns},
        }

    @classmethod
    def from_dict(cls, spec: Any) -> Discovery:
        if not isinstance(spec, Mapping) or set(spec) != set(_BLOCK):
            raise DomainError(f"the domain's 'discovered:' block is not a mapping of {', '.join(_BLOCK)}", _REWRITE)
        columns = spec["columns"]
        if not isinstance(columns, Mapping) or not columns:
            raise DomainError("the domain's 'discovered:' block lists no columns", _REWRITE)
        seed = spec["seed"]
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise DomainError(f"the domain's 'discovered:' block has seed {seed!r}", "give a whole number, or null")
        text = {k: spec[k] for k in ("release_id", "dataset_id", "dipsy_version", "date")}
        if not all(isinstance(v, str) and v for v in text.values()) or not (
            spec["ledger"] is None or isinstance(spec["ledger"], str)
        ):
            raise DomainError(
                "the domain's 'discovered:' block has an empty or non-text release_id, dataset_id, dipsy_version, date or ledger",
                _REWRITE,
            )
        return cls(
            text["release_id"],
            text["dataset_id"],
            spec["ledger"],
            seed,
            text["dipsy_version"],
            text["date"],
            tuple(DiscoveredColumn.from_dict(str(n), s) for n, s in columns.items()),
        )


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
