r"""DPSyn's encoding of the NIST 2020 sprint-2 schema, derived from the public data set alone.

S-002, "Exacting Information from the Public Dataset" (Li, Li & Wang; METHODS.md §4.2; the
configuration the team submitted, ``config/data.yaml`` @7d7bf0d): before any measurement, numeric
attributes are binned and attributes that go together are merged into one, whose values are the
combinations *that appear in the public data set*, "to get rid of some values that never appear
so that the noise is reduced". Encoded, the public and the confidential data have the same,
smaller columns; a release in them is decoded back to the original columns.

The three steps of a :class:`Spec`, in this order:

1. **Bins** (right-closed, as the challenge code and its scoring cut them):
   ``(−∞, e₀], (e₀, e₁], …, (e_last, ∞)``. :data:`NIST2020`: AGE at 20, 25, …, 100; INCTOT,
   INCWAGE, INCWELFR, INCINVST, INCEARN at 0, 5,000, …, 100,000; POVERTY, HHWT, PERWT at 0, 20, …,
   500; DEPARTS and ARRIVES (HHMM) at every quarter hour. The edges are the spec's, public.
2. **Merges**: the columns of a group become one column whose categories are the distinct
   combinations of the *public* data set (joined by :data:`SEPARATOR`), in the order of the
   schema's values. :data:`NIST2020` (the submitted code): SEX+MARST; HINS-COV (HCOVANY,
   HCOVPRIV, HINSEMP, HINSCAID, HINSCARE); EMP (EMPSTATD, WORKEDYR, WRKLSTWK); ABS+LOOK (ABSENT,
   LOOKING); AVA+RECAL (AVAILBLE, WRKRECAL).
3. **Determined** columns (EMPSTAT and LABFORCE, functions of EMPSTATD) are dropped; decoding
   restores them by the map the public data set shows (refused if it shows no function).

Every other column keeps the categories the schema lists (``parameters.json``; PUMA's 181 codes,
YEAR 2012–2018, …). The result for the sprint-2 schema under :data:`NIST2020` has 24 columns, 22
besides PUMA and YEAR, so 22 one-way and 231 two-way marginals. The write-up counts 25, 23 and
253: it encodes EMPSTATD alone and WORKEDYR+WRKLSTWK "into one with 28 values", which cannot be,
4 × 4 being 16; the 28 are the code's EMPSTATD+WORKEDYR+WRKLSTWK triples.
:data:`NIST2020_WRITE_UP` is the write-up's grouping (EMPSTATD alone, with the values the public
data show, and WORKEDYR+WRKLSTWK), which gives its 25, 23 and 253.

**Departure from the code.** The code encodes the *private* file's PUMA by the values that file
holds (``recode_remain``: ``data[attr].unique()``), a domain read off the confidential data;
here PUMA, as every column, takes its categories from the schema or the public data set only.

**Privacy.** :func:`derive` reads the public data set and the public schema, nothing else: the
encoding (bins, categories, the maps of determined columns) is public. :meth:`Encoding.encode`
maps each record on its own (bins, joins, dropped columns): two data sets that differ in one
individual's records differ, encoded, in at most those records, a transformation of stability 1
(McSherry 2009, "Privacy integrated queries", §2: a mechanism ε-DP — or (ε, δ)-DP, ρ-zCDP — on the
output of a 1-stable transformation is so on its input). A guarantee dipsy states for the encoded
data therefore holds for the original data under the same neighbouring relation (add/remove one
record, or one individual of θ records). Nothing is computed from the confidential data: a
confidential record whose combination the public data set never shows is encoded all the same,
and the domain (:meth:`Encoding.domain`) then calls it invalid — dipsy refuses the file, naming
the column, or with ``on_invalid=drop`` drops the record, again record by record. Decoding
(:meth:`Encoding.decode`) is post-processing of the release.

>>> import pandas as pd
>>> schema = {"SEX": {"values": [1, 2]}, "MARST": {"values": [1, 2, 6]}, "AGE": {"min": 0, "max": 135}}
>>> spec = Spec("demo", bins=(("AGE", (20, 40)),), merges=(("SEX+MARST", ("SEX", "MARST")),))
>>> public = pd.DataFrame({"SEX": ["1", "2", "2"], "MARST": ["6", "1", "6"], "AGE": ["19", "33", "70"]})
>>> enc = derive(public, schema, spec)
>>> enc.categories["SEX+MARST"], enc.categories["AGE"]
(('1+6', '2+1', '2+6'), ('0', '1', '2'))
>>> enc.encode(pd.DataFrame({"SEX": [2], "MARST": [6], "AGE": [40]})).to_dict("records")
[{'SEX+MARST': '2+6', 'AGE': '1'}]
>>> enc.decode(pd.DataFrame({"SEX+MARST": ["2+6"], "AGE": ["2"]})).to_dict("records")
[{'SEX': '2', 'MARST': '6', 'AGE': 41}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...domain import Column, Domain
from ...errors import DataError, DipsyError

#: Joins the values of merged columns into one category (no schema value holds it).
SEPARATOR = "+"


def steps(start: int, stop: int, step: int) -> tuple[int, ...]:
    """Edges ``start, start + step, …`` below ``stop`` (the config's ``[start, stop, step]``).

    >>> steps(20, 105, 5)[:3], steps(20, 105, 5)[-1], len(steps(20, 105, 5))
    ((20, 25, 30), 100, 17)
    """
    return tuple(range(start, stop, step))


def clock(minutes: Sequence[int]) -> tuple[int, ...]:
    """HHMM edges at the given minutes of every hour (DEPARTS, ARRIVES).

    >>> clock((0, 30))[:4], len(clock((0, 15, 30, 45)))
    ((0, 30, 100, 130), 96)
    """
    return tuple(h * 100 + m for h in range(24) for m in minutes)


@dataclass(frozen=True)
class Spec:
    """What to bin, merge and drop: public choices, the same for every data set.

    Attributes
    ----------
    name
        The spec's name.
    bins
        ``(column, edges)``: the column becomes its right-closed bin, ``(−∞, e₀]`` is ``"0"``,
        ``(e_{k−1}, e_k]`` is ``"k"``, ``(e_last, ∞)`` is ``str(len(edges))``.
    merges
        ``(new column, columns)``: the columns become one, whose categories are the
        combinations the public data set shows.
    determined
        ``(column, by)``: the column is a function of ``by`` (in the public data set), dropped
        when encoding and restored when decoding.
    drop
        Columns left out when present (the challenge's ``sim_individual_id``).
    """

    name: str
    bins: tuple[tuple[str, tuple[float, ...]], ...] = ()
    merges: tuple[tuple[str, tuple[str, ...]], ...] = ()
    determined: tuple[tuple[str, str], ...] = ()
    drop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for column, edges in self.bins:
            if not edges or any(b <= a for a, b in zip(edges, edges[1:])):
                raise DipsyError(f"the bins of {column!r} are not increasing", "give increasing edges")
        named = [c for c, _ in self.bins] + [c for _, cs in self.merges for c in cs] + [c for c, _ in self.determined]
        twice = sorted({c for c in named if named.count(c) > 1})
        if twice:
            raise DipsyError(
                f"column(s) {twice} appear in more than one step of the encoding", "bin, merge or drop a column once"
            )

    def encoded_names(self, columns: Sequence[str]) -> tuple[str, ...]:
        """The encoded columns of data with ``columns``, in their order (a merge where its first column was).

        >>> NIST2020.encoded_names(["PUMA", "SEX", "MARST", "EMPSTAT", "AGE"])
        ('PUMA', 'SEX+MARST', 'AGE')
        """
        first = {cs[0]: new for new, cs in self.merges}
        gone = {c for _, cs in self.merges for c in cs[1:]} | {c for c, _ in self.determined} | set(self.drop)
        return tuple(first.get(c, c) for c in columns if c not in gone)


_INCOME = steps(0, 105_000, 5_000)
_SMALL = steps(0, 520, 20)
_QUARTERS = clock((0, 15, 30, 45))
_BINS: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("AGE", steps(20, 105, 5)),
    *((c, _INCOME) for c in ("INCTOT", "INCWAGE", "INCWELFR", "INCINVST", "INCEARN")),
    *((c, _SMALL) for c in ("POVERTY", "HHWT", "PERWT")),
    ("DEPARTS", _QUARTERS),
    ("ARRIVES", _QUARTERS),
)
_INSURANCE = ("HINS-COV", ("HCOVANY", "HCOVPRIV", "HINSEMP", "HINSCAID", "HINSCARE"))
_DETERMINED = (("EMPSTAT", "EMPSTATD"), ("LABFORCE", "EMPSTATD"))

#: The encoding the team submitted (``config/data.yaml`` @7d7bf0d; METHODS.md §4.2).
NIST2020 = Spec(
    "nist2020",
    _BINS,
    (
        ("SEX+MARST", ("SEX", "MARST")),
        _INSURANCE,
        ("EMP", ("EMPSTATD", "WORKEDYR", "WRKLSTWK")),
        ("ABS+LOOK", ("ABSENT", "LOOKING")),
        ("AVA+RECAL", ("AVAILBLE", "WRKRECAL")),
    ),
    _DETERMINED,
    ("sim_individual_id",),
)

#: The write-up's grouping (S-002): EMPSTATD alone (with the values the public data show) and
#: WORKEDYR+WRKLSTWK, the rest as :data:`NIST2020`: 25 columns, 23 besides PUMA and YEAR.
NIST2020_WRITE_UP = Spec(
    "nist2020-write-up",
    _BINS,
    (
        ("SEX+MARST", ("SEX", "MARST")),
        _INSURANCE,
        ("EMPSTATD", ("EMPSTATD",)),
        ("WORKEDYR+WRKLSTWK", ("WORKEDYR", "WRKLSTWK")),
        ("ABS+LOOK", ("ABSENT", "LOOKING")),
        ("AVA+RECAL", ("AVAILBLE", "WRKRECAL")),
    ),
    _DETERMINED,
    ("sim_individual_id",),
)

SPECS = {s.name: s for s in (NIST2020, NIST2020_WRITE_UP)}


def load_schema(path: str | Path) -> dict[str, Any]:
    """The ``schema`` of a challenge ``parameters.json`` (public): column → ``values`` or bounds."""
    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        raise DipsyError(f"{path} has no 'schema' mapping", "pass the challenge's parameters.json")
    return dict(spec["schema"])


def texts(values: pd.Series) -> pd.Series:
    """Each value as text (whole numbers without a decimal point); missing values as ``""``."""
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return values.astype("string").str.strip().fillna("").astype(object)
    numbers = values.astype(float)
    whole = numbers.notna() & np.isfinite(numbers) & (numbers == np.round(numbers))
    out = numbers.astype(str).astype(object)
    out[whole] = numbers[whole].astype(np.int64).astype(str)
    out[numbers.isna()] = ""
    return out


def bin_codes(values: pd.Series, edges: Sequence[float]) -> pd.Series:
    """The right-closed bin of each value (text ``"0"``…``str(len(edges))``; ``""`` when missing)."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    codes = np.searchsorted(np.asarray(edges, dtype=float), numbers, side="left").astype(str).astype(object)
    codes[np.isnan(numbers)] = ""
    return pd.Series(codes, index=values.index, dtype=object)


def bin_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """``("(-inf, e0]", "(e0, e1]", …, "(e_last, inf)")``."""

    def num(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else str(x)

    inner = [f"({num(a)}, {num(b)}]" for a, b in zip(edges, edges[1:])]
    return (f"(-inf, {num(edges[0])}]", *inner, f"({num(edges[-1])}, inf)")


@dataclass(frozen=True)
class Encoding:
    """An encoding derived by :func:`derive`: the spec, the original and encoded columns, each
    encoded column's categories (text), and the maps that restore determined columns."""

    spec: Spec
    columns: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]]
    restore: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The encoded columns, in order."""
        return self.spec.encoded_names(self.columns)

    def encode(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (public or confidential) in the encoded columns, each value as text.

        Record by record (see the module docstring: stability 1); a combination or value outside
        :attr:`categories` is kept as it is, for the domain to call invalid."""
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise DataError(f"the data lack column(s) {missing} of the encoding", "encode data of the schema's columns")
        bins, merges = dict(self.spec.bins), dict(self.spec.merges)
        out = {}
        for name in self.names:
            if name in bins:
                out[name] = bin_codes(frame[name], bins[name])
            elif name in merges:
                parts = [texts(frame[c]) for c in merges[name]]
                joined = parts[0].copy()
                for part in parts[1:]:
                    joined = joined + SEPARATOR + part
                empty = np.logical_or.reduce([p.eq("").to_numpy() for p in parts])
                joined[empty] = ""  # a missing part: missing, invalid in the domain
                out[name] = joined
            else:
                out[name] = texts(frame[name])
        return pd.DataFrame(out, index=frame.index)

    def decode(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Encoded records (a release) back in the original columns.

        A bin decodes to a value inside it: its upper edge, or the last edge + 1 for the open top
        bin (the challenge scored binned values, by the same edges); merged columns split; a
        determined column follows the public data's map (missing for a value the map lacks)."""
        bins, merges = dict(self.spec.bins), dict(self.spec.merges)
        values: dict[str, pd.Series] = {}
        for name in self.names:
            column = texts(frame[name])
            if name in bins:
                edges = np.asarray(bins[name], dtype=float)
                top = np.append(edges, edges[-1] + 1)
                codes = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
                ok = ~np.isnan(codes)
                decoded = np.full(len(column), np.nan)
                decoded[ok] = top[codes[ok].astype(np.int64)]
                whole = all(float(e).is_integer() for e in edges)
                values[name] = pd.Series(decoded, index=frame.index).astype("Int64" if whole else float)
            elif name in merges:
                split = column.str.split(SEPARATOR, regex=False, expand=True).reindex(columns=range(len(merges[name])))
                for i, c in enumerate(merges[name]):
                    values[c] = split[i].astype(object)
            else:
                values[name] = column
        for c, by in self.spec.determined:
            if c in self.columns:
                values[c] = values[by].map(dict(self.restore[c])).astype(object)
        return pd.DataFrame({c: values[c] for c in self.columns if c in values}, index=frame.index)

    def domain(self, name: str = "", roles: Mapping[str, str] | None = None) -> Domain:
        """The encoded columns as a dipsy domain (every one categorical; bins labelled by their
        intervals): the domain file to synthesize the encoded data with. ``roles`` sets a
        column's role (default sensitive)."""
        bins, merges = dict(self.spec.bins), dict(self.spec.merges)
        columns = []
        for n in self.names:
            if n in bins:
                about, labels = f"{n} in right-closed bins (encoding {self.spec.name})", bin_labels(bins[n])
            elif n in merges:
                about = (
                    f"{' and '.join(merges[n])}, merged: the combinations the public data show (encoding {self.spec.name})"
                    if len(merges[n]) > 1
                    else f"{n}: the values the public data show (encoding {self.spec.name})"
                )
                labels = None
            else:
                about, labels = f"{n}: the schema's values", None
            columns.append(
                Column(
                    n,
                    "categorical",
                    categories=self.categories[n],
                    labels=labels,
                    role=(roles or {}).get(n, "sensitive"),
                    description=about,
                )
            )
        return Domain(
            tuple(columns),
            name or self.spec.name,
            f"DPSyn's encoding {self.spec.name} (S-002), derived from a public data set and its schema",
        )


def derive(public: pd.DataFrame, schema: Mapping[str, Mapping[str, Any]], spec: Spec = NIST2020) -> Encoding:
    """The encoding of ``spec`` for data of ``public``'s columns, from ``public`` and ``schema`` only.

    Parameters
    ----------
    public
        The public data set (read in full: it is public). Never the confidential data.
    schema
        Column → ``{"values": [...]}`` (the challenge's ``parameters.json`` ``schema``; see
        :func:`load_schema`): the categories of every column that is neither binned nor merged,
        and the values each merged column's parts may take.
    spec
        :data:`NIST2020` (the submitted code's, default), :data:`NIST2020_WRITE_UP`, or another.

    Raises
    ------
    DipsyError
        A column of the spec or the schema is missing, a public value lies outside the schema,
        or a determined column is not a function of its ``by`` column in the public data.
    """
    columns = tuple(c for c in public.columns if c not in spec.drop)
    named = (
        [c for c, _ in spec.bins]
        + [c for _, cs in spec.merges for c in cs]
        + [b for c, b in spec.determined]
        + [c for c, _ in spec.determined]
    )
    missing = [c for c in named if c not in columns]
    if missing:
        raise DipsyError(
            f"the public data lack column(s) {missing} of encoding {spec.name!r}",
            "pass a public data set of the schema's columns",
        )
    bins, merges = dict(spec.bins), dict(spec.merges)
    merged = {c for cs in merges.values() for c in cs}
    determined = {c for c, _ in spec.determined}

    def values(c: str) -> tuple[str, ...]:
        entry = schema.get(c)
        if not isinstance(entry, Mapping) or "values" not in entry:
            raise DipsyError(
                f"the schema lists no values for column {c!r}", "give its values in the schema, or bin it in the encoding"
            )
        out = tuple(texts(pd.Series(list(entry["values"]))))
        if any(SEPARATOR in v for v in out) and c in merged:
            raise DipsyError(f"a value of {c!r} holds {SEPARATOR!r}, which joins merged values", "merge other columns")
        return out

    categories: dict[str, tuple[str, ...]] = {}
    text = {c: texts(public[c]) for c in merged | determined | {b for _, b in spec.determined}}
    for c in merged:
        allowed = values(c)
        outside = sorted(set(text[c]) - set(allowed))
        if outside:
            raise DipsyError(
                f"the public data hold value(s) {outside[:5]} of {c!r} that the schema does not list",
                "check the public data set against its schema",
            )
    for new, parts in spec.merges:
        order = [{v: i for i, v in enumerate(values(c))} for c in parts]
        seen = pd.DataFrame({c: text[c] for c in parts}).drop_duplicates().itertuples(index=False, name=None)
        combos = sorted(seen, key=lambda t: tuple(o[v] for o, v in zip(order, t)))
        categories[new] = tuple(SEPARATOR.join(t) for t in combos)
    for c in spec.encoded_names(columns):
        if c in bins:
            categories[c] = tuple(str(k) for k in range(len(bins[c]) + 1))
        elif c not in categories:
            categories[c] = values(c)
    restore: dict[str, dict[str, str]] = {}
    for c, by in spec.determined:
        pairs = pd.DataFrame({"by": text[by], "c": text[c]}).drop_duplicates()
        many = pairs["by"][pairs["by"].duplicated()]
        if len(many):
            raise DipsyError(
                f"{c!r} is not a function of {by!r} in the public data (e.g. {by} = {many.iloc[0]})",
                f"leave {c!r} out of the encoding's determined columns",
            )
        restore[c] = dict(zip(pairs["by"], pairs["c"]))
    for c, cats in categories.items():
        if not cats:
            raise DipsyError(
                f"encoded column {c!r} has no category (the public data set is empty?)", "pass a public data set with rows"
            )
    return Encoding(spec, columns, categories, restore)
