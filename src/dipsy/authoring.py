"""Writing a domain: a skeleton from a data file's metadata, every value left for the steward.

``dipsy domain init DATA`` writes the skeleton of a domain file for DATA: its column names and,
where the file declares them, its column types; every category list, bound and bin is the
placeholder ``TODO``, which :meth:`~dipsy.domain.Domain.load` refuses with each one named, so a
skeleton is never synthesized from.

Nothing is read from the data's values (design rule 1: the domain is public input). Of a CSV file
only the header line is read — its types would have to be inferred by parsing values, and a kind
guessed from them (are all incomes whole?) is a fact about the confidential data that the domain,
which every release carries, would then publish; so the steward declares each kind. Of a Parquet
file only the schema is read (the footer: names and declared types, never the statistics it may
also hold), and the kind follows the declared type.

Of an agency file (SAS, Stata, SPSS: :mod:`dipsy.engine.agency`) only the metadata is read — the
file's codebook, which init treats as public: each variable label becomes the column's
``description``; a column with a value-label set becomes categorical, its categories the labelled
codes and its ``labels`` their texts; the missing codes the file declares (SPSS's missing values,
Stata's and SAS's labelled lettered missing values ``.a``, ``.A``) become the column's ``missing:``
states, each a state of its own (a missing range, which cannot be listed code by code, is named in
a comment). A column without value labels follows its storage type, as for Parquet.

``--from-public FILE`` fills categories (the sorted distinct values) and bounds (least and
greatest values) from a file the steward declares public — a previous public release, a codebook
— read in full, since it is public; the domain records the file's name and SHA-256. Bins stay
for the steward: they are a modelling choice (see 'Writing a domain' in docs/guides/domain.md).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import itertools
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .domain import Column
from .domain.domain import TODO
from .domain.limits import MAX_CODES, check_width
from .engine.agency import READERS as AGENCY_FORMATS
from .engine.agency import Variable, file_metadata, letter_code, read_frame
from .engine.copies import copy_of
from .engine.files import AGENCY_NAMES, dedup_names, error_reason, file_format, unreadable_fix
from .engine.owner import RunFolder
from .errors import DataError, DipsyError, DomainError
from .interrupts import held
from .permissions import umask

#: The note on kinds a CSV skeleton carries (no type is read from a CSV file).
KIND_CHOICES = "categorical, ordinal, integer or numeric"


@dataclass(frozen=True)
class Skeleton:
    """A domain file's text, and what it leaves to fill.

    ``columns`` are the data's column names in order; ``todos`` counts the placeholders;
    ``public`` is the name of the public file values came from (None: none did).
    """

    text: str
    columns: tuple[str, ...]
    todos: int
    public: str | None = None


def init_domain(data: str | Path, public: str | Path | None = None) -> Skeleton:
    """The skeleton of a domain file for ``data`` (CSV, Parquet, SAS, Stata or SPSS), from its metadata only.

    Parameters
    ----------
    data
        The confidential data file. Of a CSV file only the header is read; of a Parquet file
        only the schema (names and declared types); of a SAS, Stata or SPSS file only the
        metadata (names, types, variable and value labels, declared missing codes), which is
        taken as public. No value of it is read or written.
    public
        A file the steward declares public (any of those formats): categories and bounds are
        filled from it, and its name and SHA-256 recorded in the domain's description.

    Returns
    -------
    Skeleton
        The YAML text (with comments that say what to fill and how), the columns, and how many
        ``TODO`` placeholders it holds.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = os.path.join(tmp, "d.csv")
    ...     _ = open(p, "w").write("Sex,Income\\nF,73519.25\\n")
    ...     s = init_domain(p)
    >>> s.columns, s.todos, "73519" in s.text
    (('Sex', 'Income'), 10, False)
    """
    data = Path(data)
    fmt = _checked_format(data, "data file")
    variables = {v.name: v for v in file_metadata(data)} if fmt in AGENCY_FORMATS else {}
    columns: list[tuple[str, str | None, str | None]]
    if variables:
        columns = [(v.name, _agency_kind(v), _agency_type(v)) for v in variables.values()]
    elif fmt in AGENCY_FORMATS:
        raise DataError(f"the {AGENCY_NAMES[fmt]} file {str(data)!r} has no columns", "pass the file that holds the data")
    else:
        columns = _csv_header(data) if fmt == "csv" else _parquet_schema(data)
    facts, digest = {}, None
    if public is not None:
        public = Path(public)
        same = copy_of(public, data)  # the same file or bytes (its rows are not compared: init reads no value of the data)
        if same:
            raise DipsyError(
                f"--from-public names {public.name}, which is the confidential data file {data.name} itself ({same}): "
                "its categories and exact ranges would go out with every release",
                "give a file that is really public (a previous public release, a public sample), or fill the TODOs by hand",
            )
        facts = _public_facts(public, [name for name, _, _ in columns])
        digest = _sha256(public)
    lines = _header(data, fmt, public, digest)
    todos = 0
    for name, kind, declared in columns:
        if name in variables:
            block, count = _agency_column(variables[name], kind, declared, facts.get(name), public is not None)
        else:
            block, count = _column(name, kind, declared, facts.get(name), public is not None)
        lines += block
        todos += count
    return Skeleton("\n".join(lines) + "\n", tuple(n for n, _, _ in columns), todos, public.name if public else None)


def write_skeleton(skeleton: Skeleton, path: str | Path, overwrite: bool = False) -> Path:
    """Write ``skeleton`` to ``path`` atomically (a temporary file beside it, then a rename).

    An existing file is refused unless ``overwrite``: a domain someone has filled in is work
    that a second ``init`` must not silently lose. A failure leaves nothing behind.
    """
    return write_text(skeleton.text, path, overwrite)


def write_text(
    text: str,
    path: str | Path,
    overwrite: bool = False,
    *,
    work: str | Path | None = None,
    on_placed: Callable[[], None] | None = None,
) -> Path:
    """Write a domain file's ``text`` to ``path`` atomically, as :func:`write_skeleton` does.

    The temporary file is made in ``work`` (the command's run folder beside ``path``), else beside
    ``path``; ``on_placed`` is called as the file reaches ``path``, with SIGINT and SIGTERM held.
    """
    path = Path(path)
    check_target(path, overwrite)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if work is None else work)
    except OSError as e:
        raise DipsyError(f"cannot write into {str(path.parent)!r} ({e.strerror})", "choose a writable --out") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~umask())  # as a release's own files get it
        with held():  # the rename and the note that the file is in place: never one without the other
            os.replace(tmp, path)
            if on_placed is not None:
                on_placed()
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class DomainFile:
    """The file a discovered domain is written to: the ``on_result`` of
    :func:`~dipsy.discovery_run.run_discovery`, by :func:`write_text` through ``work`` (the
    command's :class:`~dipsy.engine.owner.RunFolder`) when given. ``visible`` (and the run
    folder's ``placed``) turns True as the file reaches its place: a failure before that leaves
    nothing visible, and the discovery takes its spend back."""

    def __init__(self, path: str | Path, overwrite: bool = False, work: RunFolder | None = None) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.work = work
        self.visible = False

    def __call__(self, result: Any) -> Path:
        return write_text(
            result.text, self.path, self.overwrite, work=None if self.work is None else self.work.path, on_placed=self._placed
        )

    def _placed(self) -> None:
        self.visible = True
        if self.work is not None:
            self.work.placed = self.path


def check_target(path: str | Path, overwrite: bool = False) -> None:
    """Refuse a target that is a folder, is not a .yaml/.yml file, or exists (unless ``overwrite``)."""
    path = Path(path)
    if path.is_dir():
        raise DipsyError(f"--out {str(path)!r} is a folder", f"pass --out with a file path, e.g. {path / 'domain.yaml'}")
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise DipsyError(f"--out {str(path)!r} does not end in .yaml or .yml", "name the domain file e.g. domain.yaml")
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise DipsyError(f"{str(path)!r} already exists", "choose another --out, or pass --overwrite to replace it")


# -- the data's metadata -----------------------------------------------------------------------------


def _checked_format(path: Path, what: str) -> str:
    try:
        fmt = file_format(path, agency=True)
    except DataError as e:
        raise DataError(e.problem.replace("data file", what, 1), e.fix) from None
    if not path.exists():
        raise DataError(f"{what} {str(path)!r} does not exist", f"check the path of the {what}")
    if not path.is_file():
        raise DataError(f"{what} {str(path)!r} is not a file", "pass the path of a CSV, Parquet, SAS, Stata or SPSS file")
    return fmt


def _csv_header(path: Path) -> list[tuple[str, str | None, str | None]]:
    """The header's names as the engines read them (blank lines before it skipped, blank names
    'Unnamed: i', repeats 'a.1'). Lines are read and decoded one at a time, and only until the
    header's record ends (one line, unless a quoted name holds a line break): no value is read."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open

    def decoded(lines):
        for k, line in enumerate(lines):
            yield (line.removeprefix(b"\xef\xbb\xbf") if k == 0 else line).decode("utf-8")

    try:
        with opener(path, "rb") as f:
            lines = decoded(f)
            for line in lines:
                if line.strip(" \t\r\n"):
                    names = next(csv.reader(itertools.chain([line], lines)))
                    check_width(names, f"the header of {str(path)!r}")
                    _refuse_repeated_names(names, f"the header of {str(path)!r}")
                    return [(name, None, None) for name in dedup_names(names)]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as e:
        raise DataError(f"cannot read the header of CSV file {str(path)!r}: {error_reason(e)}", unreadable_fix("csv")) from None
    raise DataError(f"CSV file {str(path)!r} has no header row", "write the column names on its first line")


def _parquet_schema(path: Path) -> list[tuple[str, str | None, str | None]]:
    """Names and declared types from the schema (the file's footer); pandas' stored index, which
    the engines do not read as a column, is left out."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as e:
        raise DataError(f"cannot read Parquet file {str(path)!r}: {error_reason(e)}", unreadable_fix("parquet")) from None
    index = {c for c in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)}
    names = [f.name for f in schema if f.name not in index]
    check_width(names, f"the schema of {str(path)!r}")
    _refuse_repeated_names(names, f"the columns of {str(path)!r}")
    return [(f.name, _kind_of(f.type), str(f.type)) for f in schema if f.name not in index]


def _refuse_repeated_names(names: list[str], where: str) -> None:
    """Refuse a data file that names a column twice: the engines refuse it as data (which one would be
    read?), so a skeleton of it could never be used. Blank names are not repeats: they read as
    'Unnamed: i', each its own."""
    seen: set[str] = set()
    twice: set[str] = set()
    for name in names:
        if name and name in seen:
            twice.add(name)
        seen.add(name)
    if twice:
        raise DataError(
            f"{where} names {', '.join(map(repr, sorted(twice)))} more than once", "give each column of the data a distinct name"
        )


def _kind_of(dtype: pa.DataType) -> str | None:
    """The kind a declared Parquet type implies, or None when the steward must choose."""
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_boolean(dtype):
        return "boolean"
    if pa.types.is_integer(dtype):
        return "integer"
    if pa.types.is_floating(dtype) or pa.types.is_decimal(dtype):
        return "numeric"
    if (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or getattr(pa.types, "is_string_view", lambda t: False)(dtype)
    ):
        return "categorical"
    return None


# -- a public file's facts ----------------------------------------------------------------------------


def _public_facts(path: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    """For each column of ``names`` the public file holds: its kind and categories or bounds."""
    fmt = _checked_format(path, "public file")
    try:  # public data: read whole, as the methods read public files
        if fmt in AGENCY_FORMATS:
            frame = _letters_missing(read_frame(path), file_metadata(path))  # codes, not labels
        else:
            frame = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException) as e:
        raise DataError(f"cannot read the public file {str(path)!r} ({error_reason(e)})", "pass a CSV or Parquet file") from None
    shared = [n for n in names if n in frame.columns]
    if not shared:
        raise DataError(
            f"the public file {path.name!r} has none of the data's columns ({', '.join(names[:5])}{', …' if len(names) > 5 else ''})",
            "pass a public file whose columns are named as the data's",
        )
    return {name: _facts(frame[name]) for name in shared}


def _letters_missing(frame: pd.DataFrame, variables: list[Variable]) -> pd.DataFrame:
    """A public agency file's numeric columns as numbers: a column that holds Stata's or SAS's
    lettered missing values is text in the engines' copy (``"3"``, ``".a"``:
    :mod:`dipsy.engine.agency`), and a letter is a missing state, never a category or a bound,
    so it reads here as missing, as an empty cell does."""
    for v in variables:
        if v.stored != "string" and v.name in frame.columns and _is_text(frame[v.name]):
            frame[v.name] = pd.to_numeric(frame[v.name], errors="coerce")
    return frame


def _is_text(values: pd.Series | pd.DataFrame) -> bool:
    """Whether a column's values are all text (a DataFrame: a name the file repeats, left to :func:`_facts`)."""
    return isinstance(values, pd.Series) and pd.api.types.infer_dtype(values, skipna=True) == "string"


def _facts(values: pd.Series) -> dict[str, Any]:
    """Kind and categories (sorted distinct values) or bounds (least, greatest) of a public column."""
    if isinstance(values, pd.DataFrame):  # a name the public file repeats
        return {"problem": "the public file names this column more than once"}
    present = values.dropna()
    if len(present) == 0:
        return {"problem": "the public file holds no value of this column"}
    if pd.api.types.is_bool_dtype(present.dtype):
        return {"kind": "categorical", "categories": ["False", "True"]}
    if pd.api.types.is_numeric_dtype(present.dtype):
        v = present.to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if v.size == 0:
            return {"problem": "the public file holds no finite value of this column"}
        whole = bool(np.all(v == np.floor(v)) and np.all(np.abs(v) < 2**53))
        lower, upper = (int(v.min()), int(v.max())) if whole else (float(v.min()), float(v.max()))
        distinct = np.unique(v)
        facts = {
            "kind": "integer" if whole else "numeric",
            "lower": lower,
            "upper": upper,
            "categories": [int(x) if whole else float(x) for x in distinct] if distinct.size <= MAX_CODES else None,
        }
        if lower == upper:
            facts["problem"] = f"the public file holds the single value {_scalar(lower)}: bounds need lower < upper"
        return facts
    texts = sorted({str(x) for x in present})
    if len(texts) > MAX_CODES:
        return {"problem": f"the public file holds {len(texts):,} distinct values, more than the {MAX_CODES:,} a column may have"}
    return {"kind": "categorical", "categories": texts}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- the text -----------------------------------------------------------------------------------------


def _header(data: Path, fmt: str, public: Path | None, digest: str | None) -> list[str]:
    if fmt == "csv":
        source = (
            f"# Domain skeleton for {data.name}, written by 'dipsy domain init' from its header line only:\n"
            "# no value of the data was read, so every kind is TODO as well."
        )
    elif fmt in AGENCY_FORMATS:
        source = (
            f"# Domain skeleton for {data.name}, written by 'dipsy domain init' from its {AGENCY_NAMES[fmt]} metadata\n"
            "# only: column names, storage types, variable labels (each column's description), value labels\n"
            "# (categories and their labels) and declared missing values (missing:). init treats this\n"
            "# metadata as public, the file's codebook, and read no value of the data. Check that it is: a\n"
            "# label set written from the data (say, every employer's name) would go out with every release."
        )
    else:
        source = (
            f"# Domain skeleton for {data.name}, written by 'dipsy domain init' from its Parquet schema only\n"
            "# (column names and declared types): no value of the data was read."
        )
    lines = source.splitlines() + [
        "# Fill every TODO from public knowledge (a codebook, a previous public release, the survey's",
        "# documentation), never from the confidential data: the domain is published with every release.",
        "# dipsy refuses this file, naming each TODO, until none is left; delete the lines that do not",
        "# apply to a column's kind.",
        "#",
        "# kind: categorical (listed categories) | ordinal (categories in order) | integer (whole numbers",
        "#   in [lower, upper]) | numeric (real numbers in [lower, upper]; bins to count them).",
        "# categories: quote text, above all yes/no, on/off, true/false and codes with leading zeros:",
        "#   ['yes', 'no'], ['01', '02']. Unquoted, YAML reads yes as a boolean and 010 as the number 8.",
        "# bins: a count (equal widths) or edges from lower to upper; for a skewed column (wages,",
        "#   incomes) log-spaced edges, e.g. [0, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000]",
        "#   with clip: true at the top.",
        "# clip: true sets values outside [lower, upper] to the nearest bound (top/bottom-coding); the",
        "#   release states it. Without it such values are errors.",
        "# role: sensitive (the default) or public. A column leaves a release unchanged only if it is",
        "#   declared public (rdt's public attributes, the pseudo-posterior's predictors); no other method",
        "#   releases any column as it is.",
    ]
    if public is not None:
        lines += [
            "#",
            f"# Categories and bounds come from the public file {public.name}, its distinct values and its",
            "# least and greatest values (SHA-256 of the file, recorded in the description:",
            f"# {digest}). Check them: a public sample's range may be narrower than the",
            "# confidential data's (rows outside are errors unless clip: true).",
        ]
    lines.append("")
    if public is not None:
        lines.append(
            "description: "
            + _scalar(f"categories and bounds from the public file {public.name} (SHA-256 {digest}), by dipsy domain init")
        )
    lines.append("columns:")
    return lines


def _column(
    name: str,
    kind: str | None,
    declared: str | None,
    facts: dict[str, Any] | None,
    from_public: bool,
    source: str = "the schema's type",
) -> tuple[list[str], int]:
    """One column's entry and its number of TODOs (``source``: what ``declared`` is, in the notes)."""
    out = [f"  {_scalar(name)}:"]
    todos = 0

    def field(key: str, value: str, note: str = "") -> None:
        nonlocal todos
        todos += value == TODO
        text = f"    {key}: {value}"
        out.append(f"{text:<34}# {note}" if note else text)

    problem = None
    if from_public:
        if facts is None:
            problem = "not in the public file"
        elif "problem" in facts:
            problem = facts["problem"]
    if problem:
        out.append(f"    # {problem}")
    usable = facts if facts is not None and not problem else None
    if kind == "boolean":
        field("kind", "categorical", f"{source} ({declared}): its two values, as text")
        field("categories", "['False', 'True']")
    elif kind is None and usable is None:
        field("kind", TODO, KIND_CHOICES + (f" ({source}, {declared}, has no kind)" if declared else ""))
        field("categories", TODO, "categorical or ordinal: the list, e.g. [1, 2] or ['yes', 'no']")
        field("lower", TODO, "integer or numeric: the public least value")
        field("upper", TODO, "integer or numeric: the public greatest value")
        field("bins", TODO, "numeric: a count or edges; optional for integer")
        out.append(f"{'    # clip: true':<34}# integer or numeric: top/bottom-coding at lower, upper")
    else:
        if kind:
            chosen = kind
        else:
            assert usable is not None  # the branch above took every column with neither a kind nor usable facts
            chosen = usable["kind"]
        why = f"{source} ({declared})" if kind else "the public file's values"
        if kind == "integer" and usable is not None and usable["kind"] == "numeric":
            usable, problem = None, "the public file's values are not whole numbers"
            out.append(f"    # {problem}")
        if chosen == "categorical":
            cats = None if usable is None else usable.get("categories")
            field("kind", "categorical", f"from {why}; or ordinal, categories in order")
            if usable is not None and cats is None:
                out.append("    # the public file holds too many distinct values to list")
            field(
                "categories",
                TODO if cats is None else "[" + ", ".join(_scalar(c) for c in cats) + "]",
                "" if cats is not None else "the list, e.g. [1, 2] or ['yes', 'no']",
            )
        else:
            if kind and usable is not None and usable["kind"] == "categorical":
                usable = None
                out.append("    # the public file's values are not numbers")
            field("kind", chosen, f"from {why}" + ("; or categorical, if the numbers are codes" if chosen == "integer" else ""))
            field("lower", TODO if usable is None else _scalar(usable["lower"]), "" if usable else "the public least value")
            field("upper", TODO if usable is None else _scalar(usable["upper"]), "" if usable else "the public greatest value")
            if chosen == "numeric":
                field("bins", TODO, "a count or edges; log-spaced if skewed")
            else:
                out.append(f"{'    # bins: 10':<34}# optional: a count or edges")
            out.append(f"{'    # clip: true':<34}# top/bottom-coding at lower, upper")
    field("role", "sensitive", "or public: may be released as it is")
    return out, todos


#: Display formats of dates, date-times and times (SAS, SPSS, Stata): pyreadstat reads such columns
#: as dates or times, which no kind holds, so their kind is the steward's to choose (or to leave out).
_TEMPORAL = re.compile(r"DATE|TIME|DT|YY|MMDD|DDMM|MDY|DMY|YMD|HHMM|TOD|JUL|MON|QTR|WEEK|^%-?t|^%-?d", re.IGNORECASE)


def _agency_kind(v: Variable) -> str | None:
    """The kind an agency file's column takes from its metadata: categorical for text and for a
    column with value labels, integer for Stata's integer types, numeric for other numbers, and
    none (TODO) for dates and times."""
    if v.stored == "string":
        return "categorical"
    if _TEMPORAL.search(v.display):
        return None
    if _labelled(v)[0]:
        return "categorical"
    return "integer" if v.stored in ("int8", "int16", "int32") else "numeric"


def _agency_type(v: Variable) -> str:
    """The column's storage type and display format, as the notes name them."""
    return f"{v.stored}, shown as {v.display}" if v.display else v.stored


def _labelled(v: Variable) -> tuple[list[Any], list[str], list[str]]:
    """The labelled codes of ``v`` that its values can hold (in order), their labels, and the
    letters of labelled lettered missing values (Stata's ``.a``, SAS's ``.A``: no number, so
    never among the values). A text column labelled with numbers is refused: its values are text,
    and dipsy matches them against text categories."""
    if not v.value_labels:
        return [], [], []
    if v.stored == "string":
        odd = [k for k in v.value_labels if not isinstance(k, str)]
        if odd:
            raise DataError(
                f"column {v.name!r} holds text, and the file labels the numbers {', '.join(map(repr, odd[:3]))} in it: "
                "no text value of the column can match them",
                "remove those value labels in the program that wrote the file, or write the column's categories by hand",
            )
        pairs = sorted(v.value_labels.items())
    else:
        pairs = sorted(
            (_code(k), str(label))
            for k, label in v.value_labels.items()
            if isinstance(k, (int, float, np.integer, np.floating)) and not isinstance(k, bool) and math.isfinite(k)
        )
    letters = sorted(str(k) for k in v.value_labels if isinstance(k, str) and v.stored != "string")
    codes, labels = [c for c, _ in pairs], [str(label) for _, label in pairs]
    if codes:
        try:  # the domain's own rules: the file's label set must make a column dipsy can load
            Column(v.name, "categorical", categories=tuple(codes), labels=tuple(labels))
        except DomainError as e:
            raise DataError(
                f"the value labels of column {v.name!r} cannot be its categories: {e.problem}",
                "correct the label set in the program that wrote the file, or write the column's categories by hand",
            ) from None
    return codes, labels, letters


def _code(x: Any) -> int | float:
    """A numeric code as the domain file writes it: a whole number as an integer (SPSS stores 1 as 1.0)."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _declared_missing(v: Variable, letters: list[str]) -> tuple[list[str], set]:
    """The ``missing:`` entry of ``v`` from the missing values the file declares, and the codes it
    takes out of the categories (a code is a state or a category, never both).

    SPSS's discrete missing values become ``codes:``, each with its value label (or its own text);
    a missing range cannot be listed code by code, so it is named in a comment for the steward.
    Stata's and SAS's labelled lettered missing values reach the data as their own text, ``".a"``
    (:mod:`dipsy.engine.agency`), so each becomes a text code with its label, a state of its own;
    such a column may also hold the system missing value ``.``, an empty cell in the data, so it
    declares the ``empty:`` state too. (An unlabelled letter is not in the metadata, so it is
    not declared: a row holding it is invalid, named by the check, until the steward adds it.)"""
    as_code = lambda x: x if isinstance(x, str) else _code(x)  # noqa: E731
    labels = {as_code(k): str(t) for k, t in v.value_labels.items()}
    codes: list[Any] = []
    ranges = []
    for lo, hi in sorted(v.missing_ranges, key=lambda r: (str(type(r[0])), r[0], r[1])):  # the file's order varies
        lo, hi = as_code(lo), as_code(hi)
        if lo == hi and not isinstance(lo, str):
            codes.append(lo)
        else:
            ranges.append(f"{_scalar(lo)} to {_scalar(hi)}")
    out = []
    if ranges:
        out.append(f"    # the file declares the missing range(s) {', '.join(ranges)}: list their codes under missing: codes:")
    states = [(c, labels.get(c, f"missing {c}")) for c in codes] + [(letter_code(k), labels[k]) for k in letters]
    if states:
        out.append(f"{'    missing:':<34}# declared in the file (metadata, public)")
    if letters:
        out.append(f"      empty: {_scalar(SYSTEM_MISSING)}")
    if states:
        out.append("      codes: {" + ", ".join(f"{_scalar(c)}: {_scalar(t)}" for c, t in states) + "}")
    return out, set(codes)


#: The label of the empty state of a column with lettered missing values: Stata's and SAS's ``.``.
SYSTEM_MISSING = "system missing (.)"


def _agency_column(
    v: Variable, kind: str | None, declared: str | None, facts: dict[str, Any] | None, from_public: bool
) -> tuple[list[str], int]:
    """One column's entry from an agency file's metadata, and its number of TODOs: the value labels
    as categories and labels (which a public file does not override), the variable label as the
    description, the declared missing codes in a comment."""
    codes, labels, letters = _labelled(v)
    missing, states = _declared_missing(v, letters)
    labels = [t for c, t in zip(codes, labels) if c not in states]
    codes = [c for c in codes if c not in states]
    if codes and kind == "categorical":
        note = "from the file's value labels; or ordinal, codes in order"
        out = [
            f"  {_scalar(v.name)}:",
            f"{'    kind: categorical':<34}# {note}",
            "    categories: [" + ", ".join(_scalar(c) for c in codes) + "]",
            "    labels: [" + ", ".join(_scalar(t) for t in labels) + "]",
            f"{'    role: sensitive':<34}# or public: may be released as it is",
        ]
        todos = 0
    else:
        out, todos = _column(v.name, kind, declared, facts, from_public, source="the file's type")
        if kind is None and v.stored != "string":
            out.insert(1, "    # a date or time: no kind holds one; delete this entry, or recode the column in the data")
    out[1:1] = missing
    if v.label:
        out.append(f"    description: {_scalar(v.label)}")
    return out, todos


def _scalar(x: Any) -> str:
    """A YAML scalar that reads back as ``x``: text always quoted, numbers plain."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x.is_integer() and abs(x) < 2**53:
            return f"{x:.1f}"
        return repr(x) if math.isfinite(x) else (".inf" if x > 0 else "-.inf" if x < 0 else ".nan")
    text = str(x)
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar
