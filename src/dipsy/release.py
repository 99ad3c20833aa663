"""A release: the synthetic tables, their privacy statement and provenance, written atomically.

A release folder holds ``synthetic_1.<fmt>`` … ``synthetic_m.<fmt>``, ``release.json`` and the
public domain of the released columns (``domain.yaml``). Everything is written into a temporary
folder beside the target and renamed into place, so a failure leaves nothing behind.

Nothing in ``release.json`` is computed from the confidential data beyond what the statement
declares public (n): in particular no hash of the data file, which would let anyone holding a
candidate file confirm it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .domain import Domain
from .errors import ReleaseError
from .methods import Statement
from .methods.counts import describe_cells
from .privacy import Spend

FORMATS = ("parquet", "csv")


@dataclass(frozen=True, eq=False)
class Release:
    """The public output of one synthesis run.

    Attributes
    ----------
    tables
        The m synthetic sets, one DataFrame each: records, or (``kind == "table"``) one row per
        cell with its ``count``.
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

    tables: list[pd.DataFrame]
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

    def metadata(self) -> dict[str, Any]:
        """The content of ``release.json``."""
        meta = {
            "release_id": self.release_id,
            "release": self.kind,
            "method": self.method,
            "options": self.options,
            "parameters": self.parameters,
            "privacy": self.statement.to_dict(),
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
                if self.on_invalid == "drop" else "rows that did not match the domain stop the run"
            ),
            "created": self.created,
        }
        if self.kind == "table":
            meta["cells"] = describe_cells(self.domain)
            meta["files"] = [f"{self.stem}_{k}" for k in range(1, len(self.tables) + 1)]
        return meta

    def save(self, out: str | Path, format: str = "parquet", overwrite: bool = False) -> Path:
        """Write the release to the folder ``out`` atomically; refuse an existing one unless ``overwrite``."""
        out = Path(out)
        check_target(out, overwrite)
        if format not in FORMATS:
            raise ReleaseError(f"unknown format {format!r}", f"use one of {', '.join(FORMATS)}")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        except OSError as e:
            raise ReleaseError(f"cannot write into {str(out.parent)!r} ({e.strerror})", "choose a writable --out folder") from None
        try:
            for k, table in enumerate(self.tables, start=1):
                target = tmp / f"{self.stem}_{k}.{format}"
                if format == "parquet":
                    table.to_parquet(target, index=False)
                else:
                    table.to_csv(target, index=False)
            self.domain.save(tmp / "domain.yaml")
            (tmp / "release.json").write_text(json.dumps(self.metadata(), indent=2, default=str) + "\n", encoding="utf-8")
            _move_into_place(tmp, out, overwrite)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse an existing output folder unless ``overwrite`` (before any work is done)."""
    if out.exists() and not overwrite:
        raise ReleaseError(f"the output folder {str(out)!r} already exists", "choose another --out, or pass --overwrite")
    if out.exists() and not out.is_dir():
        raise ReleaseError(f"{str(out)!r} exists and is not a folder", "choose another --out")


def _move_into_place(tmp: Path, out: Path, overwrite: bool) -> None:
    old = None
    if out.exists() and overwrite:
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
        os.replace(out, old / out.name)
    try:
        os.rename(tmp, out)
    except OSError as e:
        if old is not None:  # put the previous release back
            os.replace(old / out.name, out)
        raise ReleaseError(f"cannot move the release into {str(out)!r} ({e.strerror})", "check the folder and try again") from None
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
