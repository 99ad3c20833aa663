"""One column of a public domain: its kind, its categories or bounds, its role, its clipping.

A column is a small frozen value object. Its categories, bounds and bins are public knowledge
declared by the user (design rule 1); nothing here is ever read off the data.

Kinds
-----
``categorical``
    Unordered categories, listed. Code ``k`` is the k-th category.
``ordinal``
    Ordered categories, listed in order. Encoded like ``categorical``.
``integer``
    Whole numbers in ``[lower, upper]``. Without bins, code ``v - lower``; with bins, the bin index.
``numeric``
    Real numbers in ``[lower, upper]``. Encodable only with bins; decodes uniformly inside its bin.

Bins are given as a count (equal widths over ``[lower, upper]``) or as edges
``e_0 = lower < e_1 < ... < e_K = upper``; bin ``k`` holds ``e_k <= v < e_{k+1}`` and the last bin
also holds ``upper``.

Roles
-----
``role`` is ``sensitive`` (the default) or ``public``, and it is a contract: a column leaves a
release unchanged only if the domain declares it public. The methods that can repeat columns
(:data:`ROLE_READERS`: ``rdt`` labelling the records' own public columns, the pseudo-posterior
with its predictors) are refused, before anything is read, when a column they would repeat is
not declared public; no other method releases any column as it is, whatever its role. ``dipsy
domain check`` says so for a domain that declares public columns.

Clipping (top- and bottom-coding)
---------------------------------
``clip: true`` on an integer or numeric column sets a value below ``lower`` to ``lower`` and one
above ``upper`` to ``upper`` (``-inf`` and ``inf`` too) instead of calling it invalid; a value that
is missing, not a number, or (integer kind) not whole is still invalid. The release states it, one
line per column, from the domain alone (:meth:`Column.clip_statement`), never with a count.

Privacy: clipping maps each record on its own, so two data sets that differ in one record still
differ in at most that record after it: a transformation of stability 1 (McSherry 2009, "Privacy
integrated queries", stable transformations: an ε-DP mechanism after a c-stable transformation is
cε-DP). A mechanism that is ε-DP (or ρ-zCDP) on the clipped data is therefore ε-DP (ρ-zCDP) for
the original data under the same neighbouring relation, and a method's sensitivity may rely on
the bounds.

Missing values
--------------
``missing:`` declares the states a value may be in instead of a value (:class:`~.missing.Missing`):
an empty cell, reserved codes such as ``-8: refused``, each with its label, or all pooled into one
state. An encodable column of ``K`` value codes gets its ``M`` states as codes ``K … K + M − 1``
after them (the empty state first, then the codes in the order written; pooled: one code ``K``),
and ``size`` counts them. A declared code may be neither a category nor inside ``[lower, upper]``
(it would match both ways), and it is matched before clipping. A numeric column without bins
keeps no codes; its rows in a missing state are valid. A method that reads a column's numbers gets
NaN and the row's state where it is in one (:meth:`Engine.records <dipsy.engine.base.Engine.records>`),
or is refused (see docs/guides/domain.md, "Missing values").

Privacy: the states are declared, so they are public like the categories and bounds, and a
record's state is a function of that record alone, so encoding stays a stable transformation
(each record on its own, as clipping). The proofs change only through the domain's sizes: a
column of ``K`` codes has ``K + M``. Sizes enter a method only as the shape of the tables and
marginals it counts (whose sensitivity is the same whatever the number of cells: one record
moves one count, or two) and as the number of cells a prior or noise is spread over; a method
whose privacy reads more of a column than its size (a bound, a bin width, the values as numbers:
the smoothed histogram, modips' normal and mixed models, the ECDF, the pseudo-posterior's
response) refuses a column with missing states, so a state enters no proof anywhere else. Columns
repeated as they are (rdt's public columns, the pseudo-posterior's predictors) are public under the
relation, states included: their states enter no proof either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DipsyError, DomainError
from .limits import MAX_CODES, too_many_codes
from .missing import Missing, code_key, reads_as_number

KINDS = ("categorical", "ordinal", "integer", "numeric")
ROLES = ("sensitive", "public")
#: The methods that can release a column as it is, and so read ``role`` (rdt: its public attributes;
#: the pseudo-posterior: its predictors); for every other method a column's role changes nothing. A
#: method that starts repeating columns joins here, so that what ``dipsy domain check`` says stays true.
ROLE_READERS = frozenset({"rdt", "pseudo-posterior"})
_FIELDS = {"kind", "categories", "labels", "lower", "upper", "bins", "clip", "role", "description", "missing"}


@dataclass(frozen=True)
class Column:
    """A column of the domain.

    >>> Column("Race", "categorical", categories=(1, 2, 3)).size
    3
    >>> Column("Age", "integer", lower=0, upper=99, bins=(0, 50, 99)).size
    2
    >>> Column("Income", "numeric", lower=0, upper=20000, clip=True).clip_statement()
    'Income: values outside [0, 20000] set to the nearest bound (top/bottom-coding declared in the domain)'
    """

    name: str
    kind: str
    categories: tuple | None = None
    labels: tuple[str, ...] | None = None
    lower: float | None = None
    upper: float | None = None
    bins: tuple[float, ...] | None = None
    role: str = "sensitive"
    description: str = ""
    #: Values outside [lower, upper] are set to the nearest bound (integer and numeric kinds).
    clip: bool = False
    #: The declared missing states (empty cells, reserved codes), or None: a missing value is invalid.
    missing: Missing | None = None

    def __post_init__(self) -> None:
        where = f"column {self.name!r}"
        if self.kind not in KINDS:
            raise DomainError(f"{where} has kind {self.kind!r}", f"use one of {', '.join(KINDS)}")
        if self.role not in ROLES:
            raise DomainError(f"{where} has role {self.role!r}", "use 'sensitive' or 'public'")
        if not isinstance(self.clip, (bool, np.bool_)):
            raise DomainError(f"{where} has clip: {self.clip!r}", "write clip: true or clip: false (unquoted)")
        if self.clip and self.kind not in ("integer", "numeric"):
            raise DomainError(
                f"{where} is {self.kind} and has clip: true",
                "clip (top/bottom-coding at lower and upper) applies to integer and numeric columns: remove it",
            )
        if self.is_categorical:
            self._check_categories(where)
        else:
            self._check_bounds(where)
        if self.missing is not None:
            self._check_missing(where)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, name: str, spec: Mapping[str, Any]) -> Column:
        """Build a column from its entry in a domain file (see docs/guides/domain.md for the format)."""
        if not isinstance(spec, Mapping):
            raise DomainError(f"column {name!r} is not a mapping", "give it a kind and its categories or bounds")
        unknown = set(spec) - _FIELDS
        if unknown:
            raise DomainError(
                f"column {name!r} has unknown field(s) {sorted(unknown)}",
                f"use only {sorted(_FIELDS)}",
            )
        if "kind" not in spec:
            raise DomainError(f"column {name!r} has no kind", f"add 'kind:' with one of {', '.join(KINDS)}")
        categories = spec.get("categories")
        labels = spec.get("labels")
        bins = spec.get("bins")
        lower, upper = spec.get("lower"), spec.get("upper")
        kind = spec["kind"]
        if isinstance(labels, (list, tuple)) and any(isinstance(x, bool) or x is None for x in labels):
            raise DomainError(
                f"column {name!r} has a label that YAML read as a boolean or as empty (an unquoted yes/no, on/off, "
                "true/false, ~ or null)",
                "quote such labels in the domain file, e.g. labels: ['yes', 'no']",
            )
        if bins is not None and kind in ("integer", "numeric"):
            bins = _edges(name, kind, lower, upper, bins)
        missing = None
        if "missing" in spec:
            try:
                missing = Missing.from_dict(spec["missing"])
            except DomainError as e:  # the declaration does not know its column: name it
                raise DomainError(f"column {name!r}: {e.problem}", e.fix) from None
        return cls(
            name=str(name),
            kind=kind,
            categories=tuple(categories) if isinstance(categories, (list, tuple)) else categories,
            labels=tuple(str(x) for x in labels) if isinstance(labels, (list, tuple)) else labels,
            lower=lower,
            upper=upper,
            bins=bins,
            role=spec.get("role", "sensitive"),
            description=str(spec.get("description", "")),
            clip=spec.get("clip", False),
            missing=missing,
        )

    def to_dict(self) -> dict[str, Any]:
        """The column's entry in a domain file (bins as edges)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.is_categorical:
            out["categories"] = list(self.levels)
            if self.labels is not None:
                out["labels"] = list(self.labels)
        else:
            out["lower"], out["upper"] = self.lower, self.upper
            if self.bins is not None:
                out["bins"] = list(self.bins)
            if self.clip:  # only when set: the fingerprint of a domain without clipping is unchanged
                out["clip"] = True
        if self.missing is not None:  # only when set: the fingerprint of a domain without it is unchanged
            out["missing"] = self.missing.to_dict()
        out["role"] = self.role
        if self.description:
            out["description"] = self.description
        return out

    # -- properties -----------------------------------------------------------------------------

    @property
    def is_categorical(self) -> bool:
        return self.kind in ("categorical", "ordinal")

    @property
    def levels(self) -> tuple:
        """The categories of a categorical or ordinal column; a DomainError for any other kind.

        >>> Column("Race", "categorical", categories=(1, 2, 3)).levels
        (1, 2, 3)
        """
        if self.categories is None:  # __post_init__ requires categories exactly when the kind is categorical
            raise DomainError(
                f"column {self.name!r} is {self.kind} and has no categories", "use its bounds, or make it categorical or ordinal"
            )
        return self.categories

    @property
    def bounds(self) -> tuple[float, float]:
        """The public ``(lower, upper)`` of an integer or numeric column, as declared; a DomainError for
        a categorical or ordinal one.

        >>> Column("Age", "integer", lower=0, upper=99).bounds
        (0, 99)
        """
        if self.lower is None or self.upper is None:  # __post_init__ requires both for integer and numeric kinds
            raise DomainError(
                f"column {self.name!r} is {self.kind} and has no bounds", "use its categories, or make it integer or numeric"
            )
        return self.lower, self.upper

    @property
    def numeric_categories(self) -> bool:
        """Categories are all numbers, so data values are matched as numbers (1 == 1.0)."""
        return self.is_categorical and all(_is_number(c) for c in self.levels)

    @property
    def category_texts(self) -> tuple[str, ...]:
        """Categories as the text data values are matched against (whole floats without '.0')."""
        return tuple(str(int(c)) if isinstance(c, float) and c.is_integer() else str(c) for c in self.levels)

    @property
    def encodable(self) -> bool:
        """Whether the column has a finite set of codes (numeric columns need bins)."""
        return self.kind != "numeric" or self.bins is not None

    @property
    def size(self) -> int | None:
        """Number of codes (value codes and missing states), or None for a numeric column without bins.

        >>> from dipsy.domain.missing import Missing
        >>> Column("Race", "categorical", categories=(1, 2, 3), missing=Missing(codes=((-8, "refused"),))).size
        4
        """
        values = self.value_size
        return None if values is None else values + self.n_states

    @property
    def value_size(self) -> int | None:
        """Number of value codes ``K`` (categories, integers or bins; the missing states come
        after them), or None for a numeric column without bins."""
        if self.is_categorical:
            return len(self.levels)
        if self.bins is not None:
            return len(self.bins) - 1
        if self.kind == "integer":
            lower, upper = self.bounds
            return int(upper) - int(lower) + 1
        return None

    @property
    def ordered_codes(self) -> int:
        """How many leading codes are values in their order: ``K`` for an ordinal, integer or
        numeric column (its categories in order, its integers or bins), 0 for a categorical one;
        missing states, after them, are never in order.

        >>> Column("Age", "integer", lower=0, upper=99).ordered_codes, Column("Race", "categorical", categories=(1, 2)).ordered_codes
        (100, 0)
        """
        return 0 if self.kind == "categorical" else int(self.value_size or 0)

    @property
    def n_states(self) -> int:
        """Number of declared missing states (0 without ``missing:``)."""
        return 0 if self.missing is None else self.missing.n_states

    def refuse_missing(self, what: str, fix: str) -> None:
        """Raise a DipsyError when the column declares missing states that ``what`` cannot handle.

        >>> from dipsy.domain.missing import Missing
        >>> Column("x", "numeric", lower=0, upper=1, missing=Missing(empty="skipped")).refuse_missing("this method", "leave it out")
        Traceback (most recent call last):
        ...
        dipsy.errors.DipsyError: column 'x' declares missing values (missing:), which this method does not handle; leave it out
        """
        if self.missing is not None:
            raise DipsyError(f"column {self.name!r} declares missing values (missing:), which {what} does not handle", fix)

    @property
    def n_codes(self) -> int:
        """Number of codes of an encodable column; a DomainError for a numeric column without bins.

        >>> Column("Age", "integer", lower=0, upper=99).n_codes
        100
        """
        size = self.size
        if size is None:
            raise DomainError(
                f"column {self.name!r} is numeric without bins, so it has no codes",
                "give it 'bins:' in the domain file, or leave it out with --columns",
            )
        return size

    def clip_statement(self) -> str | None:
        """The release's line for a clipped column (from the domain alone), or None."""
        if not self.clip:
            return None
        lower, upper = self.bounds
        return (
            f"{self.name}: values outside [{_number_text(lower)}, {_number_text(upper)}] set to the "
            "nearest bound (top/bottom-coding declared in the domain)"
        )

    def integer_bin_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """For a binned integer column: the least and greatest integer of each bin."""
        edges = np.asarray(self.bins, dtype=float)
        low = np.ceil(edges[:-1])
        high = np.ceil(edges[1:]) - 1  # greatest integer strictly below the next edge
        high[-1] = math.floor(edges[-1])  # the last bin also holds upper
        return low.astype(np.int64), high.astype(np.int64)

    # -- checks ---------------------------------------------------------------------------------

    def _check_missing(self, where: str) -> None:
        """A code may be neither a category nor inside the bounds: a value equal to it would match twice."""
        assert self.missing is not None, "called for columns with missing states"
        if not isinstance(self.missing, Missing):
            raise DomainError(f"{where} has missing: {self.missing!r}", "declare missing: with empty:, codes: or pooled:")
        for code, _ in self.missing.codes:
            if self.is_categorical:
                clash = next((c for c in self.levels if _same_value(code, c)), None)
                if clash is not None:
                    raise DomainError(
                        f"{where} declares {code!r} both as a category ({clash!r}) and as a missing code, so a value "
                        f"{code} would be both",
                        "remove it from the categories, or from missing: codes",
                    )
            elif not isinstance(code, str):
                lower, upper = self.bounds
                if lower <= code <= upper:
                    raise DomainError(
                        f"{where} declares the missing code {code!r}, which lies inside its bounds "
                        f"[{_number_text(lower)}, {_number_text(upper)}], so a value {code} would be both a value and a state",
                        "use a code outside the bounds (e.g. a negative one for counts and amounts), or narrow the bounds",
                    )
        if (self.value_size or 0) + self.missing.n_states > MAX_CODES:
            raise too_many_codes(where, (self.value_size or 0) + self.missing.n_states, "codes", "declare fewer codes")

    def _check_categories(self, where: str) -> None:
        cats = self.categories
        if not isinstance(cats, tuple) or len(cats) == 0:
            raise DomainError(f"{where} ({self.kind}) has no categories", "list them under 'categories:'")
        if len(cats) > MAX_CODES:
            raise too_many_codes(
                where,
                len(cats),
                "categories",
                "group the categories into fewer (e.g. by a prefix), or leave the column out with --columns",
            )
        flag = next((c for c in cats if isinstance(c, bool)), None)
        if flag is not None:
            # YAML 1.1 reads unquoted yes/no, on/off, true/false (any case) as booleans.
            raise DomainError(
                f"{where} has the category {str(flag).lower()}, which YAML read as a boolean (from an unquoted "
                "yes/no, on/off or true/false)",
                "quote such categories in the domain file, e.g. categories: ['yes', 'no']",
            )
        if any(c is None for c in cats):
            raise DomainError(
                f"{where} has an empty category (YAML reads an unquoted ~, null or nothing as empty)",
                "quote it, e.g. 'null', or remove it",
            )
        if any(isinstance(c, (Mapping, list, tuple, set)) for c in cats):
            raise DomainError(f"{where} has a category that is a list or mapping", "list numbers or strings")
        odd = next((c for c in cats if not (isinstance(c, (str, int, np.integer)) or (_is_number(c) and math.isfinite(c)))), None)
        if odd is not None:  # a date or bytes would be matched and written by its text, which is not what was declared
            what = "a number that is not finite" if _is_number(odd) else f"a {type(odd).__name__}"
            raise DomainError(
                f"{where} has the category {odd!r}, {what}: a category is a finite number or a text",
                "write it as text (quote it in the domain file, e.g. '2020-01-31')",
            )
        if self.labels is not None and not isinstance(self.labels, tuple):
            raise DomainError(f"{where} has labels that are not a list", "give a list of labels, one per category")
        keys = [_category_key(c) for c in cats]
        texts = [str(int(c)) if isinstance(c, float) and c.is_integer() else str(c) for c in cats]
        if len(set(keys)) != len(keys) or len(set(texts)) != len(texts):
            raise DomainError(f"{where} lists a category twice", "make each category appear once")
        if self.labels is not None and len(self.labels) != len(cats):
            raise DomainError(
                f"{where} has {len(self.labels)} labels for {len(cats)} categories",
                "give one label per category or none",
            )
        if self.lower is not None or self.upper is not None or self.bins is not None:
            raise DomainError(f"{where} is {self.kind} but has bounds or bins", "remove them or change the kind")

    def _check_bounds(self, where: str) -> None:
        lower, upper = self.lower, self.upper
        if lower is None or upper is None or not (_is_number(lower) and _is_number(upper)):
            raise DomainError(
                f"{where} ({self.kind}) needs numeric public bounds 'lower' and 'upper'",
                "declare them from public knowledge, never from the confidential data",
            )
        if not (math.isfinite(lower) and math.isfinite(upper)) or lower >= upper:
            raise DomainError(f"{where} has bounds [{lower}, {upper}]", "give finite bounds with lower < upper")
        if self.kind == "integer" and not (float(lower).is_integer() and float(upper).is_integer()):
            raise DomainError(f"{where} is integer with non-integer bounds", "give whole-number bounds")
        if self.categories is not None or self.labels is not None:
            raise DomainError(f"{where} is {self.kind} but lists categories", "remove them or make it categorical")
        if self.bins is not None:
            edges = np.asarray(self.bins, dtype=float)
            if edges.size < 2 or edges[0] != self.lower or edges[-1] != self.upper or np.any(np.diff(edges) <= 0):
                raise DomainError(
                    f"{where} has bin edges that do not rise strictly from lower to upper",
                    f"give edges from {self.lower} to {self.upper} or a bin count",
                )
            if self.kind == "integer":
                low, high = self.integer_bin_ranges()
                if np.any(low > high):
                    raise DomainError(f"{where} has a bin that holds no whole number", "widen or merge its bins")


def _edges(name: str, kind: str, lower: Any, upper: Any, bins: Any) -> tuple[float, ...]:
    """Bin edges from a count (equal widths over [lower, upper]) or an explicit list."""
    if isinstance(bins, bool) or not isinstance(bins, (int, list, tuple)):
        raise DomainError(f"column {name!r} has bins {bins!r}", "give a bin count or a list of edges")
    if isinstance(bins, int):
        if bins < 1:
            raise DomainError(f"column {name!r} asks for {bins} bins", "give at least one bin")
        if bins > MAX_CODES:  # refused before the edges are made (10**9 of them would take 8 GB)
            raise too_many_codes(f"column {name!r}", bins, "bins", "give it fewer, wider bins")
        if not (_is_number(lower) and _is_number(upper)):
            return (bins,)  # bounds are reported by the column's own check
        return tuple(float(e) for e in np.linspace(float(lower), float(upper), bins + 1))
    if len(bins) - 1 > MAX_CODES:
        raise too_many_codes(f"column {name!r}", len(bins) - 1, "bins", "give it fewer, wider bins")
    if not all(_is_number(e) for e in bins):
        raise DomainError(f"column {name!r} has a bin edge that is not a number", "list numbers only")
    return tuple(float(e) for e in bins)


def _number_text(x: float) -> str:
    """A bound as written: whole numbers without '.0', others in full (repr)."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**63 else repr(x)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _category_key(c: Any) -> Any:
    return float(c) if _is_number(c) else str(c)


def _same_value(code: Any, category: Any) -> bool:
    """Whether some data value would match both the missing code and the category: the same
    number, the same text, or a number against a text category that reads as that number."""
    if isinstance(code, str):
        text = str(int(category)) if isinstance(category, float) and category.is_integer() else str(category)
        return text == code
    if _is_number(category):
        return float(category) == code_key(code)
    return reads_as_number(str(category)) and float(str(category)) == code_key(code)
