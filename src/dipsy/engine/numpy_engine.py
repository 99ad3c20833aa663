"""In-memory engine over a pandas DataFrame, vectorised with NumPy."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Domain, ValidationReport, encode_frame, valid_rows
from ..domain.codec import numbers
from ..errors import DataError
from .base import Engine


class NumpyEngine(Engine):
    """Queries over a DataFrame already in memory.

    >>> from dipsy.domain import Domain
    >>> e = NumpyEngine(pd.DataFrame({"a": [0, 1, 1]}), Domain.from_sizes({"a": 2}))
    >>> e.contingency(["a"]).dense().tolist()
    [1, 2]
    """

    def __init__(self, frame: pd.DataFrame, domain: Domain, on_invalid: str = "error") -> None:
        super().__init__(domain, on_invalid)
        repeated = sorted({str(n) for n in frame.columns[frame.columns.duplicated()] if n in domain.names})
        if repeated:
            raise DataError(f"the data name the column(s) {', '.join(map(repr, repeated))} more than once",
                            "give each column of the DataFrame a distinct name")
        self.frame = frame
        self._codes: dict[str, np.ndarray] | None = None

    def _reopen(self, domain: Domain) -> "NumpyEngine":
        return NumpyEngine(self.frame, domain, self.on_invalid)

    def _validate(self) -> ValidationReport:
        encoded, report = encode_frame(self.frame, self.domain)
        if not report.missing_columns:
            self._valid = valid_rows(encoded, len(self.frame))
            self._codes = {name: e.codes[self._valid] for name, e in encoded.items()}
        return report

    def _values(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        assert self._codes is not None  # ensure_valid() ran
        out = {}
        for name in names:
            if self.domain[name].is_categorical:
                out[name] = self._codes[name].astype(np.int64)
            else:
                out[name] = numbers(self.frame[name], self.domain[name])[self._valid]  # clipped, if the domain says so
        return out

    def _cell_counts(self, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        assert self._codes is not None  # ensure_valid() ran
        flat = np.ravel_multi_index(tuple(self._codes[n] for n in names), shape)
        cells, counts = np.unique(flat, return_counts=True)
        return cells, counts
