"""What every synthesis method declares and does.

A method is configured with its budget and options and, before it touches any data, states its
privacy guarantee: the definition, the neighbouring relation, what it treats as public, and what
each step will spend (the OpenDP habit: the privacy map comes first). Only then does it read the
data through an engine (``fit``), and the fitted model — private, it may hold exact counts — draws
synthetic sets (``sample``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from ..domain import Domain
from ..engine import Engine
from ..errors import DipsyError
from ..privacy import Budget, Spend

#: Neighbouring relations, worded as they appear in release.json.
SUBSTITUTE = "substitute one record: neighbouring data sets have the same number of rows n and differ in the values of one row"
ADD_REMOVE = "add/remove one record: neighbouring data sets differ by the presence of one row"


@dataclass(frozen=True)
class Option:
    """A method option: ``--option name=value`` on the command line, ``options={name: value}`` in Python."""

    name: str
    parse: Callable[[Any], Any]
    help: str


@dataclass(frozen=True)
class Statement:
    """The exact privacy guarantee of a release, as written to release.json."""

    definition: str
    total: Budget
    per_set: Budget
    sets: int
    neighbouring: str
    public: tuple[str, ...]
    mechanism: str
    composition: str

    def to_dict(self) -> dict[str, Any]:
        amounts = {k: v for k, v in self.total.to_dict().items() if k != "definition"}
        per_set = {k: v for k, v in self.per_set.to_dict().items() if k != "definition"}
        return {
            "definition": self.definition,
            **{f"{k}_total": v for k, v in amounts.items()},
            **{f"{k}_per_set": v for k, v in per_set.items()},
            "sets": self.sets,
            "neighbouring": self.neighbouring,
            "public": list(self.public),
            "mechanism": self.mechanism,
            "composition": self.composition,
        }


@dataclass(frozen=True)
class Plan:
    """What a run will spend and the public parameters it will use, fixed before data are read."""

    statement: Statement
    spends: tuple[Spend, ...]
    parameters: Mapping[str, Any] = field(default_factory=dict)


class Model(ABC):
    """A fitted model. Private: it may hold exact statistics; never written to disk."""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """One synthetic set, as codes per column (decoded by the caller)."""


class Synthesizer(ABC):
    """A synthesis method: declare (``plan``), then read (``fit``), then draw (``Model.sample``).

    Subclasses set ``name``, ``summary``, ``definition``, ``neighbouring`` and ``options``, and
    implement :meth:`plan` and :meth:`fit`.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    definition: ClassVar[str]
    neighbouring: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, budget: Budget, sets: int = 1, options: Mapping[str, Any] | None = None) -> None:
        if budget.definition != self.definition:
            raise DipsyError(
                f"{self.name} gives {self.definition} guarantees, not {budget.definition}",
                "give the budget as the method's definition asks (see 'dipsy methods')",
            )
        if isinstance(sets, bool) or not isinstance(sets, int) or sets < 1:
            raise DipsyError(f"sets must be a whole number >= 1, got {sets!r}", "pass --sets with e.g. 1 or 5")
        self.budget = budget
        self.sets = sets
        self.settings = self._parse_options(options or {})

    @classmethod
    def _parse_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        known = {o.name: o for o in cls.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            choices = ", ".join(known) if known else "none"
            raise DipsyError(f"{cls.name} has no option {unknown[0]!r}", f"its options are: {choices}")
        return {name: known[name].parse(value) for name, value in given.items()}

    @abstractmethod
    def plan(self, n: int, domain: Domain) -> Plan:
        """The guarantee, the spends and the public parameters for ``n`` rows over ``domain``."""

    @abstractmethod
    def fit(self, engine: Engine, plan: Plan) -> Model:
        """Read the data (through ``engine`` only) and return the private model."""
