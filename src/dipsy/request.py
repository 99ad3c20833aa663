"""What a release is, as one frozen value: the :class:`Request` the command line and the API build.

``dipsy synth`` builds a :class:`Request` from its flags, :func:`dipsy.synthesize` from its keyword
arguments; :func:`dipsy.api.run` carries it out, and the release records its public fields in
``release.json`` under ``request`` (:meth:`Request.public`). What the request holds and the record
leaves out:

- ``data`` is the confidential data (a file's path, or a DataFrame): never recorded, never shown
  in the request's ``repr``;
- ``ledger``, ``dataset_id``, ``budget_cap`` and ``raise_cap`` are the operator's bookkeeping, which
  the ledger records (a data set's default id is its file's SHA-256, a fact about the data);
- ``output``'s folder, like the ledger's path, is the operator's local path; its format and
  partition columns are recorded;
- ``domain`` is recorded beside the release already (``domain.yaml`` and ``domain_sha256``).

Everything else — method, the budget as given (ε, δ, ρ), sets, columns, options, neighbouring
relation, kind of release, seed, invalid-row policy, the declared rows, the engine — is public
input and recorded as given, the options in their public form (a public file by its name and
SHA-256, which only the method's settings know: the caller passes them to :meth:`Request.public`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from .domain import Domain
from .engine.base import ON_INVALID
from .errors import DataError, DipsyError

#: A field recorded in ``release.json``: ``field(metadata=PUBLIC)``.
PUBLIC = MappingProxyType({"public": True})


@dataclass(frozen=True)
class Destination:
    """Where a release is written: the folder, its files' format, the columns that partition each
    set into folders, and whether an existing release there may be replaced."""

    folder: Path
    format: str = "parquet"
    overwrite: bool = False
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", Path(self.folder))
        object.__setattr__(self, "partition_by", tuple(self.partition_by))


@dataclass(frozen=True, eq=False)
class Request:
    """One release, as asked for: what to read, what to release from it, under which budget, and
    where it is recorded and written.

    Attributes
    ----------
    data
        The confidential data: a CSV or Parquet path (kept as a :class:`~pathlib.Path`) or a DataFrame.
    domain
        The public domain, or its file's path (loaded when the release is planned).
    method, epsilon, delta, rho, sets, columns, options, neighbouring, release, seed, on_invalid, accept_noise, rows, stream, engine
        As :func:`dipsy.synthesize` takes them; ε, δ and ρ as given (numbers or their text).
    output
        Where the release is written, or None: the caller saves it (``on_release``).
    ledger, dataset_id, budget_cap, raise_cap
        The budget ledger's file (None: nothing is recorded), the data set's name in it, and the
        cap to store or enforce.

    Two requests are equal when every field is; data held in memory are equal only to themselves
    (a DataFrame has no single truth value to compare by).
    """

    data: pd.DataFrame | Path = field(repr=False)
    domain: Domain | Path
    method: str = field(default="dirichlet-multinomial", metadata=PUBLIC)
    epsilon: float | str | None = field(default=None, metadata=PUBLIC)
    delta: float | str | None = field(default=None, metadata=PUBLIC)
    rho: float | str | None = field(default=None, metadata=PUBLIC)
    sets: int = field(default=1, metadata=PUBLIC)
    columns: tuple[str, ...] | None = field(default=None, metadata=PUBLIC)
    options: Mapping[str, Any] = field(default_factory=dict, metadata=PUBLIC)
    neighbouring: str | None = field(default=None, metadata=PUBLIC)
    release: str = field(default="records", metadata=PUBLIC)
    seed: int | None = field(default=None, metadata=PUBLIC)
    on_invalid: str = field(default="error", metadata=PUBLIC)
    accept_noise: bool = field(default=False, metadata=PUBLIC)
    rows: int | None = field(default=None, metadata=PUBLIC)
    stream: bool = field(default=False, metadata=PUBLIC)
    engine: str | None = field(default=None, metadata=PUBLIC)
    output: Destination | None = None
    ledger: Path | None = None
    dataset_id: str | None = None
    budget_cap: Any = None
    raise_cap: bool = False

    def __post_init__(self) -> None:
        """Normalise what was given, and refuse what is wrong on its face (public inputs only)."""
        if isinstance(self.data, str):
            object.__setattr__(self, "data", Path(self.data))
        if not isinstance(self.data, (pd.DataFrame, Path)):
            raise DataError(
                f"cannot read data of type {type(self.data).__name__}", "pass a CSV or Parquet path, or a pandas DataFrame"
            )
        if isinstance(self.domain, str):
            object.__setattr__(self, "domain", Path(self.domain))
        if self.columns is not None:
            object.__setattr__(self, "columns", tuple(self.columns))
        # A read-only view of a copy: the caller's dict may change, the request may not.
        object.__setattr__(self, "options", MappingProxyType(dict(self.options or {})))
        if self.ledger is not None:
            object.__setattr__(self, "ledger", Path(self.ledger))
        if self.on_invalid not in ON_INVALID:
            raise DataError(f"on_invalid is {self.on_invalid!r}", "use 'error' or 'drop'")
        if self.dataset_id is not None and (not isinstance(self.dataset_id, str) or not self.dataset_id.strip()):
            raise DipsyError(
                f"the data set id {self.dataset_id!r} is empty (a script's variable that expanded to nothing?): "
                "every release of a data set must count under one name",
                "pass --dataset-id with the data set's name, or leave it out",
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        in_memory = isinstance(self.data, pd.DataFrame) or isinstance(other.data, pd.DataFrame)
        same_data = self.data is other.data if in_memory else self.data == other.data
        return same_data and all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name != "data")

    __hash__ = None  # type: ignore[assignment]  # equal requests may hold unhashable options

    def public(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The fields ``release.json`` records (those marked :data:`PUBLIC`, and the output's format
        and partition columns), JSON-ready. ``options`` are the options in their public form, which
        replace those given (a public file by its name and SHA-256, never the operator's path)."""
        record: dict[str, Any] = {}
        for f in fields(self):
            if f.metadata.get("public"):
                value = getattr(self, f.name)
                record[f.name] = list(value) if isinstance(value, tuple) else value
        record["options"] = dict(options)
        # whether a budget ledger recorded the spend: a release drawn with none says so (the path stays private)
        record["recorded_in_ledger"] = self.ledger is not None
        record["output"] = (
            None if self.output is None else {"format": self.output.format, "partition_by": list(self.output.partition_by)}
        )
        return record
