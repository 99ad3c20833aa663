"""Limits on declared sizes, checked from the domain before anything is allocated or read.

A domain is public and small; what it declares decides how much memory a run needs. A column of
10⁹ bins, or a cross-tabulation of 10¹² cells, would otherwise be discovered minutes and
gigabytes later as a ``MemoryError`` (or a misleading parse error). These limits turn such a
declaration into a clear error the moment the domain is read (:data:`MAX_CODES`) or a method
asks for the full cross-tabulation (:func:`~dipsy.domain.domain.check_cells`, beside the
:class:`~dipsy.domain.Domain` whose sizes it multiplies).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import DataError, DomainError

#: The most categories, or bins, one column may declare (one million).
MAX_CODES = 10**6
#: The most columns a domain, or a data file, may have. The widest public-use survey files have a
#: few hundred variables (the ACS person file about 290, its replicate weights included); DP
#: synthesis spreads ε over every column (the marginal methods over every pair), so past a thousand
#: each gets almost none; and the engines' work and memory grow with the columns (DuckDB's reader
#: passes its memory limit at about 3,000 columns of a CSV file).
MAX_COLUMNS = 1000
#: The largest domain file read, in bytes. The largest domain dipsy accepts, a column of a million
#: categories with labels, is about 34 MB of YAML (a minute and a gigabyte to read); a bigger file,
#: or a device such as /dev/zero, is refused before the parser holds it.
MAX_DOMAIN_BYTES = 64 * 2**20
#: The most cells a dense cross-tabulation may have: 2**28 (268 million) cells, 2 GiB per array
#: of int64 counts or float64 probabilities, of which a method holds a few at once.
CELL_LIMIT = 2**28


def check_width(names: Sequence[str], where: str) -> None:
    """Refuse a data file of more than :data:`MAX_COLUMNS` columns, from its header or schema alone
    (before any row is read: the readers' memory grows with the columns, not just the rows).

    >>> check_width(["a"] * 1001, "the header of 'wide.csv'")
    Traceback (most recent call last):
    ...
    dipsy.errors.DataError: the header of 'wide.csv' names 1,001 columns, more than the 1,000 dipsy reads; write the columns to release (at most 1,000) to a file of their own
    """
    if len(names) > MAX_COLUMNS:
        raise DataError(
            f"{where} names {len(names):,} columns, more than the {MAX_COLUMNS:,} dipsy reads",
            f"write the columns to release (at most {MAX_COLUMNS:,}) to a file of their own",
        )


def too_many_codes(where: str, count: int, unit: str, fix: str) -> DomainError:
    """The error for a column that declares more than :data:`MAX_CODES` ``unit`` (categories, bins)."""
    return DomainError(f"{where} declares {count:,} {unit}, more than the {MAX_CODES:,} a column may have", fix)
