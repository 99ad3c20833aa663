"""The name of a data set in the private ledger when no ``--dataset-id`` is given: its SHA-256.

:func:`fingerprint` reads a file's bytes, a folder's data files (a partitioned Parquet data set,
which the Spark engine reads as one table), or a DataFrame's column names and rows. It names the
data set in the ledger only; it is never written into a release.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError

#: Names that Parquet readers (pyarrow, and so pandas and Spark) skip in a folder: bookkeeping
#: such as ``_SUCCESS``, ``_metadata`` and ``.part-0.parquet.crc``, not rows of the data.
SKIPPED_PREFIXES = (".", "_")
_CHUNK = 1 << 20


def fingerprint(data: pd.DataFrame | str | Path) -> str:
    """SHA-256 of a data file's bytes, of a folder's data files, or of a DataFrame's column names and rows.

    A folder's digest covers every file the Parquet readers read (names starting with ``.`` or
    ``_`` are skipped, in subfolders too), in the order of their paths inside the folder, each
    with its path and size: the same files give the same digest wherever the folder lies, and a
    file renamed, moved between partitions, changed or added gives another.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "part-0.parquet").write_bytes(b"rows")
    ...     before = fingerprint(folder)
    ...     _ = (Path(folder) / "_SUCCESS").write_bytes(b"")  # bookkeeping, not data
    ...     before == fingerprint(folder)
    True
    """
    h = hashlib.sha256()
    if isinstance(data, pd.DataFrame):
        h.update("\x1f".join(map(str, data.columns)).encode())
        h.update(_row_hashes(data))
        return h.hexdigest()
    path = Path(data)
    try:
        if path.is_dir():
            files = _data_files(path)
            if not files:
                raise DataError(
                    f"the folder {str(path)!r} holds no data files", "pass a CSV or Parquet file, or a folder of Parquet files"
                )
            for relative, file in files:
                h.update(f"{relative}\x00{file.stat().st_size}\x00".encode())
                _add_bytes(h, file)
        else:
            _add_bytes(h, path)
    except OSError as e:
        raise DataError(f"cannot read {str(path)!r} ({e.strerror})", "check the path") from None
    return h.hexdigest()


def _data_files(folder: Path) -> list[tuple[str, Path]]:
    """The data files under ``folder`` with their paths inside it (POSIX form), in that order."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(SKIPPED_PREFIXES)]
        for name in names:
            if not name.startswith(SKIPPED_PREFIXES):
                file = Path(root, name)
                found.append((file.relative_to(folder).as_posix(), file))
    return sorted(found)


def _add_bytes(h: Any, path: Path) -> None:
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)


def _row_hashes(frame: pd.DataFrame) -> bytes:
    """pandas' hash of every row; a column of values pandas cannot hash (lists, dicts: an object
    column holding them) is hashed by each value's type and text instead, so such data still get a
    name (their rows are refused or dropped as invalid, and the ledger needs the name either way)."""
    try:
        return pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()
    except TypeError:
        texts = frame.apply(
            lambda column: column.map(lambda v: f"{type(v).__name__}:{v!r}") if column.dtype == object else column
        )
        return pd.util.hash_pandas_object(texts, index=False).to_numpy().tobytes()
