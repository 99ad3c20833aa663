"""The public domain: columns, their categories or bounds, and the codec to integer codes."""

from .codec import decode, encode_column, encode_frame, valid_rows
from .columns import Column
from .domain import Domain
from .validation import ColumnIssue, ValidationReport

__all__ = ["Column", "ColumnIssue", "Domain", "ValidationReport", "decode", "encode_column", "encode_frame", "valid_rows"]
