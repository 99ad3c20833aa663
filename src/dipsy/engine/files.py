"""What a data file is, from its name and header alone: its format, its column names, and the
words for a file that cannot be read. Shared by the engines and by ``dipsy domain init``, which
reads a file's header or schema without reading a value.

Besides CSV and Parquet, the statistical agencies' formats (SAS, Stata, SPSS) are recognised by
their extensions; the engines read them through a Parquet copy (:mod:`.agency`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..domain import Domain
from ..errors import DataError

CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: The agencies' formats by extension: SAS data and transport files, Stata, SPSS (``.zsav``: compressed).
AGENCY_SUFFIXES = {".sas7bdat": "sas7bdat", ".xpt": "xpt", ".dta": "dta", ".sav": "sav", ".zsav": "sav"}
#: Each agency format's name in messages.
AGENCY_NAMES = {"sas7bdat": "SAS (.sas7bdat)", "xpt": "SAS transport (.xpt)", "dta": "Stata (.dta)", "sav": "SPSS (.sav)"}


def file_format(path: Path, agency: bool = False) -> str:
    """``"csv"``, ``"parquet"`` or, when ``agency``, an agency format (``"sas7bdat"``, ``"xpt"``,
    ``"dta"``, ``"sav"`` for ``.sav`` and ``.zsav``), from the file's extension; any other is refused.

    Without ``agency`` an agency file is refused too, with the way to read it: an engine opened on
    its own reads CSV and Parquet, and :func:`dipsy.engine.engine_for` converts the others first.

    >>> file_format(Path("wave1.zsav"), agency=True)
    'sav'
    """
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    found = next((fmt for suffix, fmt in AGENCY_SUFFIXES.items() if name.endswith(suffix)), None)
    if found is not None:
        if agency:
            return found
        raise DataError(
            f"data file {str(path)!r} is a {AGENCY_NAMES[found]} file, which this engine reads only through a Parquet copy",
            "open it with dipsy.engine.engine_for (as dipsy's commands and API do), which makes the copy",
        )
    raise DataError(
        f"data file {str(path)!r} is neither CSV nor Parquet nor a SAS, Stata or SPSS file",
        f"give it one of the extensions {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES + tuple(AGENCY_SUFFIXES))}",
    )


def unreadable_fix(fmt: str) -> str:
    """What to check in a file of format ``fmt`` that could not be read."""
    if fmt == "csv":
        return "check that it is a comma-separated UTF-8 file with a header row and no line longer than the header"
    return "check that it is a complete Parquet file"


def error_reason(e: BaseException) -> str:
    """The first line of an error, with the line saying what is wrong when DuckDB gives one."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    detail = [line for line in lines[1:] if re.search(r"Expected Number of Columns|unterminated quote|[Uu]nicode|UTF-8", line)]
    return f"{lines[0]} ({detail[0]})" if detail else lines[0]


def refuse_repeated(names: list[str], domain: Domain, where: str) -> None:
    """Refuse a column of ``domain`` that the file names more than once (which one would be read?)."""
    seen: set[str] = set()
    for name in names:
        if name in seen and name in domain.names:
            raise DataError(f"{where} names the column {name!r} more than once", "give each column of the data a distinct name")
        seen.add(name)


def dedup_names(names: list[str]) -> list[str]:
    """Column names as pandas.read_csv makes them: 'Unnamed: i' for blanks, 'a.1' for repeats."""
    names = [n if n != "" else f"Unnamed: {i}" for i, n in enumerate(names)]
    counts: dict[str, int] = {}
    out = []
    for name in names:
        count = counts.get(name, 0)
        while count > 0:
            counts[name] = count + 1
            name = f"{name}.{count}"
            count = counts.get(name, 0)
        out.append(name)
        counts[name] = count + 1
    return out
