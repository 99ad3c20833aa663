"""In-memory engine over a pandas DataFrame, vectorised with NumPy."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Domain, ValidationReport, encode_frame, valid_rows
from ..domain.codec import numbers, states
from ..errors import DataError
from .base import Engine, Pick


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
            raise DataError(
                f"the data name the column(s) {', '.join(map(repr, repeated))} more than once",
                "give each column of the DataFrame a distinct name",
            )
        self.frame = frame
        self._codes: dict[str, np.ndarray] | None = None

    def _has_column(self, name: str) -> bool:
        return name in self.frame.columns

    def _raw_counts(self, name: str) -> tuple:
        values = self.frame[name]
        if isinstance(values, pd.DataFrame):
            raise DataError(
                f"the data name the column {name!r} more than once", "give each column of the DataFrame a distinct name"
            )
        values = values[~values.isna().to_numpy()]
        if pd.api.types.is_bool_dtype(values.dtype):
            texts = np.where(values.to_numpy(dtype=bool), "True", "False").astype(object)
            return *_counted(texts), np.zeros(0), np.zeros(0, np.int64)
        if pd.api.types.is_numeric_dtype(values.dtype):
            return [], [], *_counted(values.to_numpy(dtype=float))
        # Object (or string, or categorical) values, one at a time by their own type: booleans as
        # True/False, numbers as numbers, anything else as its text. The types are looked up
        # once per distinct type, not once per record.
        raw = values.astype(object).to_numpy(dtype=object)
        types = pd.Series(raw, dtype=object).map(type)
        kinds = {t: _kind(t) for t in pd.unique(types)}
        kind = types.map(kinds).to_numpy()
        booleans = np.where(raw[kind == "bool"].astype(bool), "True", "False").astype(object)
        others = pd.Series(raw[kind == "text"], dtype=object).astype(str).to_numpy(dtype=object)
        texts, text_counts = _counted(np.concatenate([booleans, others]))
        return texts, text_counts, *_counted(raw[kind == "number"].astype(float))

    def _reopen(self, domain: Domain) -> NumpyEngine:
        return NumpyEngine(self.frame, domain, self.on_invalid)

    def _validate(self) -> ValidationReport:
        encoded, report = encode_frame(self.frame, self.domain)
        if not report.missing_columns:
            self._valid = valid_rows(encoded, len(self.frame))
            self._codes = {name: e.codes[self._valid] for name, e in encoded.items()}
        return report

    def _values(self, picks: tuple[tuple[str, Pick], ...]) -> list[np.ndarray]:
        assert self._codes is not None  # ensure_valid() ran
        out = []
        for name, pick in picks:
            if pick == "code":
                out.append(self._codes[name].astype(np.int64))
            elif pick == "number":
                out.append(numbers(self.frame[name], self.domain[name])[self._valid])  # clipped, if the domain says so
            else:
                out.append(states(self.frame[name], self.domain[name])[self._valid])
        return out

    def _cell_counts(self, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        assert self._codes is not None  # ensure_valid() ran
        flat = np.ravel_multi_index(tuple(self._codes[n] for n in names), shape)
        cells, counts = np.unique(flat, return_counts=True)
        return cells, counts


def _kind(t: type) -> str:
    """How a raw value of type ``t`` is read: a boolean, a number, or text."""
    if issubclass(t, (bool, np.bool_)):
        return "bool"
    if issubclass(t, (int, float, np.integer, np.floating)):
        return "number"
    return "text"


def _counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values (all of one type: no ``1 == True`` merging) and their counts."""
    if values.size == 0:
        return values, np.zeros(0, np.int64)
    distinct, counts = np.unique(values, return_counts=True)
    return distinct, counts.astype(np.int64)
