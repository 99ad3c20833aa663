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
import pandas as pd

from ..domain import Domain
from ..engine import Engine
from ..errors import DipsyError
from ..privacy import Budget, Spend
from ..privacy.composition import statement_epsilon
from ..privacy.rng import Randomness

#: Neighbouring relations, worded as they appear in release.json.
SUBSTITUTE = "substitute one record: neighbouring data sets have the same number of rows n and differ in the values of one row"
ADD_REMOVE = "add/remove one record: neighbouring data sets differ by the presence of one row"
#: Their names on the command line and in the API.
NEIGHBOURINGS = {"substitute": SUBSTITUTE, "add-remove": ADD_REMOVE}


def individual_relation(theta: int) -> str:
    """The neighbouring relation's wording for individuals owning up to θ records."""
    if theta == 1:
        return ADD_REMOVE
    return (f"add/remove one individual: neighbouring data sets differ by all the rows of one individual, "
            f"who owns at most θ = {theta} rows")


@dataclass(frozen=True)
class Option:
    """A method option: ``--option name=value`` on the command line, ``options={name: value}`` in Python."""

    name: str
    parse: Callable[[Any], Any]
    help: str


def whole(name: str, least: int, example: int | None = None) -> Callable[[Any], int]:
    """A parser for an option that is a whole number >= ``least``.

    >>> whole("k", 1)("12")
    12
    """
    def parse(value: Any) -> int:
        try:
            k = int(str(value).strip()) if not isinstance(value, (bool, float)) else None
        except ValueError:
            k = None
        if k is None or k < least:
            raise DipsyError(f"option {name} must be a whole number >= {least}, got {value!r}",
                             f"e.g. {name}={example if example is not None else max(least, 10)}")
        return k

    return parse


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
    #: For a zCDP statement: the δ at which it is also stated as (ε, δ)-DP (None: ρ only).
    delta: float | None = None

    def equivalent(self) -> tuple[float, float] | None:
        """(ε, δ) implied by a zCDP total at :attr:`delta` (Canonne, Kamath & Steinke 2020)."""
        if self.definition != "zCDP" or self.delta is None:
            return None
        return statement_epsilon(self.total.rho, self.delta), self.delta

    def to_dict(self) -> dict[str, Any]:
        amounts = {k: v for k, v in self.total.to_dict().items() if k != "definition"}
        per_set = {k: v for k, v in self.per_set.to_dict().items() if k != "definition"}
        equivalent = self.equivalent()
        if equivalent is not None:
            amounts |= {"epsilon": equivalent[0], "delta": equivalent[1]}
        return {
            "definition": self.definition,
            **{f"{k}_total": v for k, v in amounts.items()},
            **{f"{k}_per_set": v for k, v in per_set.items()},
            "sets": self.sets,
            "neighbouring": self.neighbouring,
            "public": list(self.public),
            "mechanism": self.mechanism,
            "composition": self.composition,
            **({"conversion": "ρ-zCDP stated as (ε, δ)-DP by Canonne, Kamath & Steinke 2020, §2.3"} if equivalent else {}),
        }


@dataclass(frozen=True)
class Plan:
    """What a run will spend and the public parameters it will use, fixed before data are read."""

    statement: Statement
    spends: tuple[Spend, ...]
    parameters: Mapping[str, Any] = field(default_factory=dict)


#: Told of a long step: what it is, how far it got, out of how many (0: no count).
Reporter = Callable[[str, int, int], None]


class Model(ABC):
    """A fitted model. Private: it may hold exact statistics; never written to disk."""

    #: Set by the caller to hear of long steps inside :meth:`sample` (a progress display).
    reporter: Reporter | None = None

    def report(self, what: str, done: int = 0, total: int = 0) -> None:
        if self.reporter is not None:
            self.reporter(what, done, total)

    @abstractmethod
    def sample(self, rand: Randomness) -> "dict[str, np.ndarray] | pd.DataFrame":
        """One synthetic set: codes per column (decoded by the caller), or records in a DataFrame
        (for methods that draw values, not cells) with the domain's columns in order."""


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
    #: What the method can release: "records" (microdata) and, for count methods, "table".
    releases: ClassVar[tuple[str, ...]] = ("records",)
    #: Whether m > 1 sets are allowed (a single-release method fixes its parameters once).
    multiple_sets: ClassVar[bool] = True
    #: The neighbouring relations the method can be private under; the first is the default.
    neighbourings: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        budget: Budget,
        sets: int = 1,
        options: Mapping[str, Any] | None = None,
        neighbouring: str | None = None,
        release: str = "records",
    ) -> None:
        if budget.definition != self.definition:
            raise DipsyError(
                f"{self.name} gives {self.definition} guarantees, not {budget.definition}",
                "give the budget as the method's definition asks (see 'dipsy methods')",
            )
        if isinstance(sets, bool) or not isinstance(sets, int) or sets < 1:
            raise DipsyError(f"sets must be a whole number >= 1, got {sets!r}", "pass --sets with e.g. 1 or 5")
        if sets > 1 and not self.multiple_sets:
            raise DipsyError(f"{self.name} releases a single set, not {sets}", "leave out --sets (see 'dipsy methods')")
        if release not in self.releases:
            raise DipsyError(f"{self.name} cannot release a {release!r}", f"use --release {' or '.join(self.releases)}")
        if neighbouring is not None:
            relation = NEIGHBOURINGS.get(neighbouring)
            if relation is None:
                raise DipsyError(f"unknown neighbouring relation {neighbouring!r}", f"use one of {', '.join(NEIGHBOURINGS)}")
            if relation not in (self.neighbourings or (self.neighbouring,)):
                names = [k for k, v in NEIGHBOURINGS.items() if v in (self.neighbourings or (self.neighbouring,))]
                raise DipsyError(f"{self.name} is private under {' or '.join(names)} neighbours only", f"pass --neighbouring {names[0]} or leave it out")
            self.neighbouring = relation
        self.budget = budget
        self.sets = sets
        self.release = release
        self.settings = self._parse_options(options or {})

    @classmethod
    def _parse_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        known = {o.name: o for o in cls.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            choices = ", ".join(known) if known else "none"
            raise DipsyError(f"{cls.name} has no option {unknown[0]!r}", f"its options are: {choices}")
        return {name: known[name].parse(value) for name, value in given.items()}

    @staticmethod
    def require_rows(n: int) -> None:
        """A method that learns from the data needs at least one valid row."""
        if n < 1:
            raise DipsyError("the data have no valid rows to synthesize from", "check the data against the domain")

    def at_least(self, option: str, least: float, formula: str) -> float:
        """The option's value, which may raise the least private value ``least``, never lower it."""
        value = self.settings.get(option, least)
        if value < least:
            raise DipsyError(f"option {option}={value:g} is below {formula} = {least:.6g}, which ε-DP needs",
                             f"raise {option} or leave it out")
        return value

    def statement(self, n: int, mechanism: str, public: tuple[str, ...] | None = None) -> Statement:
        """The statement of a release whose m sets each spend budget/m (sequential composition)."""
        return Statement(
            definition=self.definition,
            total=self.budget,
            per_set=self.budget.scaled(1 / self.sets),
            sets=self.sets,
            neighbouring=self.neighbouring,
            public=public or (f"n = {n} (the number of rows)", "the domain (categories, bounds and bins of the released columns)"),
            mechanism=mechanism,
            composition=f"sequential composition over {self.sets} sets, each from its own draw" if self.sets > 1 else "one set",
        )

    def equal_spends(self, what: str) -> tuple[Spend, ...]:
        """One spend of budget/m per set, labelled with what each set pays for."""
        per_set = self.budget.scaled(1 / self.sets)
        return tuple(Spend(f"{self.name}: set {k} of {self.sets} ({what})", per_set) for k in range(1, self.sets + 1))

    @abstractmethod
    def plan(self, n: int, domain: Domain) -> Plan:
        """The guarantee, the spends and the public parameters for ``n`` rows over ``domain``."""

    @abstractmethod
    def fit(self, engine: Engine, plan: Plan) -> Model:
        """Read the data (through ``engine`` only) and return the private model."""
