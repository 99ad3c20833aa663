"""Edit rules and structural zeros: combinations of values that no record may hold.

Census and survey files obey edit rules — no married person under 15, no schooling under 3,
group quarters neither owned nor rented — and their synthesis must too (the Census Bureau's
TopDown algorithm keeps structural zeros; synthpop has ``rules``/``rvalues``; NIST's SDNist counts
the records that break such rules). A domain's top-level ``rules:`` list declares them::

    rules:
      - name: no married person under 15
        if: {AGEP: {below: 15}}            # when every condition holds ...
        then: {MSP: ["N"]}                 # ... these are the allowed values
      - name: a person 15 or older has a marital status
        if: {AGEP: {at_least: 15}}
        then: {MSP: {not: ["N"]}}
      - name: tenure of group quarters
        allowed:                            # the allowed combinations of a set of columns
          columns: [HOUSING_TYPE, OWN_RENT]
          combinations: [["1", "1"], ["1", "2"], ["2", "0"], ["3", "0"]]
      - name: no child in the armed forces
        forbidden:                          # the forbidden combinations (structural zeros)
          columns: [AGEP, ESR]
          combinations: [[{below: 17}, "4"], [{below: 17}, "5"]]

A *condition* on one column (:class:`Condition`) is a list of values — categories, integers of
an integer column without bins, or the column's declared missing codes (``null`` for its empty
state) —, a single such value, an interval ``{at_least: a}``, ``{below: b}`` or ``{at_least: a,
below: b}`` (``a <= v < b``; ``from`` is another name for ``at_least``) on an integer or numeric
column, or ``{not: ...}`` of either: every other code of the column, its missing states included.
An interval never holds a missing state.

Each rule compiles to its *forbidden cells* (:meth:`Rule.forbidden`): a boolean array over the
codes of its columns (values, then missing states, as :mod:`dipsy.domain.codec` numbers them).
``if``/``then`` forbids the cells where every ``if`` condition holds and some ``then`` condition
fails; ``allowed`` forbids every cell outside its combinations, ``forbidden`` exactly those inside
them (each item of a combination is a condition, so ``{below: 17}`` stands for every age under 17).

Checks, when the domain loads (each a :class:`~dipsy.errors.DomainError` naming the rule and the
fix): a column the domain does not list, a value that is neither a category nor a declared code,
an interval on a categorical column, a single value of a binned column (it would stand for its
whole bin), a numeric column without bins (it has no codes), and an interval boundary that falls
inside a bin, e.g. ``below: 3`` with AGEP bins ``0, 5, 10``: a record of that bin may be on either
side of the boundary, so no cell is wholly forbidden or allowed; the fix names the split bins. A
rule that forbids no cell, or every cell, is refused too (a typing error, or a domain that no
record can satisfy).

Privacy
-------
A rule is public input, like the categories and bounds it names: declared from public knowledge (a
questionnaire's skip pattern, a census edit specification), never read off the confidential data.
dipsy enforces rules on the synthetic records only (:mod:`dipsy.methods.enforce`): a record in a
forbidden cell is rejected and drawn again from the same fitted model, and a released table gets
its forbidden cells set to zero. What is released is then a function of the DP output (the
fitted model: noisy measurements or posterior draws) and of public input (the rules) and fresh
randomness alone, never of the confidential data again; by the post-processing property
(Dwork & Roth 2014, *The Algorithmic Foundations of Differential Privacy*, Prop. 2.1) it has the
guarantee of the DP output, at no further cost. The same holds for zCDP (Bun & Steinke 2016,
Lemma 1.8) and for a local guarantee's bound on the privacy loss (a data-processing inequality).
Counting the breaks of the rules in the *original* data, as ``dipsy evaluate`` does, reads the
confidential data: it is for the data steward's eyes, like the rest of the evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import DomainError
from .columns import Column
from .missing import reads_as_number

#: The fields of a rule in a domain file.
FIELDS = ("name", "if", "then", "allowed", "forbidden")
#: The bounds of an interval (``from`` is another name for ``at_least``).
INTERVAL_KEYS = ("at_least", "from", "below")
#: The most cells one rule may span (the product of its columns' codes): its forbidden cells are
#: held as a boolean array of that many bytes. Ten million is more than any edit rule needs (a
#: rule names two to four columns), and small enough to hold many rules at once.
MAX_RULE_CELLS = 10**7
#: How a rule is written, for the fix of a malformed one.
SYNTAX = (
    "write each rule as 'name: ..., if: {COLUMN: CONDITION}, then: {COLUMN: CONDITION}', or 'name: ..., "
    "allowed: {columns: [A, B], combinations: [[a1, b1], ...]}' (or forbidden: with the same fields); "
    "see 'Edit rules' in docs/guides/domain.md"
)
CONDITION_SYNTAX = (
    'a list of values (["N", "1"]), one value, an interval ({below: 15}, {at_least: 15}, {at_least: 15, below: 65}), '
    "or {not: ...} of either"
)


@dataclass(frozen=True)
class Condition:
    """A set of codes of one column: listed values, or an interval ``[at_least, below)``; ``negated``
    takes every other code (missing states included).

    >>> from dipsy.domain.columns import Column
    >>> age = Column("AGEP", "integer", lower=0, upper=9, bins=(0, 3, 5, 9))
    >>> Condition(below=5).mask(age, "rule").tolist()
    [True, True, False]
    >>> Condition(values=("N",), negated=True).text("MSP")
    'MSP not in {N}'
    """

    values: tuple[Any, ...] | None = None
    at_least: float | None = None
    below: float | None = None
    negated: bool = False

    def __post_init__(self) -> None:
        bounded = self.at_least is not None or self.below is not None
        if (self.values is None) != bounded or (self.values is not None and not self.values):
            raise DomainError(
                f"a condition is values or an interval, not {self!r}", f"write {CONDITION_SYNTAX} (Condition.parse reads it)"
            )

    @property
    def interval(self) -> bool:
        return self.values is None

    # -- the file's form --------------------------------------------------------------------------

    @classmethod
    def parse(cls, spec: Any, where: str) -> Condition:
        """A condition from its form in a domain file (see the module's docstring)."""
        if isinstance(spec, Mapping):
            keys = [str(k) for k in spec]
            if "not" in keys:
                if len(keys) != 1:
                    raise DomainError(
                        f"{where}: 'not:' stands alone in its condition", f"write {{not: [...]}}: {CONDITION_SYNTAX}"
                    )
                inner = cls.parse(spec["not"], where)
                if inner.negated:
                    raise DomainError(f"{where}: 'not:' of a 'not:'", "write the condition without both 'not:'")
                return replace(inner, negated=True)
            unknown = [k for k in keys if k not in INTERVAL_KEYS]
            if unknown or not keys:
                raise DomainError(
                    f"{where}: the condition has {'unknown key(s) ' + ', '.join(map(repr, unknown)) if unknown else 'no bound'}",
                    f"write {CONDITION_SYNTAX}",
                )
            if "at_least" in keys and "from" in keys:
                raise DomainError(f"{where}: the interval gives both at_least and from (the same bound)", "give one of them")
            low = spec.get("at_least", spec.get("from"))
            high = spec.get("below")
            for name, bound in (("at_least", low), ("below", high)):
                if bound is not None and not (_is_number(bound) and math.isfinite(bound)):
                    raise DomainError(f"{where}: the interval's {name} is {bound!r}", "give a finite number")
            if low is not None and high is not None and not low < high:
                raise DomainError(
                    f"{where}: the interval {{at_least: {low}, below: {high}}} holds no value", "give at_least below 'below'"
                )
            return cls(at_least=low, below=high)
        items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        if not items:
            raise DomainError(f"{where}: the condition lists no value", f"write {CONDITION_SYNTAX}")
        for item in items:
            if isinstance(item, bool):
                raise DomainError(
                    f"{where}: the value {str(item).lower()} was read by YAML as a boolean (from an unquoted yes/no, "
                    "on/off or true/false)",
                    "quote it, e.g. ['yes', 'no']",
                )
            if item is not None and not (isinstance(item, str) or _is_number(item)):
                raise DomainError(f"{where}: the value {item!r} is not a number or a text", f"write {CONDITION_SYNTAX}")
        return cls(values=tuple(items))

    def to_spec(self) -> Any:
        """The condition as a domain file writes it (a value list, or an interval with at_least)."""
        if self.interval:
            inner: Any = {k: v for k, v in (("at_least", self.at_least), ("below", self.below)) if v is not None}
        else:
            inner = list(self.values or ())
        return {"not": inner} if self.negated else inner

    def text(self, column: str) -> str:
        """The condition in words: ``AGEP < 15``, ``15 <= AGEP < 65``, ``MSP in {1, 2}``, ``MSP not in {N}``."""
        if self.interval:
            inner = column
            if self.at_least is not None:
                inner = f"{_number(self.at_least)} <= {inner}"
            if self.below is not None:
                inner = f"{inner} < {_number(self.below)}"
            if self.at_least is not None and self.below is None:
                inner = f"{column} >= {_number(self.at_least)}"
            return f"not ({inner})" if self.negated else inner
        shown = ", ".join("empty" if v is None else str(v) for v in self.values or ())
        return f"{column} {'not in' if self.negated else 'in'} {{{shown}}}"

    # -- the codes --------------------------------------------------------------------------------

    def mask(self, column: Column, where: str) -> np.ndarray:
        """The codes of ``column`` the condition holds, as a boolean array over its codes; a
        DomainError for a condition the column cannot carry (see the module's docstring)."""
        if not column.encodable:
            raise DomainError(
                f"{where}: column {column.name!r} is numeric without bins, so it has no codes a rule could name",
                f"give {column.name} 'bins:' in the domain file, or leave it out of the rule",
            )
        out = self._interval_mask(column, where) if self.interval else self._values_mask(column, where)
        return ~out if self.negated else out

    def _values_mask(self, column: Column, where: str) -> np.ndarray:
        assert self.values is not None, "a list condition"
        size = column.value_size or 0
        binned = not column.is_categorical and column.bins is not None
        out = np.zeros(column.n_codes, dtype=bool)
        for item in self.values:
            code = code_of(item, column)
            if code is None:
                raise DomainError(f"{where}: {_item_text(item)} is not a value of column {column.name!r}", _values_fix(column))
            if binned and code < size:
                assert column.bins is not None, "a binned column"
                raise DomainError(
                    f"{where}: {item!r} is one value of column {column.name!r}, whose codes are bins: a rule names whole bins",
                    f"write an interval on the bins' edges, e.g. {{at_least: {_number(column.bins[0])}, below: "
                    f"{_number(column.bins[1])}}} (edges: {_edges_text(column.bins)})",
                )
            out[code] = True
        return out

    def _interval_mask(self, column: Column, where: str) -> np.ndarray:
        if column.is_categorical:
            shown = ", ".join(map(repr, column.category_texts[:4])) + (", ..." if len(column.levels) > 4 else "")
            raise DomainError(
                f"{where}: column {column.name!r} is {column.kind}, and an interval needs an integer or numeric column",
                f"list the categories the condition holds, e.g. [{shown}]",
            )
        low = -math.inf if self.at_least is None else float(self.at_least)
        high = math.inf if self.below is None else float(self.below)
        lower, upper = column.bounds
        if column.kind == "integer":  # whole numbers: v >= a is v >= ceil(a), v < b is v < ceil(b)
            low, high = math.ceil(low) if math.isfinite(low) else low, math.ceil(high) if math.isfinite(high) else high
        if column.bins is None:  # an integer column without bins: one code per value
            values = np.arange(int(lower), int(upper) + 1, dtype=float)
            inside = (values >= low) & (values < high)
        else:
            inside = self._bins_inside(column, low, high, where)
        return np.concatenate([inside, np.zeros(column.n_states, dtype=bool)])

    def _bins_inside(self, column: Column, low: float, high: float, where: str) -> np.ndarray:
        """Which bins lie wholly inside ``[low, high)``; a DomainError naming a bin that straddles a boundary."""
        assert column.bins is not None, "a binned column"
        edges = np.asarray(column.bins, dtype=float)
        if column.kind == "integer":  # closed ranges of whole numbers
            first, last = (x.astype(float) for x in column.integer_bin_ranges())
            inside = (first >= low) & (last < high)
            outside = (last < low) | (first >= high)
        else:  # [e_k, e_k+1), the last bin [e_K-1, e_K] holding the upper bound too
            first, top = edges[:-1], edges[1:]
            closed = np.zeros(len(first), dtype=bool)
            closed[-1] = True
            below_high = np.where(closed, top < high, top <= high)
            inside = (first >= low) & below_high
            outside = np.where(closed, top < low, top <= low) | (first >= high)
        straddled = np.flatnonzero(~inside & ~outside)
        if straddled.size:
            k = int(straddled[0])
            cut = next(b for b in (low, high) if math.isfinite(b) and edges[k] < b and (b < edges[k + 1] or k == len(edges) - 2))
            raise DomainError(
                f"{where}: the boundary {_number(cut)} of {self.text(column.name)} falls inside {column.name}'s bin "
                f"{_bin_text(column, k)}, so that bin's records lie on both sides of it",
                _split_fix(column, cut),
            )
        return inside


@dataclass(frozen=True)
class Rule:
    """One edit rule: ``if``/``then`` conditions, or a list of allowed or forbidden combinations.

    >>> rule = Rule.from_dict({"name": "no married child", "if": {"age": {"below": 15}}, "then": {"msp": ["N"]}})
    >>> rule.columns, rule.text()
    (('age', 'msp'), 'if age < 15 then msp in {N}')
    """

    name: str
    #: The ``if`` conditions, (column, condition) each: all must hold.
    when: tuple[tuple[str, Condition], ...] = ()
    #: The ``then`` conditions: each must hold when every ``if`` condition does.
    then: tuple[tuple[str, Condition], ...] = ()
    #: The columns of an ``allowed`` or ``forbidden`` list, and its combinations (a condition per column).
    listed: tuple[str, ...] = ()
    combinations: tuple[tuple[Condition, ...], ...] = ()
    #: ``allowed`` (True: every other cell is forbidden) or ``forbidden`` (False) list.
    allowing: bool = True

    def __post_init__(self) -> None:
        conditional, listed = bool(self.when) and bool(self.then), bool(self.listed) and bool(self.combinations)
        if conditional == listed or (conditional and (self.listed or self.combinations)) or (listed and (self.when or self.then)):
            raise DomainError(f"rule {self.name!r} is neither an if/then rule nor a list of combinations", SYNTAX)

    @property
    def kind(self) -> str:
        return "if" if self.when else "allowed" if self.allowing else "forbidden"

    @property
    def columns(self) -> tuple[str, ...]:
        """The rule's columns, in the order written (``if``, then ``then``; or the list's)."""
        if self.kind != "if":
            return self.listed
        return tuple(dict.fromkeys(c for c, _ in self.when + self.then))

    # -- the file's form --------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, spec: Any, index: int = 1) -> Rule:
        """A rule from its entry in a domain file's ``rules:`` list (``index`` counts from 1, for messages)."""
        if not isinstance(spec, Mapping):
            raise DomainError(f"rule {index} of 'rules:' is not a mapping", SYNTAX)
        name = spec.get("name")
        where = f"rule {index}" + (f" ({name!r})" if isinstance(name, str) else "")
        unknown = sorted(str(k) for k in spec if k not in FIELDS)
        if unknown:
            hint = (
                " (YAML reads an unquoted yes/no, on/off or true/false key as a boolean)"
                if any(isinstance(k, bool) for k in spec)
                else ""
            )
            raise DomainError(f"{where} has unknown field(s) {unknown}{hint}", f"use only {', '.join(FIELDS)}")
        if not isinstance(name, str) or not name.strip():
            raise DomainError(f"{where} has no name", "give each rule a 'name:' in words, e.g. name: no married person under 15")
        kinds = [k for k in ("if", "allowed", "forbidden") if k in spec]
        if ("if" in spec) != ("then" in spec):
            raise DomainError(f"{where} has {'if: without then:' if 'if' in spec else 'then: without if:'}", SYNTAX)
        if len(kinds) != 1:
            raise DomainError(
                f"{where} has none of if/then, allowed and forbidden"
                if not kinds
                else f"{where} has both {' and '.join(kinds)}: a rule is one of if/then, allowed or forbidden",
                SYNTAX,
            )
        if kinds[0] == "if":
            when = _conditions(spec.get("if"), f"{where}, if:")
            then = _conditions(spec.get("then"), f"{where}, then:")
            return cls(name.strip(), when=when, then=then)
        body = spec[kinds[0]]
        if not isinstance(body, Mapping) or set(map(str, body)) != {"columns", "combinations"}:
            raise DomainError(f"{where}: {kinds[0]}: needs exactly 'columns:' and 'combinations:'", SYNTAX)
        columns = body["columns"]
        if not isinstance(columns, (list, tuple)) or not columns or not all(isinstance(c, (str, int)) for c in columns):
            raise DomainError(f"{where}: {kinds[0]}: columns is not a list of column names", "write columns: [A, B]")
        names = tuple(str(c) for c in columns)
        if len(set(names)) != len(names):
            raise DomainError(f"{where}: {kinds[0]}: columns lists a column twice", "list each column once")
        combos = body["combinations"]
        if not isinstance(combos, (list, tuple)) or not combos:
            raise DomainError(f"{where}: {kinds[0]}: combinations is not a list", "write combinations: [[a1, b1], [a2, b2]]")
        parsed = []
        for j, combo in enumerate(combos, start=1):
            if not isinstance(combo, (list, tuple)) or len(combo) != len(names):
                raise DomainError(
                    f"{where}: combination {j} of {kinds[0]}: is {combo!r}, not a list of {len(names)} item(s), one per column",
                    f"write one item per column of {list(names)}, e.g. [{', '.join(['...'] * len(names))}]",
                )
            parsed.append(tuple(Condition.parse(item, f"{where}, combination {j}, {c}") for c, item in zip(names, combo)))
        return cls(name.strip(), listed=names, combinations=tuple(parsed), allowing=kinds[0] == "allowed")

    def to_dict(self) -> dict[str, Any]:
        """The rule's entry in a domain file."""
        if self.kind == "if":
            return {
                "name": self.name,
                "if": {c: cond.to_spec() for c, cond in self.when},
                "then": {c: cond.to_spec() for c, cond in self.then},
            }
        combos = [[_combination_item(cond) for cond in combo] for combo in self.combinations]
        return {"name": self.name, self.kind: {"columns": list(self.listed), "combinations": combos}}

    def text(self) -> str:
        """The rule in words (for messages, ``dipsy domain check`` and release.json)."""
        if self.kind == "if":
            return (
                "if "
                + " and ".join(cond.text(c) for c, cond in self.when)
                + " then "
                + " and ".join(cond.text(c) for c, cond in self.then)
            )
        singles = [[_combination_item(cond) for cond in combo] for combo in self.combinations]
        if all(not isinstance(x, (Mapping, list)) for combo in singles for x in combo):  # one value each: a list of tuples
            tuples = ", ".join("(" + ", ".join("empty" if x is None else str(x) for x in combo) + ")" for combo in singles)
            return f"({', '.join(self.listed)}) {'in' if self.allowing else 'not in'} {{{tuples}}}"
        shown = "; ".join(
            "(" + ", ".join(cond.text(c) for c, cond in zip(self.listed, combo)) + ")" for combo in self.combinations
        )
        return f"{'only' if self.allowing else 'never'}: {shown}"

    # -- the codes --------------------------------------------------------------------------------

    def forbidden(self, columns: Mapping[str, Column]) -> np.ndarray:
        """The forbidden cells: a boolean array over the codes of :attr:`columns` (axes in that
        order), from ``columns`` (the domain's, by name). A DomainError for every problem the
        module's docstring lists.

        >>> from dipsy.domain.columns import Column
        >>> cols = {"a": Column("a", "integer", lower=0, upper=2), "m": Column("m", "categorical", categories=("N", "Y"))}
        >>> Rule.from_dict({"name": "r", "if": {"a": {"below": 1}}, "then": {"m": "N"}}).forbidden(cols).tolist()
        [[False, True], [False, False], [False, False]]
        """
        where = f"rule {self.name!r}"
        absent = [c for c in self.columns if c not in columns]
        if absent:
            raise DomainError(
                f"{where} names the column(s) {', '.join(map(repr, absent))}, which the domain does not list",
                f"name columns of the domain ({', '.join(list(columns)[:8])}{', ...' if len(columns) > 8 else ''}), or remove the rule",
            )
        for c in self.columns:
            if not columns[c].encodable:
                raise DomainError(
                    f"{where}: column {c!r} is numeric without bins, so it has no codes a rule could name",
                    f"give {c} 'bins:' in the domain file, or leave it out of the rule",
                )
        sizes = [columns[c].n_codes for c in self.columns]
        cells = math.prod(sizes)
        if cells > MAX_RULE_CELLS:
            raise DomainError(
                f"{where} spans {cells:,} cells ({' × '.join(f'{s:,}' for s in sizes)}), more than the {MAX_RULE_CELLS:,} a rule may",
                "name fewer columns in it, or give its columns coarser bins",
            )
        axes = {c: i for i, c in enumerate(self.columns)}

        def on_axis(column: str, cond: Condition, what: str) -> np.ndarray:
            shape = [1] * len(sizes)
            shape[axes[column]] = sizes[axes[column]]
            return cond.mask(columns[column], what).reshape(shape)

        if self.kind == "if":
            holds = np.ones(sizes, dtype=bool)
            for c, cond in self.when:
                holds = holds & on_axis(c, cond, f"{where}, if {c}")
            allowed = np.ones(sizes, dtype=bool)
            for c, cond in self.then:
                allowed = allowed & on_axis(c, cond, f"{where}, then {c}")
            out = holds & ~allowed
        else:
            listed = np.zeros(sizes, dtype=bool)
            for j, combo in enumerate(self.combinations, start=1):
                cell = np.ones(sizes, dtype=bool)
                for c, cond in zip(self.listed, combo):
                    cell = cell & on_axis(c, cond, f"{where}, combination {j}, {c}")
                listed |= cell
            out = ~listed if self.allowing else listed
        if not out.any():
            raise DomainError(
                f"{where} forbids no combination of {', '.join(self.columns)} ({self.text()})",
                "check its conditions against the columns' categories and bins (an interval outside the bounds holds no "
                "value), or remove the rule",
            )
        if out.all():
            raise DomainError(
                f"{where} forbids every combination of {', '.join(self.columns)} ({self.text()}), so no record could be released",
                "check its conditions (a 'then' that no value meets, an empty 'allowed' list), or remove the rule",
            )
        return out


@lru_cache(maxsize=4096)
def compiled(rule: Rule, columns: tuple[Column, ...]) -> np.ndarray:
    """:meth:`Rule.forbidden` for the rule's own columns, in its order, read-only and remembered: a
    domain compiles its rules whenever it is built, and projections (which the evaluation makes
    by the thousand) keep the same rules over the same columns."""
    out = rule.forbidden({c.name: c for c in columns})
    out.flags.writeable = False
    return out


def _conditions(spec: Any, where: str) -> tuple[tuple[str, Condition], ...]:
    if not isinstance(spec, Mapping) or not spec:
        raise DomainError(f"{where} is not a mapping of column to condition", f"write e.g. {{AGEP: {{below: 15}}}}; {SYNTAX}")
    out = []
    for column, cond in spec.items():
        if isinstance(column, bool) or column is None:
            raise DomainError(f"{where}: a column name was read by YAML as {column!r}", "quote the column name")
        out.append((str(column), Condition.parse(cond, f"{where} {column}")))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class RuleCells:
    """A rule compiled against a domain: its columns and forbidden cells (:meth:`Rule.forbidden`)."""

    rule: Rule
    forbidden: np.ndarray
    sizes: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(self.forbidden.shape))

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def columns(self) -> tuple[str, ...]:
        return self.rule.columns

    def breaks(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        """Which records (codes per column) lie in a forbidden cell; a record with an invalid code
        (``-1``, a row that does not match the domain) breaks nothing here.

        >>> rule = Rule.from_dict({"name": "r", "allowed": {"columns": ["x"], "combinations": [[0]]}})
        >>> from dipsy.domain.columns import Column
        >>> cells = RuleCells(rule, rule.forbidden({"x": Column("x", "integer", lower=0, upper=1)}))
        >>> cells.breaks({"x": np.array([0, 1, -1])}).tolist()
        [False, True, False]
        """
        index = [np.asarray(codes[c], dtype=np.int64) for c in self.columns]
        valid = np.ones(len(index[0]), dtype=bool)
        for i, size in zip(index, self.sizes):
            valid &= (i >= 0) & (i < size)
        out = np.zeros(len(index[0]), dtype=bool)
        out[valid] = self.forbidden[tuple(i[valid] for i in index)]
        return out

    def mask(self, names: Sequence[str]) -> np.ndarray:
        """The forbidden cells as a mask broadcastable over the full cross-tabulation of ``names``
        (axes in that order; length 1 on the columns the rule does not name)."""
        order = [self.columns.index(n) for n in names if n in self.columns]
        shape = [self.sizes[self.columns.index(n)] if n in self.columns else 1 for n in names]
        return np.transpose(self.forbidden, order).reshape(shape)


def breaks(cells: Sequence[RuleCells], codes: Mapping[str, np.ndarray], rows: int) -> np.ndarray:
    """A (rules × records) boolean array: which record lies in a forbidden cell of which rule."""
    if not cells:
        return np.zeros((0, rows), dtype=bool)
    return np.stack([c.breaks(codes) for c in cells])


def code_of(item: Any, column: Column) -> int | None:
    """The code a rule's value names in ``column`` (None: no value or state of the column), matched
    as :mod:`dipsy.domain.codec` matches data values: a declared missing code first (``None`` is
    the empty state), then numbers as numbers where the categories (or the kind) are numbers, and
    text as text, a whole float without its ``.0``. Bounds are not clipped: a value outside them
    names nothing. (The codec itself imports the domain, which imports this module.)

    >>> from dipsy.domain.missing import Missing
    >>> msp = Column("MSP", "categorical", categories=("N", "1", "2"), missing=Missing(codes=((-8, "refused"),)))
    >>> [code_of(x, msp) for x in ("N", 1, "2", -8, "-8", 3)]
    [0, 1, 2, 3, 3, None]
    >>> [code_of(x, Column("age", "integer", lower=0, upper=99, bins=(0, 5, 99))) for x in (4, 5, 5.5, 100)]
    [0, 1, None, None]
    """
    size = column.value_size or 0
    number = _as_number(item)
    if column.missing is not None:
        if item is None:
            return None if column.missing.empty_state is None else size + column.missing.empty_state
        numbers, texts = column.missing.code_states()
        for state, code in numbers:
            if number is not None and number == code:
                return size + state
        for state, text in texts:
            if isinstance(item, str) and item == text:
                return size + state
    if item is None:
        return None
    if column.is_categorical:
        if column.numeric_categories:
            found = [k for k, c in enumerate(column.levels) if number is not None and float(c) == number]
        else:
            text = _number(item) if _is_number(item) and float(item).is_integer() else str(item)
            found = [k for k, c in enumerate(column.category_texts) if c == text]
        return found[0] if found else None
    lower, upper = column.bounds
    if number is None or not lower <= number <= upper or (column.kind == "integer" and not float(number).is_integer()):
        return None
    if column.bins is None:
        return int(number - lower) if column.kind == "integer" else None
    return int(np.searchsorted(np.asarray(column.bins[1:-1], dtype=float), number, side="right"))


def _as_number(item: Any) -> float | None:
    """``item`` as a number when it reads as one (``-8``, ``"-8"``, ``1.0``), else None."""
    if _is_number(item):
        return float(item)
    if isinstance(item, str) and reads_as_number(item) and math.isfinite(float(item)):
        return float(item)
    return None


# -- texts ----------------------------------------------------------------------------------------


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _number(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**63 else repr(x)


def _item_text(item: Any) -> str:
    return "an empty value (null)" if item is None else repr(item)


def _combination_item(cond: Condition) -> Any:
    """A combination's item as written: one value alone, else the condition."""
    if not cond.interval and not cond.negated and cond.values is not None and len(cond.values) == 1:
        return cond.values[0]
    return cond.to_spec()


def _values_fix(column: Column) -> str:
    codes = []
    if column.missing is not None:
        codes = [
            *(["null (its empty state)"] if column.missing.empty is not None else []),
            *(repr(c) for c, _ in column.missing.codes),
        ]
    extra = f"; or a declared missing code: {', '.join(codes)}" if codes else ""
    if column.is_categorical:
        shown = ", ".join(column.category_texts[:12]) + (", ..." if len(column.levels) > 12 else "")
        return f"use its categories as the domain lists them: {shown}{extra}"
    lower, upper = column.bounds
    if column.bins is None and column.kind == "integer":
        return f"use whole numbers from {_number(lower)} to {_number(upper)}{extra}"
    return f"write an interval on its bins' edges ({_edges_text(column.bins or ())}){extra}"


def _edges_text(edges: Sequence[float]) -> str:
    shown = [_number(e) for e in edges]
    return ", ".join(shown if len(shown) <= 12 else [*shown[:6], "...", *shown[-2:]])


def _bin_text(column: Column, k: int) -> str:
    assert column.bins is not None, "a binned column"
    if column.kind == "integer":
        first, last = column.integer_bin_ranges()
        return f"{int(first[k])}–{int(last[k])}"
    edges = column.bins
    return f"[{_number(edges[k])}, {_number(edges[k + 1])}{']' if k == len(edges) - 2 else ')'}"


def _split_fix(column: Column, cut: float) -> str:
    assert column.bins is not None, "a binned column"
    edges = [float(e) for e in column.bins]
    if cut >= edges[-1]:  # the last bin holds the upper bound itself: no edge can be put there
        return (
            f"the last bin holds the upper bound {_number(edges[-1])} itself: write the interval with at_least: "
            f"{_number(edges[-1])} and 'not:', or raise the bound"
        )
    split = sorted({*edges, float(cut)})
    return f"split the bin at {_number(cut)}: bins [{', '.join(_number(e) for e in split)}]"
