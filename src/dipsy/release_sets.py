"""Synthetic sets written and read chunk by chunk: releases larger than memory.

A set drawn in chunks (:class:`ChunkedSet`) is written as a folder ``synthetic_k/`` of part files
``part-00000.parquet``, ``part-00001.parquet`` … one per chunk, in the order drawn; with
``partition_by`` (categorical columns) each chunk's records go to the Hive-style subfolder of
their value, ``synthetic_k/PUMA=1101/part-00000.parquet``, the column kept in the path only (as
Spark and Arrow write it). With the Spark engine, Spark writes the same layout, chunk after chunk
(its part files are named ``part-00000-<job>-c000.snappy.parquet``, or ``.c000`` in partition
folders). Memory is bounded by one chunk (:data:`~dipsy.methods.base.CHUNK_ROWS` records)
whatever the size of the set.

:func:`read_set` reads such a folder (or a one-file set) back chunk by chunk, checking every chunk
against the release's domain as it is read: a record the domain does not allow stops the read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import pandas as pd

from .domain import Domain, encode_frame
from .errors import DataError, ReleaseError

#: The files inside a set folder, and its partition subfolders.
PART_FILE = re.compile(r"part-[0-9]{5,}(-[0-9a-f-]+[-.]c[0-9]+(\.snappy)?)?\.(parquet|csv)")  # dipsy's, or Spark's
PARTITION_DIR = re.compile(r"[^=/]+=[^/]*")


def is_part_file(name: str) -> bool:
    """Whether ``name`` is a part file of a set folder, as dipsy or Spark names them.

    >>> [is_part_file(n) for n in ("part-00003.parquet", "part-00000-c672a49c-333a-4f73-8f8f-0059561adb5f-c000.snappy.parquet",
    ...                            "part-00001-d7f0e8a0-eca8-4151-8e78-c6fe5b445770.c000.snappy.parquet", "_SUCCESS", "notes.parquet")]
    [True, True, True, False, False]
    """
    return PART_FILE.fullmatch(name) is not None


class ChunkedSet:
    """One synthetic set, drawn chunk by chunk as it is read, once (the draws are not kept).

    ``len()`` is its number of records, known once it has been read.

    >>> s = ChunkedSet(pd.DataFrame({"a": [i] * 2}) for i in range(3))
    >>> sum(len(c) for c in s), len(s)
    (6, 6)
    """

    def __init__(self, chunks: Iterable[pd.DataFrame]) -> None:
        self._chunks = iter(chunks)
        self._rows: int | None = None
        self._started = False

    def __iter__(self) -> Iterator[pd.DataFrame]:
        if self._started:
            raise ReleaseError(
                "a streamed set is drawn as it is written, and can be read only once",
                "read the written release back with dipsy.release_sets.read_set",
            )
        self._started = True
        rows = 0
        for chunk in self._chunks:
            rows += len(chunk)
            yield chunk
        self._rows = rows

    def __len__(self) -> int:
        if self._rows is None:
            raise ReleaseError("a streamed set's size is known once it has been written", "save the release first")
        return self._rows


def write_set(
    chunks: Iterable[pd.DataFrame],
    folder: Path,
    format: str,
    domain: Domain,
    partition_by: tuple[str, ...] = (),
    spark: bool = False,
) -> int:
    """Write ``chunks`` into the new folder ``folder`` as part files; returns the number of records.

    ``spark``: Spark writes them (Parquet only), appending chunk by chunk, e.g. to a cluster's
    file system.
    """
    check_partition_columns(partition_by, domain)
    if format not in ("parquet", "csv"):  # the agencies' formats (dta, sav, xpt) are one file per set
        raise ReleaseError(
            f"a set written in chunks or partitioned is a folder of part files, in Parquet or CSV, not {format}",
            f"leave out --stream and --partition-by to write one {format} file per set, or use --format parquet or csv",
        )
    if spark:
        if format != "parquet":
            raise ReleaseError("Spark writes a release as Parquet", "use --format parquet with --engine spark")
        from .engine.spark_engine import write_parquet

        written = [0]

        def counted():
            for chunk in chunks:
                written[0] += len(chunk)
                yield chunk

        write_parquet(counted(), folder, partition_by)
        return written[0]
    folder.mkdir()
    rows = 0
    for i, chunk in enumerate(chunks):
        rows += len(chunk)
        name = f"part-{i:05d}.{format}"
        if not partition_by:
            _write(chunk, folder / name, format)
            continue
        for values, group in chunk.groupby(list(partition_by), sort=True, observed=True):
            values = values if isinstance(values, tuple) else (values,)
            where = folder.joinpath(*(f"{c}={quote(str(v), safe='')}" for c, v in zip(partition_by, values)))
            where.mkdir(parents=True, exist_ok=True)
            _write(group.drop(columns=list(partition_by)), where / name, format)
    return rows


def read_set(path: str | Path, domain: Domain) -> Iterator[pd.DataFrame]:
    """The records of one set (a file, or a folder written by :func:`write_set` or by Spark), one
    part file at a time, each checked against ``domain`` as it is read.

    Partition columns come back from the folder names as the domain's own values (a category, or
    an integer), and every chunk has the domain's columns in its order.
    """
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and is_part_file(p.name))
    if not files:
        raise DataError(f"{str(path)!r} holds no synthetic records", "pass a release's synthetic_k file or folder")
    for file in files:
        chunk = pd.read_parquet(file) if file.suffix == ".parquet" else pd.read_csv(file)
        for part in file.relative_to(path).parts[:-1] if path.is_dir() else ():
            if not PARTITION_DIR.fullmatch(part):
                continue
            name, text = part.split("=", 1)
            chunk[name] = _partition_value(unquote(text), name, domain)
        missing = [n for n in domain.names if n not in chunk.columns]
        if missing:
            raise DataError(
                f"{str(file)!r} lacks the column(s) {', '.join(map(repr, missing))} of the release's domain",
                "the release is damaged: write it again with 'dipsy synth', or restore the folder",
            )
        chunk = chunk[list(domain.names)]
        _, report = encode_frame(chunk, domain)
        if not report.ok:
            raise DataError(
                f"{str(file)!r} holds records its release's domain does not allow: {report.summary()}",
                "the release is damaged: write it again with 'dipsy synth', or restore the folder",
            )
        yield chunk


def check_partition_columns(partition_by: tuple[str, ...], domain: Domain) -> None:
    """Refuse partition columns that are not categorical columns of the release."""
    for name in partition_by:
        if name not in domain.names:
            raise ReleaseError(f"partition column {name!r} is not a released column", f"choose from {', '.join(domain.names)}")
        if not domain[name].is_categorical:
            raise ReleaseError(
                f"partition column {name!r} is not categorical: each of its values would make a folder",
                "partition by a categorical column (e.g. a geography)",
            )
    if partition_by and set(partition_by) >= set(domain.names):
        raise ReleaseError("partitioning by every released column leaves the part files no column", "partition by fewer columns")


def is_set_folder(folder: Path) -> bool:
    """Whether ``folder`` holds part files and partition folders only (what :func:`write_set` writes)."""
    for p in folder.rglob("*"):
        if p.is_symlink() or (p.is_dir() and not PARTITION_DIR.fullmatch(p.name)):
            return False
        if p.is_file() and not is_part_file(p.name):
            return False
    return True


def _write(frame: pd.DataFrame, target: Path, format: str) -> None:
    if format == "parquet":
        frame.to_parquet(target, index=False)
    else:
        frame.to_csv(target, index=False)


def _partition_value(text: str, name: str, domain: Domain):
    """The value a partition folder names, as the domain's own category (its text is unique)."""
    column = domain[name]
    by_text = {str(c): c for c in column.categories or ()}
    if text in by_text:
        return by_text[text]
    try:
        return int(text) if column.kind == "integer" else float(text)
    except ValueError:
        raise DataError(
            f"the partition folder {name}={text} names no value of {name!r}",
            "the release is damaged: write it again with 'dipsy synth', or restore the folder",
        ) from None
