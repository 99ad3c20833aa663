"""The public domain: columns, their categories or bounds, and the codec to integer codes."""

from .codec import decode, encode_column, encode_frame, valid_rows
from .columns import Column
from .domain import Domain, check_cells
from .limits import CELL_LIMIT, MAX_CODES
from .validation import ColumnIssue, ValidationReport

__all__ = [
    "CELL_LIMIT",
    "Column",
    "ColumnIssue",
    "Domain",
    "MAX_CODES",
    "ValidationReport",
    "check_cells",
    "decode",
    "encode_column",
    "encode_frame",
    "valid_rows",
]
