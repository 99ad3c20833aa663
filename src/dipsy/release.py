"""A release: the synthetic tables, their privacy statement and provenance, written atomically.

A release folder holds ``synthetic_1.<fmt>`` … ``synthetic_m.<fmt>`` (or, for sets written in
chunks, folders ``synthetic_1/`` … of part files: :mod:`dipsy.release_sets`), ``release.json`` and
the public domain of the released columns (``domain.yaml``). The format is Parquet, CSV, or one of
the agencies' own (:data:`LABELLED_FORMATS`: Stata ``.dta``, SPSS ``.sav``, SAS transport ``.xpt``
version 5), written with pyreadstat with the domain's descriptions as variable labels and, in
Stata and SPSS files, its categories' labels as value labels (:func:`write_labelled`). Everything
is written into a temporary folder beside the target and renamed into place, so a failure leaves
nothing behind. The folder gets the permissions of any new folder (``0o777`` less the umask), not
the temporary folder's 0700.

What can be checked before a release is charged is checked by :class:`Output` (the command line's
``check_output`` and ``on_release``): the folder can be written, the device has room for an
estimate of the release (:func:`estimate_bytes`), and the format stores every category of the
released domain so that it reads back as itself (:func:`check_storable`). Its ``visible`` flag
says whether the release reached its place, which decides whether a failure takes the spend back.

``--overwrite`` replaces only a folder that holds a dipsy release (a ``release.json`` with a
``release_id``, and release files only): any other folder, or a release beside which someone put
other files, is refused, so that an overwrite never deletes what dipsy did not write.

The temporary folder is ``release/`` inside the command's run folder
(:class:`~dipsy.engine.owner.RunFolder`, ``.dipsy-run.<random>`` beside the target, which a save
makes for itself when it is given none), and the release an overwrite replaces is moved to
``old/<name>`` inside it; the run folder's marker names the process (pid, its start time, the
host) and the target, never inside the release. A run that is killed leaves its run folder behind;
the next command that writes sweeps it once its process is gone (on this host), first putting back
a replaced release whose replacement never arrived. Older versions' temporary folders
``.<name>.<random>`` with a marker ``<folder>.owner`` beside them are swept by the next save to
the same target (:func:`sweep_stale`); folders without a marker (another program's) are left alone.

Nothing in ``release.json`` is computed from the confidential data beyond what the statement
declares public (n): in particular no hash of the data file, which would let anyone holding a
candidate file confirm it.
"""

from __future__ import annotations

import glob
import io
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from .domain import Domain, encode_frame
from .domain.codec import as_text, decode_column, decoded_dtype, encode_column, state_values
from .engine.owner import OWNER_SUFFIX, RunFolder, owner_of
from .errors import ReleaseError
from .interrupts import held
from .methods import Statement
from .methods.counts import describe_cells
from .methods.enforce import Enforcement
from .permissions import umask
from .privacy import Spend
from .privacy.published import PublishedTable
from .release_sets import ChunkedSet, check_partition_columns, is_set_folder, write_set

#: The agencies' formats a release can be written in, with variable labels (and value labels in dta and sav).
LABELLED_FORMATS = ("dta", "sav", "xpt")
FORMATS = ("parquet", "csv", *LABELLED_FORMATS)


#: How a release evaluates itself and writes its report (:meth:`Release.report`), installed by
#: :mod:`dipsy.api` as it loads: the evaluation sits above releases in the layers
#: (tests/test_layers.py), so this module holds the call, not the code.
REPORTER: list[Callable[..., dict[str, Any]]] = []


@dataclass(frozen=True, eq=False)
class Release:
    """The public output of one synthesis run.

    Attributes
    ----------
    tables
        The m synthetic sets, one DataFrame each: records, or (``kind == "table"``) one row per
        cell with its ``count``; or, for a streamed release, a
        :class:`~dipsy.release_sets.ChunkedSet` each, drawn as :meth:`save` writes it.
    statement
        The privacy guarantee (see :meth:`metadata` for its release.json form).
    dropped_rows
        Rows dropped as invalid: for the data steward's eyes, never written to the release.
    """

    @property
    def combining_rule(self) -> str:
        """How to combine estimates across the sets (:mod:`dipsy.inference`).

        m sets drawn independently, each from its own posterior draw or noise: Reiter's (2003)
        partial-synthesis rule, which Bowen & Liu use for every multiply released DP synthesizer
        (S-003); one set: its own estimate and variance.
        """
        return "reiter2003-partial" if len(self.tables) > 1 else "single"

    @property
    def stem(self) -> str:
        return "table" if self.kind == "table" else "synthetic"

    tables: list[pd.DataFrame] | list[ChunkedSet]
    statement: Statement
    method: str
    options: dict[str, Any]
    parameters: dict[str, Any]
    domain: Domain
    spends: tuple[Spend, ...]
    seed: int | None
    created: str
    release_id: str
    dipsy_version: str
    kind: str = "records"
    #: The invalid-row policy the operator chose (public); how many rows it dropped is not.
    on_invalid: str = "error"
    dropped_rows: int = 0
    #: The expected error forecast from the plan before any measurement (:mod:`dipsy.forecast`): public inputs only.
    forecast: dict[str, Any] | None = None
    #: The request's public fields (:meth:`dipsy.request.Request.public`): what was asked for, as given.
    request: dict[str, Any] | None = None
    #: The domain's edit rules and what enforcing them did (None: the domain has none).
    rules: Enforcement | None = None
    #: Noisy tables released as they were measured (:mod:`dipsy.privacy.published`): the declared
    #: analyses' tables, from which :mod:`dipsy.noise_aware` computes intervals.
    published: tuple[PublishedTable, ...] = ()

    def metadata(self) -> dict[str, Any]:
        """The content of ``release.json``."""
        meta = {
            "release_id": self.release_id,
            "release": self.kind,
            "method": self.method,
            "options": self.options,
            "parameters": self.parameters,
            "privacy": _with_transformations(self.statement.to_dict(), self.domain, self._rules_line()),
            "spends": [s.to_dict() for s in self.spends],
            "sets": len(self.tables),
            "combining_rule": self.combining_rule,
            "rows": [len(t) for t in self.tables],
            "columns": list(self.domain.names),
            "domain_sha256": self.domain.sha256(),
            "dipsy_version": self.dipsy_version,
            "seed": self.seed,
            "randomness": (
                "seeded test release: every draw comes from NumPy PCG64 seeded with the recorded seed, so anyone can "
                "regenerate the noise; not differentially private"
                if self.seed is not None
                else "exact noise from the operating system's CSPRNG (os.urandom); posterior and sampling draws from "
                "NumPy's Generator over ChaCha20 (randomgen) keyed with 256 bits from os.urandom"
            ),
            "on_invalid": (
                "rows that did not match the domain were to be dropped before synthesis (the policy, not a count)"
                if self.on_invalid == "drop"
                else "rows that did not match the domain stop the run"
            ),
            "created": self.created,
        }
        if self.forecast is not None:
            meta["forecast"] = self.forecast
        if self.request is not None:
            meta["request"] = self.request
        if self.rules is not None:  # only with rules: a release without them has the same release.json as before
            meta["rules"] = self.rules.to_dict(self.kind)
        if self.published:  # only with published tables: a release without them has the same release.json as before
            meta["published"] = [t.to_dict() for t in self.published]
        if self.kind == "table":
            meta["cells"] = describe_cells(self.domain)
            meta["files"] = [f"{self.stem}_{k}" for k in range(1, len(self.tables) + 1)]
        return meta

    def report(self, original: pd.DataFrame | str | Path, path: str | Path, **evaluation: Any) -> dict[str, Any]:
        """Evaluate the release against ``original``, the data it was drawn from, and write the HTML
        report to ``path``: :func:`dipsy.evaluate` with ``report=path`` (``evaluation`` takes its other
        arguments: ``formula``, ``groups``, …); returns the metrics. The report reads the confidential
        data: keep it with them."""
        if not REPORTER:
            raise ReleaseError(
                "no evaluation is loaded to write the report",
                "import dipsy.api, or call dipsy.evaluate(original, release, report=path)",
            )
        return REPORTER[0](original, self, report=path, **evaluation)

    def _rules_line(self) -> tuple[str, ...]:
        """The statement's line on the edit rules enforced (none without rules)."""
        line = None if self.rules is None else self.rules.statement_line(self.kind)
        return () if line is None else (line,)

    def save(
        self,
        out: str | Path,
        format: str = "parquet",
        overwrite: bool = False,
        partition_by: tuple[str, ...] = (),
        engine: str | None = None,
        work: str | Path | None = None,
        on_placed: Callable[[], None] | None = None,
    ) -> Path:
        """Write the release to the folder ``out`` atomically; refuse an existing one unless ``overwrite``.

        A set drawn in chunks (:class:`~dipsy.release_sets.ChunkedSet`), or any set when
        ``partition_by`` names columns, is written as a folder of part files
        (:func:`~dipsy.release_sets.write_set`), by Spark when ``engine`` is ``"spark"``; any
        other as one file. ``work`` is the command's run folder beside ``out`` (default: one made
        for the save); ``on_placed`` is called as the release reaches ``out``, with SIGINT and
        SIGTERM held, so that nothing can interrupt between the two.
        """
        out = Path(out)
        check_target(out, overwrite)
        if format not in FORMATS:
            raise ReleaseError(f"unknown format {format!r}", f"use one of {', '.join(FORMATS)}")
        partition_by = tuple(partition_by)
        check_partition_columns(partition_by, self.domain)
        if format in LABELLED_FORMATS:  # what the writer would refuse, refused before anything is written
            check_storable(self.domain, format, partition_by, out.parent)
        if partition_by and self.kind == "table":
            raise ReleaseError("a released table is one row per cell: it is not partitioned", "leave out --partition-by")
        run = None
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            sweep_stale(out)
            if work is None:
                run = RunFolder(out.parent, out.name)
                tmp = Path(run.path) / "release"
            else:
                tmp = Path(work) / "release"
            tmp.mkdir()
        except OSError as e:
            if run is not None:
                run.remove()
            raise ReleaseError(
                f"cannot write into {str(out.parent)!r} ({e.strerror})", "choose a writable --out folder"
            ) from None
        try:
            for k, table in enumerate(self.tables, start=1):
                target = tmp / f"{self.stem}_{k}.{format}"
                if isinstance(table, ChunkedSet) or partition_by:
                    write_set(
                        [table] if isinstance(table, pd.DataFrame) else table,
                        tmp / f"{self.stem}_{k}",
                        format,
                        self.domain,
                        partition_by,
                        spark=engine == "spark",
                    )
                elif format == "parquet":
                    table.to_parquet(target, index=False)
                elif format in LABELLED_FORMATS:
                    write_labelled(table, target, format, self.domain)
                else:
                    table.to_csv(target, index=False)
            self.domain.save(tmp / "domain.yaml")
            (tmp / "release.json").write_text(json.dumps(self.metadata(), indent=2, default=str) + "\n", encoding="utf-8")
            tmp.chmod(0o777 & ~umask())
            _move_into_place(tmp, out, overwrite, on_placed)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # at once: on a full device its room is wanted back
            raise
        finally:
            if run is not None:
                run.remove()
        return out


class Output:
    """Where a release is written: checked before anything is charged, written once it is drawn.

    ``dipsy synth`` passes ``check_output=output.check`` and ``on_release=output`` to
    :func:`dipsy.synthesize`. :meth:`check` refuses, before the charge, what would fail after
    it; calling the output saves the release (:meth:`Release.save`), and ``visible`` turns True
    at the rename that puts it in place (signals held, so the two agree): the release path takes
    the spend back after a failure that left ``visible`` False.

    Parameters
    ----------
    folder, format, overwrite, partition_by, engine
        As :meth:`Release.save` takes them.
    work
        The command's :class:`~dipsy.engine.owner.RunFolder` beside ``folder`` (its ``placed``
        is set with ``visible``); the engine's scratch is there too, so :meth:`check` counts it
        in the room needed.
    """

    def __init__(
        self,
        folder: str | Path,
        format: str = "parquet",
        overwrite: bool = False,
        partition_by: tuple[str, ...] = (),
        engine: str | None = None,
        work: RunFolder | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.format = format
        self.overwrite = overwrite
        self.partition_by = tuple(partition_by)
        self.engine = engine
        self.work = work
        self.visible = False

    def check(self, domain: Domain, kind: str, sets: int, rows: int) -> None:
        """Refuse the output before the charge: the folder (:func:`check_target`), the categories
        (:func:`check_storable`), and the room for ``sets`` sets of ``rows`` records (or of a
        table's cells) of ``domain`` (:func:`estimate_bytes`; the engine's scratch, at most 4
        bytes a row and column, when it shares the device)."""
        check_target(self.folder, self.overwrite)
        check_storable(domain, self.format, self.partition_by, self.folder)
        scratch = 4 * rows * len(domain.names) if self.work is not None else 0
        check_room(self.folder.parent, estimate_bytes(domain, kind, sets, rows, self.format) + scratch)

    def __call__(self, release: Release) -> Path:
        return release.save(
            self.folder,
            self.format,
            self.overwrite,
            self.partition_by,
            self.engine,
            work=None if self.work is None else self.work.path,
            on_placed=self._placed,
        )

    def _placed(self) -> None:
        self.visible = True
        if self.work is not None:
            self.work.placed = self.folder


#: The room asked for is the estimate of a release's size times this.
ROOM_MARGIN = 1.5
#: … plus this: release.json, domain.yaml, the files' footers and folders.
ROOM_FLOOR = 1 << 20
#: Parquet falls back from a dictionary to plain values when a column's dictionary page passes this.
PARQUET_DICTIONARY = 1 << 20


def estimate_bytes(domain: Domain, kind: str, sets: int, rows: int, format: str) -> int:
    """An upper estimate of a release's size, for the room check before the charge.

    Each of the ``sets`` sets holds ``rows`` records (a table release: one row per cell, and its
    count). A record takes per column: in CSV its widest text and a separator (the longest
    category, quoted; the wider bound of an integer; 24 characters for a float, the longest
    shortest repr; 20 for a count); in Parquet 8 bytes for a number and, for a category, the whole
    bytes of its dictionary index, or its text and a 4-byte length when the column's texts pass
    :data:`PARQUET_DICTIONARY`; in the fixed-width agency formats (dta, sav, xpt) 8 bytes for a
    number or a numeric category and the longest text for a text category, and each file its
    value labels. The sum over records and sets is multiplied by :data:`ROOM_MARGIN`, and
    :data:`ROOM_FLOOR` added.

    >>> from dipsy.domain import Column
    >>> d = Domain((Column("a", "categorical", categories=(1, 2, 3)), Column("b", "categorical", categories=tuple(range(300)))))
    >>> estimate_bytes(d, "records", 2, 1000, "parquet") - ROOM_FLOOR   # 1.5 * 2 sets * 1000 rows * (1 + 2 bytes)
    9000
    >>> estimate_bytes(d, "records", 2, 1000, "csv") - ROOM_FLOOR   # 1.5 * 2 * 1000 * ((1 + 3) + (3 + 3))
    30000
    >>> estimate_bytes(d, "records", 2, 1000, "dta") - ROOM_FLOOR   # 1.5 * 2 * 1000 * (8 + 8)
    48000
    """
    width = labels = 0
    for c in domain.columns:
        if c.is_categorical:
            texts = c.category_texts
            longest = max(len(t.encode("utf-8")) for t in texts)
            if format in LABELLED_FORMATS:
                width += 8 if c.numeric_categories else longest
                labels += sum(len(t.encode("utf-8")) + 8 for t in c.labels or ()) if format != "xpt" else 0
            elif format == "csv":
                width += longest + 3
            elif sum(len(t) for t in texts) > PARQUET_DICTIONARY:
                width += longest + 4
            else:
                width += max(1, math.ceil(math.log2(max(c.n_codes, 2)) / 8))
        elif c.kind == "integer" and c.bins is None and format == "csv":
            width += max(len(str(int(b))) for b in c.bounds) + 1
        else:
            width += 25 if format == "csv" else 8
    records = rows
    if kind == "table":
        records = domain.cells()
        width += 21 if format == "csv" else 8
    return int(ROOM_MARGIN * sets * (records * width + labels)) + ROOM_FLOOR


def check_room(folder: str | Path, need: int) -> None:
    """Refuse a folder whose device has less than ``need`` bytes free (for this user)."""
    where = Path(folder).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        st = os.statvfs(where)
    except OSError:  # a device that cannot say: the writes themselves will tell
        return
    free = st.f_bavail * st.f_frsize
    if free < need:
        raise ReleaseError(
            f"the device of {str(where)!r} has {_bytes(free)} free, and the release needs about {_bytes(need)} "
            "(its estimated size with a margin; nothing was charged)",
            "free some space there, or choose an --out on a device with room",
        )


def _bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def check_storable(domain: Domain, format: str, partition_by: tuple[str, ...] = (), folder: str | Path = ".") -> None:
    """Refuse a categorical column whose categories ``format`` cannot store as themselves.

    Each categorical column's categories, one row each, as a release draws them, are written in
    memory by the writer a release uses and read back as :func:`~dipsy.release_sets.read_set`
    reads them; each must come back as its own category (as :func:`~dipsy.domain.encode_frame`
    matches values). A partition column's categories name folders instead: each name must fit the
    file system of ``folder``. Public inputs only: run before anything is charged.

    >>> from dipsy.domain import Column
    >>> check_storable(Domain((Column("d", "categorical", categories=(1, "a")),)), "parquet")
    Traceback (most recent call last):
    ...
    dipsy.errors.ReleaseError: column 'd': Parquet cannot store its categories 1, 'a' (...); quote every category in the domain file (text of one type), or use --format csv
    >>> check_storable(Domain((Column("d", "categorical", categories=("1", "01")),)), "csv")
    Traceback (most recent call last):
    ...
    dipsy.errors.ReleaseError: column 'd': the category '01' does not read back from CSV as itself (read back, it is '1'); ...
    """
    _check_states(domain, format, partition_by)
    if format in LABELLED_FORMATS:
        _check_labelled(domain, format, partition_by)
        return
    longest = _name_max(folder)
    for column in domain.columns:
        if not column.is_categorical:
            continue
        if column.name in partition_by:
            names = [f"{column.name}={quote(str(v), safe='')}" for v in column.levels]
            long = [n for n in names if len(n.encode("utf-8")) > longest]
            if long:
                raise ReleaseError(
                    f"partition column {column.name!r}: the folder name {long[0][:60]!r}… is longer than the "
                    f"{longest} bytes a name may have here",
                    "partition by a column with shorter categories",
                )
            continue
        codes = np.arange(len(column.levels))
        frame = pd.DataFrame({column.name: decode_column(codes, column, np.random.default_rng(0))})
        shown = ", ".join(map(repr, column.levels[:3])) + (", …" if len(column.levels) > 3 else "")
        try:
            back = _written_and_read(frame, format)
        except Exception as e:  # noqa: BLE001 - the writer's own refusal (e.g. pyarrow: values of mixed types)
            raise ReleaseError(
                f"column {column.name!r}: {_FORMAT_NAMES[format]} cannot store its categories {shown} "
                f"({' '.join(str(e.args[0] if e.args else e).split())[:200]})",
                "quote every category in the domain file (text of one type)"
                + (", or use --format csv" if format == "parquet" else ""),
            ) from None
        encoded, _ = encode_frame(back, Domain((column,)))
        wrong = np.flatnonzero(encoded[column.name].codes != codes) if encoded else codes
        if len(wrong):
            value = back[column.name].iloc[[wrong[0]]]
            seen = value.iloc[0] if column.numeric_categories else as_text(value)[0]  # as the codec matches it
            seen = "a missing value" if value.isna().iloc[0] else repr(seen)
            raise ReleaseError(
                f"column {column.name!r}: the category {column.levels[wrong[0]]!r} does not read back from "
                f"{_FORMAT_NAMES[format]} as itself (read back, it is {seen})",
                "quote the categories in the domain file so that they are text, or choose the other --format",
            )


_FORMAT_NAMES = {"parquet": "Parquet", "csv": "CSV", "dta": "Stata (.dta)", "sav": "SPSS (.sav)", "xpt": "SAS transport (.xpt)"}


def _check_states(domain: Domain, format: str, partition_by: tuple[str, ...]) -> None:
    """Refuse a column whose declared missing states ``format`` would not give back as themselves
    (a text code such as ``.a`` among numbers, which Parquet cannot hold in one column, nor Stata
    but as its lettered missing values ``.a`` … ``.z``), or that partitions a set (an empty state
    names no folder). A value and every state, decoded as a release decodes them, are written and
    read back, and must encode to the same codes. Public inputs only: run before anything is
    charged."""
    for column in domain.columns:
        if column.missing is None:
            continue
        if column.name in partition_by:
            raise ReleaseError(
                f"partition column {column.name!r} declares missing states, which name no folder",
                "partition by a column without missing:, or leave out --partition-by",
            )
        values = np.empty(1 + column.n_states, dtype=decoded_dtype(column))
        values[0] = column.levels[0] if column.is_categorical else column.bounds[0]
        values[1:] = state_values(column)
        frame = pd.DataFrame({column.name: values})
        wrote = encode_column(frame[column.name], column).codes
        try:
            back = _written_and_read(frame, format) if format not in LABELLED_FORMATS else _labelled_back(frame, format, column)
            problem = "" if np.array_equal(encode_column(back[column.name], column).codes, wrote) else "they come back otherwise"
        except Exception as e:  # noqa: BLE001 - the writer's own refusal (pyarrow: values of mixed types)
            problem = " ".join(str(e.args[0] if e.args else e).split())[:200]
        if problem:
            shown = ", ".join("empty" if x is None else repr(x) for x in column.missing.values)
            raise ReleaseError(
                f"column {column.name!r}: {_FORMAT_NAMES[format]} cannot store its missing states ({shown}) with its "
                f"values as themselves ({problem})",
                _states_fix(column, format),
            )


#: Why a format cannot hold Stata's lettered missing values among a column's numbers.
_NO_LETTERS = {
    "parquet": "a Parquet column holds values of one type",
    "sav": "SPSS (.sav) has no lettered missing values",
    "xpt": "dipsy writes SAS transport (.xpt) files without lettered missing values",
}


def _states_fix(column: Any, format: str) -> str:
    """The fix for a column whose missing states ``format`` cannot store (:func:`_check_states`):
    for text codes among numbers, the formats that hold them (CSV; Stata's ``.a`` … ``.z`` in a
    dta file) or number codes in their place."""
    assert column.missing is not None, "called for columns with missing states"
    texts = [code for code, _ in column.missing.codes if isinstance(code, str)]
    if not texts or (column.is_categorical and not column.numeric_categories):
        return "use --format csv" + ("" if format in ("csv", "parquet") else " or parquet")
    number = f"declare number codes for them in the domain (e.g. -1 for {texts[0]}) and recode the data to match"
    odd = [code for code in texts if not STATA_LETTER.fullmatch(code)]
    if format == "dta" and odd:
        return f"Stata's lettered missing values are .a to .z, and {odd[0]} is none: use --format csv, or {number}"
    if not odd and format in _NO_LETTERS:
        return f"{_NO_LETTERS[format]}: use --format dta (Stata's .a to .z) or csv, or {number}"
    return f"use --format csv, or {number}"


def _labelled_back(frame: pd.DataFrame, format: str, column: Any) -> pd.DataFrame:
    """``frame`` (the one column ``column``) written as an agency file (no labels) and read back
    as the engines read it: in a dta file, Stata's lettered missing values as :func:`write_labelled`
    writes them, read back as their text ``".a"`` (:mod:`dipsy.engine.agency`)."""
    import pyreadstat

    read = getattr(pyreadstat, {"dta": "read_dta", "sav": "read_sav", "xpt": "read_xport"}[format])
    with tempfile.TemporaryDirectory(prefix="dipsy-probe-") as tmp:
        target = Path(tmp) / f"probe.{format}"
        if format == "dta":
            frame, letters = _with_letters(frame, [column])
            pyreadstat.write_dta(frame, str(target), missing_user_values=letters or None)
            back, meta = read(str(target), user_missing=bool(letters))
            if (meta.readstat_variable_types or {}).get(column.name) == "string" and not (
                column.is_categorical and not column.numeric_categories
            ):  # a text code that is no Stata letter (SAS's .A): pyreadstat made the numbers text
                raise ValueError("its numbers come back as text")
            for name in letters:
                back[name] = pd.Series([f".{v}" if isinstance(v, str) else v for v in back[name]], dtype=object)
            return back
        getattr(pyreadstat, {"sav": "write_sav", "xpt": "write_xport"}[format])(frame, str(target))
        back, _ = read(str(target))
    return back


def _written_and_read(frame: pd.DataFrame, format: str) -> pd.DataFrame:
    """``frame`` written as a release writes a set, and read back as a release is read, in memory."""
    if format == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        buffer.seek(0)
        return pd.read_parquet(buffer)
    text = io.StringIO()
    frame.to_csv(text, index=False)
    text.seek(0)
    return pd.read_csv(text)


#: The codes Stata's value labels may label: whole numbers in this range (above it lie its missing values).
STATA_LABEL_CODES = (-2_147_483_647, 2_147_483_620)
#: What each agency format takes, as the fix for a column it cannot store.
_LABELLED_FIX = {
    "dta": "Stata takes names of letters, digits and _ (at most 32 characters, not a reserved word such as in, int "
    "or with) and variable labels of at most 80 characters: rename the column in the data and the domain, shorten "
    "its description or labels, or use --format sav or parquet",
    "sav": "SPSS takes names of at most 64 bytes that start with a letter (not ALL, AND, BY, EQ, GE, GT, LE, LT, NE, "
    "NOT, OR, TO or WITH), variable labels of at most 256 bytes and value labels of at most 120: rename the column in "
    "the data and the domain, shorten its description or labels, or use --format dta or parquet",
    "xpt": "SAS transport files (version 5) take names of at most 8 letters, digits and _, variable labels of at "
    "most 40 characters, and numbers within about ±7.2e75: rename the column in the data and the domain, shorten "
    "its description, or use --format dta, sav or parquet",
}


def write_labelled(frame: pd.DataFrame, target: Path, format: str, domain: Domain) -> None:
    """Write one set as a Stata (``dta``), SPSS (``sav``) or SAS transport version 5 (``xpt``) file.

    Each column's ``description`` in the domain is its variable label; in dta and sav files a
    categorical column's ``labels`` are its value labels (code → label), so that Stata and SPSS
    show the codes with their labels as in the original file. SAS keeps value labels in a format
    catalog apart from the data, which a transport file does not hold: an xpt file has variable
    labels only. Everything written is the set's records and the public domain.

    The missing states are written as the file read by ``dipsy domain init`` declared them: in
    a sav file the number codes as SPSS's declared missing values; in a dta file Stata's
    lettered missing values (codes ``.a`` … ``.z`` of a column of numbers) as themselves, with
    their labels, so Stata shows the release's ``.a`` as the original's. (Other formats refuse a
    column of numbers with text codes before anything is charged: :func:`check_storable`.)
    """
    import pyreadstat

    present = [c for c in domain.columns if c.name in frame.columns]
    variable: dict[str, str | None] | None = {c.name: c.description for c in present if c.description} or None
    if format == "xpt":
        # Version 5: the transport format every SAS release reads (libname xport) and Stata's import sasxport5.
        pyreadstat.write_xport(frame, str(target), column_labels=variable, file_format_version=5)
        return
    states = {c.name: _number_codes(c) for c in present}
    labelled = [c for c in present if (c.is_categorical and c.labels is not None) or states[c.name] or _stata_letters(c)]
    value = {c.name: _value_labels(c) for c in labelled}
    if format == "dta":
        frame, letters = _with_letters(frame, present)
        pyreadstat.write_dta(
            frame, str(target), column_labels=variable, variable_value_labels=value or None, missing_user_values=letters or None
        )
        return
    # SPSS also keeps each variable's level of measurement, which the domain's kind says, and its
    # declared missing values: the domain's missing codes that are numbers, as in the original file.
    measure = {c.name: _MEASURES[c.kind] for c in present}
    # SPSS holds three discrete missing values per variable
    missing: dict[str, list[Any]] = {name: [float(x) for x, _ in codes][:3] for name, codes in states.items() if codes}
    pyreadstat.write_sav(
        frame,
        str(target),
        column_labels=variable,
        variable_value_labels=value or None,
        variable_measure=measure,
        missing_ranges=missing or None,
    )


#: SPSS's level of measurement of each kind of column.
_MEASURES = {"categorical": "nominal", "ordinal": "ordinal", "integer": "scale", "numeric": "scale"}


def _value_labels(column: Any) -> dict[Any, str]:
    """A column's value labels, code → label (a whole-number code as an integer, as Stata needs): a
    categorical column's categories with its ``labels``, the missing codes that are numbers with
    their labels (the states' labels, as the domain declares them), and Stata's lettered missing
    values keyed by their letter (``"a"``), as pyreadstat writes and reads them (only a dta file
    holds them: :func:`check_storable` refuses them in the other formats first)."""
    pairs = list(zip(column.levels, column.labels)) if column.is_categorical and column.labels is not None else []
    codes = [*pairs, *_number_codes(column), *_stata_letters(column)]
    return {int(c) if _is_whole(c) else c: label for c, label in codes}


def _number_codes(column: Any) -> list[tuple[Any, str]]:
    """The declared missing codes of ``column`` that are numbers, with their labels (for text codes
    such as ``.a`` see :func:`_stata_letters`)."""
    if column.missing is None:
        return []
    return [(code, label) for code, label in column.missing.codes if _is_whole(code)]


#: Stata's lettered missing values as a domain declares them (and the engines read them).
STATA_LETTER = re.compile(r"\.[a-z]")


def _stata_letters(column: Any) -> list[tuple[str, str]]:
    """The declared missing codes of ``column`` that are Stata's lettered missing values ``.a`` …
    ``.z``, each as pyreadstat names it (``a``) with its label; none in a column of text, where
    ``.a`` is text like any other value.

    >>> from dipsy.domain import Column
    >>> from dipsy.domain.missing import Missing
    >>> m = Missing(empty="system missing", codes=((".a", "refused"), (-8, "n/a"), (".A", "SAS's")))
    >>> _stata_letters(Column("x", "integer", lower=0, upper=9, missing=m))
    [('a', 'refused')]
    >>> _stata_letters(Column("t", "categorical", categories=("y", "n"), missing=m))
    []
    """
    if column.missing is None or (column.is_categorical and not column.numeric_categories):
        return []
    return [(code[1:], label) for code, label in column.missing.codes if isinstance(code, str) and STATA_LETTER.fullmatch(code)]


def _with_letters(frame: pd.DataFrame, columns: list[Any]) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """``frame`` as pyreadstat writes Stata's lettered missing values, and its ``missing_user_values``:
    each column of ``columns`` that declares letters holds objects, its numbers as floats and
    its text codes as letters (``.a`` as ``a``); every letter the column declares is listed
    (pyreadstat writes a column holding an unlisted one as text). Other columns as they are."""
    letters = {c.name: [k for k, _ in _stata_letters(c)] for c in columns if c.name in frame.columns}
    letters = {name: listed for name, listed in letters.items() if listed}
    if not letters:
        return frame, {}
    frame = frame.copy(deep=False)
    for name in letters:
        frame[name] = pd.Series(_stata_cells(frame[name]), index=frame.index, dtype=object)
    return frame, letters


def _stata_cells(values: pd.Series) -> np.ndarray:
    """The values of a column with lettered missing values as pyreadstat writes them: numbers as
    floats (an empty value NaN, Stata's system missing ``.``; pyreadstat writes an integer
    column's None as 0), text codes without their dot (``.a`` as ``a``)."""
    cells = np.array(values, dtype=object)
    numbers = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    out = np.empty(len(cells), dtype=object)
    out[:] = numbers.tolist()
    text = np.flatnonzero(np.isnan(numbers) & pd.notna(cells))
    out[text] = [v[1:] if isinstance(v, str) and v.startswith(".") else v for v in cells[text]]
    return out


def _is_whole(x: Any) -> bool:
    """Whether ``x`` is a number with no fractional part (a text category is not)."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and float(x).is_integer()


def _check_labelled(domain: Domain, format: str, partition_by: tuple[str, ...]) -> None:
    """Refuse what ``format`` (dta, sav, xpt) cannot store as the domain declares it: a
    partitioned set; in Stata, value labels on categories that are not whole numbers; and what
    the writer refuses or does not give back as itself (names, variable labels, value labels,
    categories, bounds), found by writing and reading back a small set of the domain's own values
    (each category and each bound) in a temporary folder. Public inputs only."""
    name = _FORMAT_NAMES[format]
    if partition_by:
        raise ReleaseError(
            f"a partitioned set is a folder of part files, in Parquet or CSV; a release in {name} is one file per set",
            "leave out --partition-by, or use --format parquet or csv",
        )
    if format == "dta":
        low, high = STATA_LABEL_CODES
        for column in domain.columns:
            if column.is_categorical and column.labels is not None:
                odd = [c for c in column.levels if not (_is_whole(c) and low <= c <= high)]
                if odd:
                    raise ReleaseError(
                        f"column {column.name!r}: Stata's value labels label whole numbers, and the labelled category "
                        f"{odd[0]!r} is not one",
                        "code the categories as whole numbers (1, 2, …) with these labels in the domain, leave the "
                        "column's labels out, or use --format sav",
                    )
    frame = _probe_frame(domain)
    problem = _stored_back(frame, format, domain)
    if problem is None:
        return
    for column in domain.columns:  # which column: each on its own
        own = _stored_back(frame[[column.name]], format, Domain((column,)))
        if own is not None:
            raise ReleaseError(
                f"column {column.name!r}: {name} cannot store it as the domain declares it ({own})", _LABELLED_FIX[format]
            )
    raise ReleaseError(f"{name} cannot store the released columns ({problem})", _LABELLED_FIX[format])


def _probe_frame(domain: Domain) -> pd.DataFrame:
    """Rows holding every category of each categorical column (as a release decodes them) and the
    two bounds of each integer and numeric column, repeated to the longest list."""
    rows = max([2, *(len(c.levels) for c in domain.columns if c.is_categorical)])
    data = {}
    for c in domain.columns:
        if c.is_categorical:
            data[c.name] = decode_column(np.arange(rows) % len(c.levels), c, np.random.default_rng(0))
        else:
            bounds = np.resize(np.asarray(c.bounds, dtype=float), rows)
            data[c.name] = bounds.astype(np.int64) if c.kind == "integer" else bounds
    return pd.DataFrame(data)


def _stored_back(frame: pd.DataFrame, format: str, domain: Domain) -> str | None:
    """Write ``frame`` as a release's set in ``format`` and read it back: None when every name,
    variable label, value label and value comes back as itself, else what did not."""
    import pyreadstat

    read = getattr(pyreadstat, {"dta": "read_dta", "sav": "read_sav", "xpt": "read_xport"}[format])
    with tempfile.TemporaryDirectory(prefix="dipsy-probe-") as tmp:
        target = Path(tmp) / f"probe.{format}"
        try:
            write_labelled(frame, target, format, domain)
            back, meta = read(str(target))
        except Exception as e:  # noqa: BLE001 - the writer's own refusal (pyreadstat's errors, or pandas' for a mixed column)
            return " ".join(str(e).split())[:200] or type(e).__name__
    if list(back.columns) != list(frame.columns):
        return f"the names come back as {', '.join(map(repr, back.columns[:3]))}"
    variable = meta.column_names_to_labels or {}
    value = meta.variable_value_labels or {}
    for column in domain.columns:
        label = variable.get(column.name) or ""
        if label != column.description:
            return f"its description comes back as {label!r}" if label else "its description does not come back"
        if format != "xpt" and column.is_categorical and column.labels is not None:
            if value.get(column.name) != _value_labels(column):
                return "its value labels do not come back as themselves (too long?)"
        if column.is_categorical:
            encoded, _ = encode_frame(back[[column.name]], Domain((column,)))
            if not encoded or not np.array_equal(encoded[column.name].codes, np.arange(len(frame)) % len(column.levels)):
                return "its categories do not come back as themselves"
        else:
            wrote, got = frame[column.name].to_numpy(dtype=float), back[column.name].to_numpy(dtype=float)
            if not np.array_equal(wrote, got):
                wrong = int(np.flatnonzero(wrote != got)[0])
                return f"the bound {float(wrote[wrong])!r} comes back as {float(got[wrong])!r}"
    return None


def _name_max(folder: str | Path) -> int:
    """The longest file name (bytes) the file system of ``folder`` (or its nearest existing parent) takes."""
    where = Path(folder).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        return os.pathconf(where, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


#: The files a release folder holds (what --overwrite may replace).
RELEASE_FILES = re.compile(r"release\.json|domain\.yaml|(synthetic|table)_[1-9][0-9]*\.(parquet|csv|dta|sav|xpt)")
#: The folders of sets written in chunks (see :mod:`dipsy.release_sets`).
SET_FOLDER = re.compile(r"synthetic_[1-9][0-9]*")


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse an output folder that cannot take a release, before any work is done: an existing
    one unless ``overwrite``, and then only a dipsy release; a folder that cannot be made or
    written. Creates nothing (a probe file, and any folder made to hold it, are removed)."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise ReleaseError(f"the output folder {str(out)!r} already exists", "choose another --out, or pass --overwrite")
        if not out.is_dir():
            raise ReleaseError(f"{str(out)!r} exists and is not a folder", "choose another --out")
        check_release_folder(out)
    check_writable_folder(out.parent, "--out")


def check_release_folder(folder: Path) -> None:
    """Refuse a folder that is not a dipsy release, or holds anything but release files."""
    fix = "--overwrite replaces only a dipsy release folder: choose another --out, or move the folder away"
    try:
        names = sorted(p.name for p in folder.iterdir())
        meta = json.loads((folder / "release.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"{str(folder)!r} is not a dipsy release (it has no release.json)", fix) from None
    except (OSError, ValueError) as e:
        raise ReleaseError(
            f"{str(folder)!r} is not a readable dipsy release ({getattr(e, 'strerror', None) or e})", fix
        ) from None
    if not (
        isinstance(meta, dict) and re.fullmatch(r"[0-9a-f]{32}", str(meta.get("release_id", ""))) and "dipsy_version" in meta
    ):
        raise ReleaseError(f"{str(folder)!r} is not a dipsy release (its release.json has no dipsy release_id)", fix)
    others = [
        n
        for n in names
        if not (
            RELEASE_FILES.fullmatch(n)
            and (folder / n).is_file()
            or SET_FOLDER.fullmatch(n)
            and (folder / n).is_dir()
            and is_set_folder(folder / n)
        )
    ]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise ReleaseError(
            f"the release folder {str(folder)!r} also holds {shown}, which dipsy did not write",
            "move those files out of it first, or choose another --out",
        )


def check_writable_folder(folder: Path, flag: str) -> None:
    """Refuse ``folder`` (made if needed) when a file cannot be created in it. Leaves nothing behind."""
    folder = Path(folder).absolute()
    missing = []
    existing = folder
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        raise ReleaseError(f"cannot write into {str(folder)!r}: {str(existing)!r} is not a folder", f"choose another {flag}")
    try:
        for d in reversed(missing):
            d.mkdir()
        fd, probe = tempfile.mkstemp(prefix=".dipsy-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ReleaseError(f"cannot write into {str(folder)!r} ({e.strerror})", f"choose a writable {flag}") from None
    finally:
        for d in missing:
            try:
                d.rmdir()
            except OSError:
                pass


def sweep_stale(out: Path) -> list[Path]:
    """Remove the temporary folders of ``out`` that older versions of dipsy left beside it when
    killed (``.<name>.<random>`` with a marker ``<folder>.owner``; their process is gone), putting
    back first a replaced release whose replacement never arrived, and markers left without their
    folder. Returns the folders removed. Folders of live processes, of other hosts, of other
    targets or without a marker are left alone. (Run folders are swept by
    :func:`~dipsy.engine.owner.sweep_runs`.)"""
    out = Path(out)
    removed: list[Path] = []
    try:
        markers = sorted(out.parent.glob(f".{glob.escape(out.name)}.*{OWNER_SUFFIX}"))
    except OSError:
        return removed
    for marker in markers:
        folder = marker.with_name(marker.name[: -len(OWNER_SUFFIX)])
        owner = owner_of(folder, marker)
        if owner is None or owner.get("target") != out.name:
            continue
        try:
            if folder.is_dir() and not folder.is_symlink():
                if owner.get("role") == "old" and (folder / out.name).is_dir() and not (out.exists() or out.is_symlink()):
                    os.replace(folder / out.name, out)  # the overwrite was killed between its two renames
                shutil.rmtree(folder)
                removed.append(folder)
            marker.unlink(missing_ok=True)
        except OSError:
            continue
    return removed


def _with_transformations(privacy: dict[str, Any], domain: Domain, after: tuple[str, ...] = ()) -> dict[str, Any]:
    """The statement with the domain's per-record transformations (clipping), listed after what it
    treats as public: one line per column, from the domain alone, never a count of changed records;
    then ``after``, what was done to the synthetic output (the edit rules enforced).

    The guarantee is unchanged: clipping is stable (a record maps to one record), so a mechanism
    that is ε-DP on the clipped data is ε-DP on the original (see :mod:`dipsy.domain.columns`);
    enforcing the rules is post-processing (see :mod:`dipsy.methods.enforce`)."""
    lines = domain.transformations() + tuple(after)
    if not lines:
        return privacy
    claim = privacy.get("if_unseeded", privacy)  # a seeded release states its would-be guarantee there
    stated = {}
    for key, value in claim.items():
        stated[key] = value
        if key == "public":
            stated["transformations"] = list(lines)
    stated.setdefault("transformations", list(lines))
    if claim is privacy:
        return stated
    return {**privacy, "if_unseeded": stated}


def _move_into_place(tmp: Path, out: Path, overwrite: bool, on_placed: Callable[[], None] | None) -> None:
    """Rename ``tmp`` (in the run folder) to ``out``; a release it replaces goes to the run
    folder's ``old/`` (removed with it; put back by a sweep if a kill comes between the renames)."""
    with held():  # the renames and the note that the release is in place: never one without the other
        old = None
        if out.exists() and overwrite:
            check_release_folder(out)  # again: it may have changed since the run began
            old = tmp.parent / "old" / out.name
            old.parent.mkdir()
            os.replace(out, old)
        try:
            os.rename(tmp, out)
        except OSError as e:
            if old is not None:  # put the previous release back
                os.replace(old, out)
            raise ReleaseError(
                f"cannot move the release into {str(out)!r} ({e.strerror})", "check the folder and try again"
            ) from None
        if on_placed is not None:
            on_placed()
