"""The statistical agencies' file formats (SAS ``.sas7bdat`` and ``.xpt``, Stata ``.dta``, SPSS
``.sav`` and ``.zsav``), read through a private Parquet copy.

The engines read CSV and Parquet. An agency file is converted once, by pyreadstat, into a Parquet
file in a private folder (mode 0700, ``dipsy-agency-*``, in the command's run folder when there is
one: :func:`~.owner.scratch_folder`), and every engine reads that copy: the NumPy engine loads it
with pandas, DuckDB and Spark read it in place. So they agree exactly, as they do on any Parquet
file. The folder goes with the engine (:meth:`CopiedEngine.close`, or when the engine is garbage
collected); a run that is killed leaves it behind, and the next conversion sweeps the folders whose
process is gone (:mod:`.owner`). The data set's fingerprint, which names it in the ledger, is of the
file the user named, never of the copy (the API fingerprints its ``data`` argument).

What the copy holds: the values as the file stores them, read in chunks
(:func:`pyreadstat.read_file_in_chunks`, so memory holds one chunk, not the file):

- value labels are not applied: the codes are the data, and the domain lists them;
- SPSS user-missing values (``missing_ranges``: -8 'refused', …) stay the numbers they are, so a
  domain can list them among its ``missing:`` codes;
- Stata's and SAS's lettered ("special") missing values (Stata's ``.a`` … ``.z``, SAS's ``.A`` …
  ``.Z`` and ``._``) have no number: each stays its own text, ``".a"``, ``".A"``, ``"._"``, so
  that a domain can declare each a missing state of its own (``codes: {".a": refused}``). A
  Parquet column has one type, so a column of numbers that holds a letter anywhere in the file
  is a column of text in the copy: its numbers written as the codec reads them back (``"100"``,
  ``"2.5"``), its system missing values (``.``) as nulls. Finding those columns takes one pass
  over the file's numeric columns before the conversion, so a Stata or SAS data file's numeric
  columns are read twice. (In a column of dates or times, a letter reads as missing, as no kind
  holds a date.) SAS transport (``.xpt``) files are read without their letters, as missing;
- Stata's integer types become 64-bit integers, every other number a 64-bit float (SAS and SPSS
  store only those), text a string; dates, date-times and times are kept as pyreadstat gives them
  (``datetime.date``, ``datetime64``, ``datetime.time``), as Parquet dates, timestamps and times.

:func:`file_metadata` reads an agency file's metadata only (names, types, display formats,
variable labels, value-label sets, declared missing codes): what ``dipsy domain init`` writes a
skeleton from, without reading a value.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..domain import Domain, ValidationReport
from ..errors import DataError
from .base import Engine, Pick
from .files import AGENCY_NAMES, file_format
from .numpy_engine import NumpyEngine
from .owner import mark, scratch_folder, sweep

#: pyreadstat's reader of each agency format.
READERS = {"sas7bdat": "read_sas7bdat", "xpt": "read_xport", "dta": "read_dta", "sav": "read_sav"}
#: Values per chunk of the conversion (rows × columns): about 80 MB of numbers in memory at a time.
CHUNK_CELLS = 10_000_000
#: pyreadstat's names of Stata's integer storage types.
INTEGER_TYPES = frozenset({"int8", "int16", "int32"})
#: The formats whose numbers may be lettered missing values, read as letters (pyreadstat gives
#: Stata's as ``'a'`` … ``'z'``, SAS's as ``'A'`` … ``'Z'`` and ``'_'``).
LETTERED_FORMATS = frozenset({"dta", "sas7bdat"})
#: What :func:`pandas.api.types.infer_dtype` calls a column of numbers only (missing values skipped).
_NUMBERS = frozenset({"integer", "floating", "mixed-integer-float", "decimal", "empty"})
#: The private folders of conversions, in the temporary folder or a command's run folder.
PREFIX = "dipsy-agency-"


def is_agency(path: str | Path) -> bool:
    """Whether ``path`` names an agency file by its extension (nothing is read).

    >>> is_agency("wave1.SAV"), is_agency("wave1.csv")
    (True, False)
    """
    try:
        return file_format(Path(path), agency=True) in READERS
    except DataError:
        return False


# -- reading ------------------------------------------------------------------------------------


def _pyreadstat() -> Any:
    """pyreadstat, imported on first use (a run over CSV or Parquet never loads it)."""
    import pyreadstat

    return pyreadstat


def _read_options(fmt: str) -> dict[str, Any]:
    """pyreadstat's options for reading the values of format ``fmt`` (see the module docstring)."""
    if fmt == "sav":
        return {"apply_value_formats": False, "user_missing": True}
    if fmt == "dta":
        return {"apply_value_formats": False, "user_missing": True}
    if fmt == "sas7bdat":
        return {"user_missing": True}
    return {}


def _unreadable(path: Path, fmt: str, e: BaseException) -> DataError:
    """The error for an agency file pyreadstat cannot read, with what to check."""
    reason = " ".join(str(e).split()) or type(e).__name__
    name = AGENCY_NAMES[fmt]
    fix = (
        f"check that it is a complete {name} file, neither truncated nor encrypted (save it again, unencrypted, "
        f"from the program that made it), and that its extension names its format"
    )
    return DataError(f"cannot read the {name} file {str(path)!r}: {reason}", fix)


def _checked_source(path: Path) -> str:
    """The format of the agency file ``path``; a DataError when it does not exist or is no file."""
    fmt = file_format(path, agency=True)
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist", "check the path of the data file")
    if not path.is_file():
        raise DataError(f"data file {str(path)!r} is not a file", f"pass the path of a {AGENCY_NAMES[fmt]} file")
    return fmt


def _errors() -> tuple[type[BaseException], ...]:
    """The exceptions by which pyreadstat and pyarrow say that a file cannot be read or converted."""
    pyreadstat = _pyreadstat()
    return (pyreadstat.ReadstatError, pyreadstat.PyreadstatError, OSError, ValueError, UnicodeError, pa.ArrowException)


def _chunks(path: Path, fmt: str, columns: int, usecols: list[str] | None = None) -> Iterator[pd.DataFrame]:
    """The file's records, chunk by chunk, as pyreadstat reads them with :func:`_read_options`."""
    pyreadstat = _pyreadstat()
    rows = max(1, CHUNK_CELLS // max(1, len(usecols) if usecols else columns))
    options = _read_options(fmt)
    if usecols is not None:
        options["usecols"] = usecols
    for frame, _ in pyreadstat.read_file_in_chunks(getattr(pyreadstat, READERS[fmt]), str(path), chunksize=rows, **options):
        yield frame


def convert(source: Path, target: Path) -> int:
    """Write the agency file ``source`` as the Parquet file ``target``, chunk by chunk; returns its rows.

    The types are fixed by the file's metadata and its first chunk (module docstring); a column
    that the first chunk holds no value of takes the type of its first value further on (one more
    pass over such columns only), or is a column of missing numbers if it holds none. In a Stata
    or SAS data file, the numeric columns that hold a lettered missing value are found first, by a
    pass over those columns (:func:`_lettered`), and written as text.
    """
    fmt = _checked_source(source)
    pyreadstat = _pyreadstat()
    try:
        _, meta = getattr(pyreadstat, READERS[fmt])(str(source), metadataonly=True)
        names = list(meta.column_names)
        stored = dict(meta.readstat_variable_types or {})
        letters = _lettered(source, fmt, names, stored) if fmt in LETTERED_FORMATS else Letters()
        types: dict[str, pa.DataType] | None = None
        writer: pq.ParquetWriter | None = None
        rows = 0
        try:
            for frame in map(letters.apply, _chunks(source, fmt, len(names))):
                if types is None:
                    types = {**_first_types(frame, stored), **dict.fromkeys(letters.text, pa.string())}
                    pending = [n for n, t in types.items() if pa.types.is_null(t)]
                    if pending:
                        types.update(_later_types(source, fmt, pending, stored, letters))
                    writer = _writing(target, pq.ParquetWriter, target, pa.schema(list(types.items())))
                assert writer is not None  # made with the first chunk
                _writing(target, writer.write_table, _table(frame, types))
                rows += len(frame)
            if writer is None:  # no rows: the columns, typed from the metadata alone
                types = {n: _stored_type(stored.get(n)) for n in names}
                _writing(target, pq.write_table, pa.table({n: pa.array([], t) for n, t in types.items()}), target)
        finally:
            if writer is not None:
                _writing(target, writer.close)
    except _errors() as e:
        raise _unreadable(source, fmt, e) from None
    return rows


def _writing(target: Path, write: Callable[..., Any], *args: Any) -> Any:
    """``write(*args)``, a step of writing the copy ``target``; a failure (a full device) is a
    DataError of its own, not the agency file's."""
    try:
        return write(*args)
    except (OSError, pa.ArrowException) as e:
        raise DataError(
            f"cannot write the private Parquet copy of the data in {str(target.parent)!r} ({' '.join(str(e).split())})",
            "free space there, or point TMPDIR (or --out, whose folder holds a command's copy) at a device with room",
        ) from None


def _stored_type(stored: str | None) -> pa.DataType:
    """The Parquet type of a column of pyreadstat's storage type ``stored`` (before any value is seen)."""
    if stored == "string":
        return pa.string()
    return pa.int64() if stored in INTEGER_TYPES else pa.float64()


def _first_types(frame: pd.DataFrame, stored: dict[str, str]) -> dict[str, pa.DataType]:
    """Each column's Parquet type, from its storage type and the values of the first chunk."""
    return {name: _value_type(frame[name], stored.get(name)) for name in frame.columns}


def _value_type(values: pd.Series, stored: str | None) -> pa.DataType:
    """The Parquet type of a column stored as ``stored`` whose values (a chunk's) are ``values``:
    text a string, Stata's integers int64, other numbers float64, dates and times their own type
    (pyreadstat makes them of numbers with a date or time format, whatever their storage type),
    and null while the values hold no number, date or time (all missing)."""
    if stored == "string":
        return pa.string()
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return _stored_type(stored)
    found = pa.array(values, from_pandas=True).type  # an object column: dates, times, or numbers with missing values
    if pa.types.is_integer(found) or pa.types.is_floating(found):
        return _stored_type(stored)
    return _temporal(found)


def _temporal(t: pa.DataType) -> pa.DataType:
    """A date-time to the microsecond (Spark reads no nanosecond timestamps); other types as they are."""
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return pa.timestamp("us", t.tz)
    return t


def _later_types(path: Path, fmt: str, names: list[str], stored: dict[str, str], letters: Letters) -> dict[str, pa.DataType]:
    """The types of the columns ``names`` that the first chunk held no value of, from their first
    values further on (float64 for a column that holds none), reading those columns only."""
    found: dict[str, pa.DataType] = {}
    for frame in map(letters.apply, _chunks(path, fmt, len(names), usecols=names)):
        for name in names:
            if name not in found:
                t = _value_type(frame[name], stored.get(name))
                if not pa.types.is_null(t):
                    found[name] = t
        if len(found) == len(names):
            break
    return {name: found.get(name, pa.float64()) for name in names}


# -- lettered missing values ----------------------------------------------------------------------


@dataclass(frozen=True)
class Letters:
    """The numeric columns of a Stata or SAS data file that hold lettered missing values:
    ``text``, those of numbers, which the copy holds as text; ``null``, those of dates or times,
    whose letters read as missing (see the module docstring)."""

    text: frozenset[str] = frozenset()
    null: frozenset[str] = frozenset()

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A chunk as the copy holds it: the columns of ``text`` as :func:`_letter_texts` writes
        them, the letters of the columns of ``null`` missing; other columns as they are."""
        present = [n for n in (*self.text, *self.null) if n in frame.columns]
        if not present:
            return frame
        frame = frame.copy(deep=False)
        for name in present:
            cells = np.array(frame[name], dtype=object)  # a copy: pandas may lend a read-only view
            if name in self.text:
                cells = _letter_texts(cells)
            else:
                cells[_letter_mask(cells)] = None
            frame[name] = pd.Series(cells, index=frame.index, dtype=object)
        return frame


def _lettered(path: Path, fmt: str, names: list[str], stored: dict[str, str]) -> Letters:
    """The numeric columns of ``path`` (a Stata or SAS data file) that hold a lettered missing
    value anywhere, read in one pass over the numeric columns only: a Parquet file fixes each
    column's type before its first chunk is written, and a letter may first come in the last."""
    numeric = [n for n in names if stored.get(n) != "string"]
    letters: set[str] = set()
    other: set[str] = set()  # columns holding values that are not numbers: dates or times
    if not numeric:
        return Letters()
    for frame in _chunks(path, fmt, len(numeric), usecols=numeric):
        for name in numeric:
            found, odd = _kinds(frame[name])
            if found:
                letters.add(name)
            if odd:
                other.add(name)
    return Letters(text=frozenset(letters - other), null=frozenset(letters & other))


def _kinds(values: pd.Series) -> tuple[bool, bool]:
    """Whether a chunk of a numeric column holds a letter (pyreadstat's lettered missing value, a
    ``str``), and whether it holds a value that is not a number (a date or time)."""
    if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_datetime64_any_dtype(values.dtype):
        return False, pd.api.types.is_datetime64_any_dtype(values.dtype)
    cells = values.to_numpy(dtype=object)  # pandas types a chunk of letters alone as text
    inferred = pd.api.types.infer_dtype(cells, skipna=True)  # fast, in C; a str makes it one of these
    if inferred not in ("string", "mixed", "mixed-integer"):
        return False, inferred not in _NUMBERS
    letter = _letter_mask(cells)
    return bool(letter.any()), pd.api.types.infer_dtype(cells[~letter], skipna=True) not in _NUMBERS


def _letter_mask(cells: np.ndarray) -> np.ndarray:
    """Which cells of a numeric column are letters (``str``: pyreadstat's lettered missing values)."""
    # Every cell passes here, so type() runs in numpy's loop; == compares the array of types elementwise.
    return np.asarray(_TYPE_OF(cells) == str, dtype=bool)  # noqa: E721


#: ``type`` over an object array, called in numpy's loop (faster than a generator in Python).
_TYPE_OF = np.frompyfunc(type, 1, 1)


def letter_code(letter: str) -> str:
    """A lettered missing value as Stata and SAS write it, and the copy holds it: ``a`` is ``.a``.

    >>> letter_code("a"), letter_code("._")
    ('.a', '._')
    """
    return letter if letter.startswith(".") else f".{letter}"


def _letter_texts(cells: np.ndarray) -> np.ndarray:
    """The cells of a lettered column as the copy holds them: a letter as Stata and SAS write it
    (``".a"``, ``".A"``, ``"._"``), a number as text the codec reads as the same number (a whole
    number without ``.0``, else its shortest repr), a system missing value as None.

    >>> _letter_texts(np.array(["a", "_", 100.0, 2.5, 7, float("nan"), None, -0.0, -4], dtype=object)).tolist()
    ['.a', '._', '100', '2.5', '7', None, None, '0', '-4']
    """
    letter = _letter_mask(cells)
    out = np.full(len(cells), None, dtype=object)
    out[letter] = [letter_code(v) for v in cells[letter]]
    rest = np.flatnonzero(~letter)
    numbers = cells[rest].astype(float)  # numbers and NaN (None too), in C: every cell of the column passes here
    seen = ~np.isnan(numbers)
    whole = seen & (numbers == np.floor(numbers)) & (np.abs(numbers) < 2.0**63)
    out[rest[whole]] = pa.array(numbers[whole].astype(np.int64)).cast(pa.string()).to_numpy(zero_copy_only=False)
    fraction = seen & ~whole
    out[rest[fraction]] = [repr(float(x)) for x in numbers[fraction]]
    return out


def _table(frame: pd.DataFrame, types: dict[str, pa.DataType]) -> pa.Table:
    """One chunk as an Arrow table of ``types`` (no pandas metadata: a plain Parquet file)."""
    arrays = []
    for name, t in types.items():
        values = frame[name]
        if t in (pa.string(), pa.int64(), pa.float64()):
            arrays.append(pa.array(values, type=t, from_pandas=True))
        else:
            found = pa.array(values, from_pandas=True)
            arrays.append(found if found.type == t else found.cast(t))
    return pa.Table.from_arrays(arrays, names=list(types))


# -- the private copy ---------------------------------------------------------------------------


class ParquetCopy:
    """The Parquet copy of the agency file ``source`` in a private folder (see the module docstring).

    ``path`` is the copy; :meth:`remove` removes the folder (done too when the object is garbage
    collected, and at exit). A file that cannot be read leaves no folder behind.

    >>> import tempfile, pyreadstat, pandas as pd
    >>> src = Path(tempfile.mkdtemp()) / "w.dta"
    >>> pyreadstat.write_dta(pd.DataFrame({"sex": [1, 2, 2]}), str(src))
    >>> copy = ParquetCopy(src)
    >>> pd.read_parquet(copy.path)["sex"].tolist()
    [1.0, 2.0, 2.0]
    >>> copy.remove(); copy.path.exists()
    False
    """

    def __init__(self, source: str | Path) -> None:
        self.source = Path(source)
        self.format = _checked_source(self.source)
        sweep(Path(tempfile.gettempdir()), f"{PREFIX}*")  # folders of killed runs
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=scratch_folder()))  # mode 0700
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.folder), True)
        self.path = self.folder / "data.parquet"
        try:
            mark(self.folder)
            self.rows = convert(self.source, self.path)
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Remove the private folder and the copy in it."""
        self._finalizer()


def read_frame(path: str | Path) -> pd.DataFrame:
    """An agency file read whole into memory, as pandas reads its Parquet copy (which is removed at once)."""
    copy = ParquetCopy(path)
    try:
        return pd.read_parquet(copy.path)
    finally:
        copy.remove()


class CopiedEngine(Engine):
    """An engine over an agency file: ``inner`` (DuckDB or Spark) reads its :class:`ParquetCopy`.

    Every query is ``inner``'s; :meth:`close` closes it and removes the copy (when this engine
    made it: an engine :meth:`~.base.Engine.rebinned` from it shares the copy and leaves it).
    ``path`` and ``format`` name the file the user gave.
    """

    def __init__(self, inner: Engine, copy: ParquetCopy, owner: bool = True) -> None:
        super().__init__(inner.domain, inner.on_invalid)
        self.inner, self.copy, self._owner = inner, copy, owner
        self.path, self.format = copy.source, copy.format

    @property
    def report(self) -> ValidationReport:
        return self.inner.report  # computed once, by the engine that reads the rows

    def close(self) -> None:
        """Close the inner engine and remove the copy (also done on garbage collection)."""
        getattr(self.inner, "close", lambda: None)()
        if self._owner:
            self.copy.remove()

    def _validate(self) -> ValidationReport:
        return self.inner.report

    def _has_column(self, name: str) -> bool:
        return self.inner.has_column(name)

    def _raw_counts(self, name: str) -> tuple:
        return self.inner._raw_counts(name)

    def _reopen(self, domain: Domain) -> Engine:
        return CopiedEngine(self.inner._reopen(domain), self.copy, owner=False)

    def _values(self, picks: tuple[tuple[str, Pick], ...]) -> list[np.ndarray]:
        self.inner.ensure_valid()
        return self.inner._values(picks)

    def _cell_counts(self, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        self.inner.ensure_valid()
        return self.inner._cell_counts(names, shape)


def open_engine(path: Path, domain: Domain, on_invalid: str = "error", engine: str | None = None) -> Engine:
    """The engine for the agency file ``path``: ``"numpy"`` loads the Parquet copy (removed at once);
    ``"duckdb"`` (the default) and ``"spark"`` read it in place, in a :class:`CopiedEngine`."""
    if engine == "numpy":
        return NumpyEngine(read_frame(path), domain, on_invalid)
    make: Callable[[Path], Engine]
    if engine == "spark":
        from .spark_engine import SparkEngine, require_spark

        require_spark()  # before the conversion: a machine without Java is told at once
        make = lambda p: SparkEngine(p, domain, on_invalid)  # noqa: E731
    else:
        from .duckdb_engine import DuckDBEngine

        make = lambda p: DuckDBEngine(p, domain, on_invalid)  # noqa: E731
    copy = ParquetCopy(path)
    try:
        inner = make(copy.path)
    except BaseException:
        copy.remove()
        raise
    return CopiedEngine(inner, copy)


# -- metadata -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """One column of an agency file, from its metadata: its name, pyreadstat's storage type
    (``double``, ``string``, ``int8`` …), its display format (``F8.2``, ``%td``, ``DATE9.``), its
    variable label, its value-label set (code → label) and the missing codes the file declares:
    SPSS's ranges ``(lo, hi)`` (one code when ``lo == hi``)."""

    name: str
    stored: str
    display: str = ""
    label: str = ""
    value_labels: dict[Any, str] = field(default_factory=dict)
    missing_ranges: tuple[tuple[Any, Any], ...] = ()


def file_metadata(path: str | Path) -> list[Variable]:
    """The columns of the agency file ``path`` from its metadata only (no value is read).

    SAS value labels live in a separate format catalog (``.sas7bcat``), which is not read: a
    ``.sas7bdat`` or ``.xpt`` file's columns have no value labels here.
    """
    path = Path(path)
    fmt = _checked_source(path)
    pyreadstat = _pyreadstat()
    options = {"user_missing": True} if fmt in ("sav", "dta", "sas7bdat") else {}
    try:
        _, meta = getattr(pyreadstat, READERS[fmt])(str(path), metadataonly=True, **options)
    except _errors() as e:
        raise _unreadable(path, fmt, e) from None
    labels = meta.column_names_to_labels or {}
    stored = meta.readstat_variable_types or {}
    display = meta.original_variable_types or {}
    value_labels = meta.variable_value_labels or {}
    missing = meta.missing_ranges or {}
    return [
        Variable(
            name=name,
            stored=str(stored.get(name, "")),
            display=str(display.get(name) or ""),
            label=str(labels.get(name) or ""),
            value_labels=dict(value_labels.get(name) or {}),
            missing_ranges=tuple((r["lo"], r["hi"]) for r in missing.get(name) or ()),
        )
        for name in meta.column_names
    ]
