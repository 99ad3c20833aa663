"""What every synthesis method declares and does: the privacy core's shape (DESIGN.md).

A method is configured with its budget, options and neighbouring relation. ``plan`` then states,
from public inputs only, every measurement it will make (query + noise + relation + cost: see
:mod:`dipsy.privacy.measurement`) — or, for an adaptive method, the total it may spend step by
step (a privacy filter). ``fit`` gets a :class:`~dipsy.privacy.session.Session`, never the engine:
it reads and spends in one phase, each read a charged measurement, and returns a :class:`Model`
that holds only what the measurements released. ``Model.draw`` is pure post-processing, and it
draws exactly the sets that were charged. The statement is computed from the measurements that
ran (:func:`build_statement`), never written beside them.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..domain import Domain
from ..errors import DipsyError, PrivacyError
from ..privacy import Budget, Spend
from ..privacy.budget import ZCDP, of_kind
from ..privacy.composition import statement_epsilon, total_as
from ..privacy.measurement import Measurement
from ..privacy.relation import ADD_REMOVE, SUBSTITUTE, Relation
from ..privacy.relation import parse as parse_relation
from ..privacy.rng import Randomness
from ..privacy.session import Session
from .enforce import Enforcement

#: The relations' names on the command line and in the API.
NEIGHBOURINGS = {"substitute": SUBSTITUTE, "add-remove": ADD_REMOVE}


@dataclass(frozen=True)
class Option:
    """A method option: ``--option name=value`` on the command line, ``options={name: value}`` in Python.

    ``public_file``: the value is the path of a public input file; a release records its name and
    SHA-256, never the operator's path.
    """

    name: str
    parse: Callable[[Any], Any]
    help: str
    public_file: bool = False


# -- option parsers ------------------------------------------------------------------------------
#
# Every option that sizes work (iterations, rounds, trees, draws, bins, rows, candidates) or that
# enters arithmetic that overflows (a prior of 1e308) declares a ceiling, checked when the options
# are parsed: in the synthesizer's constructor, before any data are read. A value past it is
# refused with the ceiling named, instead of a run that hangs or is stopped by running out of
# memory. The shared ceilings are below; a method's own sit beside its defaults.

#: The most records a count option may name: synthetic rows, a group or leaf size, the records a
#: structure record stands for. A billion is more than any census dipsy is built for holds (the
#: largest national ones have a few hundred million persons; the benchmarks reach 10⁸), and the
#: methods that draw records hold them in memory as codes: 10⁹ of them is already gigabytes per
#: column, 10¹² would be terabytes.
MAX_ROWS = 10**9
#: The most records one individual may own (θ): the noise of every count grows with θ, and at a
#: million records per individual it exceeds the counts of any table.
MAX_THETA = 10**6
#: The largest prior pseudo-count (a Dirichlet or Beta α, a flat prior, a Gamma strength or rate).
#: The least value the count methods ask for, n/(e^(ε/m) − 1), reaches 10¹⁸ only at the smallest ε/m
#: (10⁻⁹) with 10⁹ rows; a larger prior swamps the data entirely, and one near 1e308 overflows the
#: sums over cells to inf (NaN forecasts and posteriors).
MAX_PRIOR = 1e18


def _shown(value: Any) -> str:
    """A given value as an error quotes it: a runaway string cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole(name: str, least: int, most: int, example: int | None = None) -> Callable[[Any], int]:
    """A parser for an option that is a whole number from ``least`` to ``most`` (its ceiling).

    >>> whole("k", 1, 100)("12")
    12
    >>> whole("k", 1, 100)("1000")
    Traceback (most recent call last):
    ...
    dipsy.errors.DipsyError: option k=1,000 is more than the 100 it may be; give k= at most 100, e.g. k=10
    """
    if example is None:
        example = min(max(least, 10), most)

    def parse(value: Any) -> int:
        try:
            k = int(str(value).strip()) if not isinstance(value, (bool, float)) else None
        except ValueError:  # also a text of more digits than Python converts (4,300)
            k = None
        if k is not None and k > most:
            raise DipsyError(
                f"option {name}={k:,} is more than the {most:,} it may be",
                f"give {name}= at most {most:,}, e.g. {name}={example}",
            )
        if k is None or k < least:
            raise DipsyError(
                f"option {name} must be a whole number >= {least} and at most {most:,}, got {_shown(value)}",
                f"e.g. {name}={example}",
            )
        return k

    return parse


def theta_option(sensitive: str = "every count") -> Option:
    """The ``theta`` option of the marginal methods: the records one individual may own (θ), which
    multiplies the sensitivity of ``sensitive`` (add/remove one individual of at most θ records)."""
    return Option(
        "theta",
        whole("theta", 1, MAX_THETA, 7),
        f"most records one individual may own: the sensitivity of {sensitive} (default 1)",
    )


def real(name: str, least: float, most: float, *, open_low: bool = False, example: float | None = None) -> Callable[[Any], float]:
    """A parser for an option that is a finite number in ``[least, most]`` (``(least, most]`` with ``open_low``).

    >>> real("alpha", 0.0, 1e18, open_low=True)("2.5")
    2.5
    """
    low = "(" if open_low else "["
    if example is None:
        example = min(max(least, 1.0), most)

    def parse(value: Any) -> float:
        try:
            x = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int past the floats
            x = math.nan
        if x > most:
            raise DipsyError(
                f"option {name}={x:g} is more than the {most:g} it may be",
                f"give {name}= at most {most:g}, e.g. {name}={example:g}",
            )
        if not (x > least if open_low else x >= least):  # NaN too
            raise DipsyError(
                f"option {name} must be a number in {low}{least:g}, {most:g}], got {_shown(value)}", f"e.g. {name}={example:g}"
            )
        return x

    return parse


#: What a seeded release's statement says instead of a guarantee.
SEEDED = (
    "none: a seeded test release. Its noise can be regenerated from the recorded seed, so it is not "
    "differentially private; never publish it. The same run without a seed gives the guarantee under "
    "'if_unseeded'."
)
#: What a release under a local guarantee says beside its amounts (never "differentially private").
LOCAL = (
    "local, asymptotic: not worst-case differential privacy. epsilon_total bounds the privacy loss of the release for "
    "this confidential data set and its neighbours under 'neighbouring' only (epsilon_x = 2 Delta computed on its records "
    "and over the retained posterior draws); it contracts onto the global bound as n grows (asymptotic DP). It never "
    "counts against a DP budget."
)
#: What a release made with the audit's deliberately broken mechanisms says.
BROKEN = "none: the end-to-end audit's deliberately broken variant (weakened noise); never publish it"


@dataclass(frozen=True)
class Statement:
    """The exact privacy guarantee of a release, as written to release.json.

    Built by :func:`build_statement` from the measurements that ran: ``total`` is their composed
    cost in the method's definition, ``measurements`` what each read, its noise and its cost.
    """

    definition: str
    total: Budget
    per_set: Budget
    sets: int
    relation: Relation
    public: tuple[str, ...]
    mechanism: str
    composition: str
    measurements: tuple[dict, ...] = ()
    #: For a zCDP statement: the δ at which it is also stated as (ε, δ)-DP (None: ρ only).
    delta: float | None = None
    #: A seeded run: a test release, not private (its noise can be regenerated from the seed).
    seeded: bool = False
    #: Made with the audit's weakened mechanisms: not private.
    broken: bool = False
    #: What narrows the relation, e.g. columns released as they are, on which neighbours agree.
    narrowed: str = ""
    #: Data-dependent values the release states as they are (a local guarantee's ε_x and Δ, its
    #: MCMC diagnostics): what each reveals of the confidential data.
    reveals: tuple[str, ...] = ()

    @property
    def neighbouring(self) -> str:
        return self.relation.describe() + (f"; {self.narrowed}" if self.narrowed else "")

    @property
    def private(self) -> bool:
        """Whether the release may claim its guarantee (unseeded and untampered)."""
        return not (self.seeded or self.broken)

    @property
    def guarantee(self) -> str:
        """The ledger's kind of this release: ``dp``; ``local`` (not worst-case DP); ``test`` for one that claims nothing."""
        if not self.private:
            return "test"
        return "local" if self.definition == "local" else "dp"

    def equivalent(self) -> tuple[float, float] | None:
        """(ε, δ) implied by a zCDP total at :attr:`delta` (Canonne, Kamath & Steinke 2020)."""
        if self.definition != "zCDP" or self.delta is None:
            return None
        return statement_epsilon(of_kind(self.total, ZCDP).rho, self.delta), self.delta

    def claim(self) -> dict[str, Any]:
        """The guarantee as an unseeded run of the same release states it."""
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
            "relation": self.relation.to_dict(),
            "public": list(self.public),
            "mechanism": self.mechanism,
            "composition": self.composition,
            **({"conversion": "ρ-zCDP stated as (ε, δ)-DP by Canonne, Kamath & Steinke 2020, §2.3"} if equivalent else {}),
            **({"reveals": list(self.reveals)} if self.reveals else {}),
            **self._published(),
            "measurements": list(self.measurements),
        }

    def _published(self) -> dict[str, str]:
        """The line for the noisy tables released as measured (none when none is)."""
        count = sum(1 for m in self.measurements if "published" in m)
        if not count:
            return {}
        return {
            "published": f"the noisy answers of the {count} measurement(s) marked published, as measured (release.json's "
            "'published'): post-processing of outputs charged above, within the total (Dwork & Roth 2014, Prop. 2.1)"
        }

    def to_dict(self) -> dict[str, Any]:
        if self.private and self.definition == "local":
            return {"differentially_private": False, "guarantee": LOCAL, **self.claim()}
        if self.private:
            return {"differentially_private": True, **self.claim()}
        return {
            "differentially_private": False,
            "definition": BROKEN if self.broken else SEEDED,
            "sets": self.sets,
            "if_unseeded": self.claim(),
        }


@dataclass(frozen=True)
class Plan:
    """What a run will measure, fixed from public inputs before any data are read.

    ``measurements`` are the exact measurement objects ``fit`` will run (each once); an adaptive
    method also declares ``adaptive``, the total that measurements built during ``fit`` may spend
    between them (the session's privacy filter). ``parameters`` are public (written to release.json).
    """

    measurements: tuple[Measurement, ...]
    relation: Relation
    public: tuple[str, ...]
    mechanism: str
    composition: str = "one set"
    parameters: Mapping[str, Any] = field(default_factory=dict)
    adaptive: Budget | None = None
    adaptive_label: str = "adaptive measurements"
    #: Neighbours also agree on what the release repeats as it is (the statement's ``neighbouring`` says so).
    narrowed: str = ""
    #: Data-dependent values the release will state (a local guarantee's): what each reveals.
    reveals: tuple[str, ...] = ()

    @property
    def spends(self) -> tuple[Spend, ...]:
        """What the plan declares, spend by spend (what the ledger reserves before any read)."""
        out = tuple(Spend(m.label, m.cost) for m in self.measurements if not m.mechanism.data_dependent)
        return out + ((Spend(self.adaptive_label, self.adaptive),) if self.adaptive is not None else ())

    def declared_parts(self) -> list[tuple[Budget, int | None]]:
        """The declared spends as (cost, set index): each fixed measurement's, and the adaptive total
        (used by every set, unless a plan declares it set by set)."""
        fixed = [(m.cost, m.set_index) for m in self.measurements if not m.mechanism.data_dependent]
        return fixed + ([(self.adaptive, None)] if self.adaptive is not None else [])

    def declared(self, budget: Budget) -> Budget:
        """The declared total in ``budget``'s definition (refused by the accountant if over it).

        A plan with a data-dependent measurement (a local guarantee, measured after its run)
        declares ``budget`` itself: the ceiling its measured cost must stay within.
        """
        if any(m.mechanism.data_dependent for m in self.measurements):
            return budget
        return total_as(budget, [s.budget for s in self.spends])


def build_statement(
    synthesizer: Synthesizer, plan: Plan, session: Session, delta: float | None = None, seeded: bool = False, broken: bool = False
) -> Statement:
    """The one statement builder: the guarantee of the measurements that ran in ``session``.

    The total is their composition in the method's definition (the accountant's, which refused
    anything past the plan) — except for an adaptive plan, whose guarantee is the total it
    declared (a privacy filter's guarantee is its declared total whatever path ran: Rogers, Roth,
    Ullman & Vadhan 2016; the path, e.g. dpsyn's regime, is chosen from noisy data, so what it
    happened to spend is an ex-post figure, not a DP guarantee). The per-set guarantee is
    :func:`per_set_guarantee`'s.
    """
    total, parts = session.spent, [(m.cost, m.set_index) for m in session.ran]
    if plan.adaptive is not None and synthesizer.definition != "local":
        total, parts = plan.declared(synthesizer.budget), plan.declared_parts()
    return Statement(
        definition=synthesizer.definition,
        total=total,
        per_set=per_set_guarantee(total, parts, synthesizer.sets),
        sets=synthesizer.sets,
        relation=plan.relation,
        public=plan.public + discovered(session.domain),
        mechanism=plan.mechanism,
        composition=plan.composition,
        measurements=tuple(m.describe() for m in session.ran),
        delta=delta if synthesizer.definition == "zCDP" else None,
        seeded=seeded,
        broken=broken,
        narrowed=plan.narrowed,
        reveals=plan.reveals,
    )


def discovered(domain: Domain | None) -> tuple[str, ...]:
    """The statement's line for released columns whose categories or bins a charged DP discovery
    released (the domain's ``discovered`` block): its id, cost and ledger. This release's guarantee
    does not include that cost; the data set's ledger total does."""
    found = getattr(domain, "discovered", None)
    return () if found is None else (found.statement(),)


def per_set_guarantee(total: Budget, parts: Iterable[tuple[Budget, int | None]], sets: int) -> Budget:
    r"""What one synthetic set alone is guaranteed, from the costs of the measurements it uses:
    ``parts`` holds each measurement's (cost, set index), None for one every set uses.

    Set k is a function of the measurements it uses — those tagged ``set_index == k`` and the
    untagged ones every set uses — so it has their composed guarantee (post-processing, Dwork &
    Roth 2014, Prop. 2.1; composition, ibid. Thm 3.16, Bun & Steinke 2016, Lemma 2.3). The
    statement gives the componentwise largest over the sets: a bound each set meets, exact when
    the sets spend alike, and never tighter than a set that spent more (say a set whose adaptive
    part used a different regime). An adaptive plan passes what it declared (:meth:`Plan.declared_parts`):
    its guarantee, like its total, is ex ante.

    When no measurement is tagged, the method's sets each come from their own measurements of one
    cost, or from one measurement whose cost is m times a set's (the pseudo-posterior's m draws):
    the total over m (sequential composition, DESIGN rule 4).

    >>> from dipsy.privacy import PureDP
    >>> per_set_guarantee(PureDP(1.0), [(PureDP(0.25), 0), (PureDP(0.75), 1)], 2)
    PureDP(epsilon=0.75)
    >>> per_set_guarantee(PureDP(1.5), [(PureDP(0.5), None), (PureDP(0.5), 0), (PureDP(0.5), 1)], 2)
    PureDP(epsilon=1.0)
    """
    parts = list(parts)
    if sets == 1:
        return total
    if all(k is None for _, k in parts):
        return total.scaled(1 / sets)
    shared = [cost for cost, k in parts if k is None]
    each = [total_as(total, shared + [cost for cost, j in parts if j == k]) for k in range(sets)]
    return Budget.largest(each)


#: Records per chunk when a set is drawn (and written) in chunks: a few tens of MB of codes.
CHUNK_ROWS = 1_000_000
#: Told of a long step: what it is, how far it got, out of how many (0: no count).
Reporter = Callable[[str, int, int], None]


class Model(ABC):
    """A fitted model: only what the measurements released, and public parameters.

    :meth:`draw` gives the sets one by one — exactly :attr:`sets` of them, the number the plan
    charged for; a further draw is refused. Drawing is post-processing: no read, no spend.
    """

    #: Set by the caller to hear of long steps inside :meth:`draw` (a progress display).
    reporter: Reporter | None = None

    @property
    @abstractmethod
    def sets(self) -> int:
        """How many sets were charged."""

    def choices(self) -> dict[str, Any]:
        """What the method chose from its noisy measurements (e.g. the marginals an adaptive
        method measured): public, being post-processing, and written to release.json."""
        return {}

    def report(self, what: str, done: int = 0, total: int = 0) -> None:
        if self.reporter is not None:
            self.reporter(what, done, total)

    def _next(self) -> int:
        k = self.__dict__.get("_drawn", 0)
        if k >= self.sets:
            raise PrivacyError(
                f"this model was charged for {self.sets} set(s) and has drawn them all",
                "plan the release with more sets (each costs its share of the budget)",
            )
        object.__setattr__(self, "_drawn", k + 1)  # frozen dataclasses too: a counter, not part of the value
        return k

    def draw(self, rand: Randomness, rules: Enforcement | None = None) -> dict[str, np.ndarray] | pd.DataFrame:
        """The next synthetic set: codes per column (decoded by the caller), or records; with
        ``rules``, none in a forbidden cell of the domain's edit rules (:mod:`.enforce`)."""
        k = self._next()
        if not rules:
            return self.sample(k, rand)
        parts = list(rules.records(lambda: iter([self.sample(k, rand)]), rand.numpy, self.exchangeable()))
        return parts[0]

    def draw_chunks(
        self, rand: Randomness, rows: int | None = None, rules: Enforcement | None = None
    ) -> Iterator[dict[str, np.ndarray] | pd.DataFrame]:
        """The next synthetic set in chunks of at most ``rows`` records (default :data:`CHUNK_ROWS`);
        the set is charged now, when called, not when the chunks are read.

        With ``rules`` (the released domain's edit rules), a record in a forbidden cell is rejected
        and its place filled from fresh draws of the same set, ``chunks(k)`` again (:mod:`.enforce`):
        post-processing, since set ``k`` is drawn from the same measurements every time. This is
        the one place where every method's records are drawn."""
        k, size = self._next(), rows or CHUNK_ROWS
        if not rules:
            return self.chunks(k, rand, size)
        return rules.records(lambda: self.chunks(k, rand, size), rand.numpy, self.exchangeable())

    def draw_table(self, rand: Randomness, rules: Enforcement | None = None) -> np.ndarray:
        """The next released table of cell counts (count methods); with ``rules``, every cell an
        edit rule forbids set to 0 (post-processing)."""
        table = self.table(self._next(), rand)
        return rules.table(table) if rules else table

    def exchangeable(self) -> tuple[str, ...] | None:
        """How the rows of a set may stand in for each other when a rejected one is replaced
        (:mod:`.enforce`): ``()``, any row for any (the default: rows drawn alike, or a shuffled
        set); column names, rows with equal values of them (records placed group by group, each
        group its size); None, no row for another (row ``i`` of every draw stands for record ``i``:
        rdt labelling the data's own public columns, the pseudo-posterior with its predictors), so a
        rejected row is redrawn in its place."""
        return ()

    @abstractmethod
    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray] | pd.DataFrame:
        """Set ``k`` (0-based): codes per column, or records in a DataFrame with the domain's columns."""

    def chunks(self, k: int, rand: Randomness, rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray] | pd.DataFrame]:
        """Set ``k`` in chunks of at most ``rows`` records, drawn as they are read.

        By default the whole set in one chunk: a method whose synthesis holds its records in
        memory anyway (GUM) gains nothing from cutting them. Methods
        that can draw records chunk by chunk (the count methods, aim, mst) override it, and their
        :meth:`sample` is these chunks put together, so that a streamed set is the in-memory set.
        """
        yield self.sample(k, rand)

    def table(self, k: int, rand: Randomness) -> np.ndarray:
        raise DipsyError("this method releases records, not a table", "use --release records")


def concatenated(chunks: Iterable[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Chunks of codes per column put together (one chunk as it is).

    >>> concatenated([{"a": np.array([1])}, {"a": np.array([2, 3])}])["a"].tolist()
    [1, 2, 3]
    """
    parts = list(chunks)
    return parts[0] if len(parts) == 1 else {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}


class Synthesizer(ABC):
    """A synthesis method: declare (``plan``), then read through a session (``fit``), then draw.

    Subclasses set ``name``, ``summary``, ``definition``, ``relations`` and ``options``, and
    implement :meth:`plan` and :meth:`fit`.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    definition: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    #: What the method can release: "records" (microdata) and, for count methods, "table".
    releases: ClassVar[tuple[str, ...]] = ("records",)
    #: Whether m > 1 sets are allowed (a single-release method fixes its parameters once).
    multiple_sets: ClassVar[bool] = True
    #: The (record-level) relations the method can be private under; the first is the default.
    relations: ClassVar[tuple[Relation, ...]] = (SUBSTITUTE,)
    #: What ``dipsy methods`` says of the relations when their names do not say it all (a method
    #: that sets a relation with public columns, or a local one).
    neighbours_note: ClassVar[str] = ""

    @classmethod
    def sets_note(cls) -> str:
        """What m sets cost, as ``dipsy methods`` says it (sequential composition in the method's definition)."""
        if not cls.multiple_sets:
            return "one set"
        return {
            "pure-DP": "m sets, each ε/m",
            "zCDP": "m sets, each ρ/m",
            "approximate-DP": "m sets, each (ε/m, δ/m)",
            "local": "m sets, each from its own posterior draw (a local 2Δ each: ε_x = m·2Δ)",
        }[cls.definition]

    def __init__(
        self,
        budget: Budget,
        sets: int = 1,
        options: Mapping[str, Any] | None = None,
        neighbouring: str | Relation | None = None,
        release: str = "records",
        seed: int | None = None,
    ) -> None:
        if budget.definition != self.definition:
            raise DipsyError(
                f"{self.name} gives {self.definition} guarantees, not {budget.definition}",
                "give the budget as the method's definition asks (see 'dipsy methods')",
            )
        if isinstance(sets, bool) or not isinstance(sets, int) or sets < 1:
            raise DipsyError(f"sets must be a whole number >= 1, got {sets!r}", "pass --sets with e.g. 1 or 5")
        if sets > MAX_SETS:
            raise DipsyError(
                f"sets must be at most {MAX_SETS}, got {sets}", "each set costs ε/m: a few sets (5–50) serve inference"
            )
        if sets > 1 and not self.multiple_sets:
            raise DipsyError(f"{self.name} releases a single set, not {sets}", "leave out --sets (see 'dipsy methods')")
        if release not in self.releases:
            raise DipsyError(f"{self.name} cannot release a {release!r}", f"use --release {' or '.join(self.releases)}")
        relation = self.relations[0]
        if neighbouring is not None:
            relation = neighbouring if isinstance(neighbouring, Relation) else parse_relation(neighbouring)
            if relation not in self.relations:
                names = [r.name for r in self.relations]
                chosen = [n for n in names if n in NEIGHBOURINGS]
                raise DipsyError(
                    f"{self.name} is private under {' or '.join(names)} neighbours only",
                    f"pass --neighbouring {chosen[0]} or leave it out"
                    if chosen
                    else "leave out --neighbouring: the method sets its relation",
                )
        self.budget = budget
        #: The run's seed (None unless a seeded test run): a method may derive public choices from it.
        self.seed = seed
        self.sets = sets
        self.release = release
        self.settings = self._parse_options(options or {})
        self.relation = self.relation_for(relation)

    def relation_for(self, relation: Relation) -> Relation:
        """The release's relation from the chosen record-level one (methods with θ widen it)."""
        return relation

    @classmethod
    def _parse_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        known = {o.name: o for o in cls.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            choices = ", ".join(known) if known else "none"
            raise DipsyError(f"{cls.name} has no option {unknown[0]!r}", f"its options are: {choices}")
        return {name: known[name].parse(value) for name, value in given.items()}

    @staticmethod
    def require_rows(n: int | None) -> None:
        """A method that treats n as public needs at least one valid row (refused before any spend)."""
        if n is not None and n < 1:
            raise DipsyError("the data have no valid rows to synthesize from", "check the data against the domain")

    def at_least(self, option: str, least: float, formula: str) -> float:
        """The option's value, which may raise the least private value ``least``, never lower it."""
        value = self.settings.get(option, least)
        if value < least:
            raise DipsyError(
                f"option {option}={value:g} is below {formula} = {least:.6g}, which ε-DP needs", f"raise {option} or leave it out"
            )
        return value

    def public(self, n: int | None) -> tuple[str, ...]:
        """What the release treats as public: the domain, and n when the relation fixes it."""
        domain = "the domain (categories, bounds and bins of the released columns)"
        return (f"n = {n} (the number of rows)", domain) if n is not None and self.relation.fixes_n else (domain,)

    def composition(self) -> str:
        return f"sequential composition over {self.sets} sets, each from its own measurement" if self.sets > 1 else "one set"

    def per_set_labels(self, what: str) -> list[str]:
        """One label per set: ``name: set k of m (what)``."""
        return [f"{self.name}: set {k} of {self.sets} ({what})" for k in range(1, self.sets + 1)]

    def set_label(self, what: str, k: int) -> str:
        """Set ``k``'s (0-based) label: ``name: what`` for one set, else ``name: set k+1 of m (what)``."""
        return f"{self.name}: {what}" if self.sets == 1 else self.per_set_labels(what)[k]

    def set_index(self, k: int) -> int | None:
        """The ``set_index`` of a measurement that serves set ``k`` only (None for one set: it serves all)."""
        return None if self.sets == 1 else k

    def repeated_columns(self, domain: Domain) -> tuple[str, ...]:
        """The columns of every record the release would repeat as they are, from public inputs only
        (none, for a method that synthesizes every column it releases)."""
        return ()

    def check_roles(self, domain: Domain, plan: Plan | None = None) -> None:
        """Refuse the release when a column it would repeat as it is is not declared ``role: public``.

        A column leaves a release unchanged only if the domain declares it public; the default
        role is sensitive. Called twice by the release path: before anything is read, on
        :meth:`repeated_columns`; and once planned, on the columns the plan's relation leaves
        public (the plan's :class:`DeclaredPublic <dipsy.privacy.measurement.DeclaredPublic>`
        measurements lie within them, or the measurement is refused), which must be the same.
        """
        columns = self.repeated_columns(domain) if plan is None else plan.relation.public
        if plan is not None and set(columns) != set(self.repeated_columns(domain)):
            raise PrivacyError(
                f"{self.name}'s plan leaves {list(columns)} public, not the {list(self.repeated_columns(domain))} it declared",
                "report this bug",
            )
        undeclared = [c for c in columns if c not in domain.names or domain[c].role != "public"]
        if undeclared:
            c = undeclared[0]
            role = domain[c].role if c in domain.names else "not in the domain"
            raise PrivacyError(
                f"{self.name} would release the column {c!r} of every record as it is, and the domain declares "
                f"it {role} (a column leaves a release unchanged only if the domain declares it role: public)",
                f"declare {c} 'role: public' in the domain file if it may be published as it is; otherwise {self.keep_private}",
            )

    #: How to run the method without repeating a column (the fix when :meth:`check_roles` refuses).
    keep_private: ClassVar[str] = "choose options that do not repeat it"

    @abstractmethod
    def plan(self, n: int | None, domain: Domain) -> Plan:
        """Every measurement and public parameter, from public inputs: ``n`` is given only when the
        relation fixes it (substitution); under add/remove it is None and must not be needed."""

    @abstractmethod
    def fit(self, session: Session, plan: Plan) -> Model:
        """Run the plan's measurements through ``session`` and return the model of their outputs."""


#: The most sets one release may draw (each costs ε/m; beyond this the noise swamps every set).
MAX_SETS = 1000
