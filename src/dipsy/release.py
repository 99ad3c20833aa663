"""A release: the synthetic tables, their privacy statement and provenance, written atomically.

A release folder holds ``synthetic_1.<fmt>`` … ``synthetic_m.<fmt>`` (or, for sets written in
chunks, folders ``synthetic_1/`` … of part files: :mod:`dipsy.release_sets`), ``release.json`` and
the public domain of the released columns (``domain.yaml``). Everything is written into a temporary
folder beside the target and renamed into place, so a failure leaves nothing behind. The folder
gets the permissions of any new folder (``0o777`` less the umask), not the temporary folder's 0700.

``--overwrite`` replaces only a folder that holds a dipsy release (a ``release.json`` with a
``release_id``, and release files only): any other folder, or a release beside which someone put
other files, is refused, so that an overwrite never deletes what dipsy did not write.

Temporary folders are named ``.<name>.<random>`` (``.<name>.old.<random>`` for the release an
overwrite replaces) beside the target, each with a marker file beside it, ``<folder>.owner``,
naming the process that made it (pid, its start time, the host) and the target. A run that is
killed leaves its temporary folder behind; the next save to the same target sweeps every such
folder whose process is gone (on this host), first putting back a replaced release whose
replacement never arrived, and any marker left without its folder. The marker lives beside the
folder, never in it, so a release never holds it. Temporary folders without a marker (another
program's, or older dipsy's) are left alone.

Nothing in ``release.json`` is computed from the confidential data beyond what the statement
declares public (n): in particular no hash of the data file, which would let anyone holding a
candidate file confirm it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .domain import Domain
from .engine.owner import mark, owner_of
from .errors import ReleaseError
from .methods import Statement
from .methods.counts import describe_cells
from .privacy import Spend
from .release_sets import ChunkedSet, check_partition_columns, is_set_folder, write_set

FORMATS = ("parquet", "csv")


@dataclass(frozen=True, eq=False)
class Release:
    """The public output of one synthesis run.

    Attributes
    ----------
    tables
        The m synthetic sets, one DataFrame each: records, or (``kind == "table"``) one row per
        cell with its ``count``; or, for a streamed release, a
        :class:`~dipsy.release_sets.ChunkedSet` each, drawn as :meth:`save` writes it.
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

    tables: list[pd.DataFrame] | list[ChunkedSet]
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
    #: The expected error forecast from the plan before any measurement (:mod:`dipsy.forecast`): public inputs only.
    forecast: dict[str, Any] | None = None

    def metadata(self) -> dict[str, Any]:
        """The content of ``release.json``."""
        meta = {
            "release_id": self.release_id,
            "release": self.kind,
            "method": self.method,
            "options": self.options,
            "parameters": self.parameters,
            "privacy": _with_transformations(self.statement.to_dict(), self.domain),
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
        if self.forecast is not None:
            meta["forecast"] = self.forecast
        if self.kind == "table":
            meta["cells"] = describe_cells(self.domain)
            meta["files"] = [f"{self.stem}_{k}" for k in range(1, len(self.tables) + 1)]
        return meta

    def save(self, out: str | Path, format: str = "parquet", overwrite: bool = False, partition_by: tuple[str, ...] = (),
             engine: str | None = None) -> Path:
        """Write the release to the folder ``out`` atomically; refuse an existing one unless ``overwrite``.

        A set drawn in chunks (:class:`~dipsy.release_sets.ChunkedSet`), or any set when
        ``partition_by`` names columns, is written as a folder of part files
        (:func:`~dipsy.release_sets.write_set`), by Spark when ``engine`` is ``"spark"``; any
        other as one file.
        """
        out = Path(out)
        check_target(out, overwrite)
        if format not in FORMATS:
            raise ReleaseError(f"unknown format {format!r}", f"use one of {', '.join(FORMATS)}")
        partition_by = tuple(partition_by)
        check_partition_columns(partition_by, self.domain)
        if partition_by and self.kind == "table":
            raise ReleaseError("a released table is one row per cell: it is not partitioned", "leave out --partition-by")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            sweep_stale(out)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
            marker = _mark(tmp, out, "new")
        except OSError as e:
            raise ReleaseError(f"cannot write into {str(out.parent)!r} ({e.strerror})", "choose a writable --out folder") from None
        try:
            for k, table in enumerate(self.tables, start=1):
                target = tmp / f"{self.stem}_{k}.{format}"
                if isinstance(table, ChunkedSet) or partition_by:
                    write_set([table] if isinstance(table, pd.DataFrame) else table, tmp / f"{self.stem}_{k}", format,
                              self.domain, partition_by, spark=engine == "spark")
                elif format == "parquet":
                    table.to_parquet(target, index=False)
                else:
                    table.to_csv(target, index=False)
            self.domain.save(tmp / "domain.yaml")
            (tmp / "release.json").write_text(json.dumps(self.metadata(), indent=2, default=str) + "\n", encoding="utf-8")
            tmp.chmod(0o777 & ~_umask())
            _move_into_place(tmp, out, overwrite)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            marker.unlink(missing_ok=True)
        return out


#: A temporary folder's marker is the file beside it named ``<folder><OWNER_SUFFIX>``.
OWNER_SUFFIX = ".owner"
#: The files a release folder holds (what --overwrite may replace).
RELEASE_FILES = re.compile(r"release\.json|domain\.yaml|(synthetic|table)_[1-9][0-9]*\.(parquet|csv)")
#: The folders of sets written in chunks (see :mod:`dipsy.release_sets`).
SET_FOLDER = re.compile(r"synthetic_[1-9][0-9]*")


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse an output folder that cannot take a release, before any work is done: an existing
    one unless ``overwrite``, and then only a dipsy release; a folder that cannot be made or
    written. Creates nothing (a probe file, and any folder made to hold it, are removed)."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise ReleaseError(f"the output folder {str(out)!r} already exists", "choose another --out, or pass --overwrite")
        if not out.is_dir():
            raise ReleaseError(f"{str(out)!r} exists and is not a folder", "choose another --out")
        check_release_folder(out)
    check_writable_folder(out.parent, "--out")


def check_release_folder(folder: Path) -> None:
    """Refuse a folder that is not a dipsy release, or holds anything but release files."""
    fix = "--overwrite replaces only a dipsy release folder: choose another --out, or move the folder away"
    try:
        names = sorted(p.name for p in folder.iterdir())
        meta = json.loads((folder / "release.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"{str(folder)!r} is not a dipsy release (it has no release.json)", fix) from None
    except (OSError, ValueError) as e:
        raise ReleaseError(f"{str(folder)!r} is not a readable dipsy release ({getattr(e, 'strerror', None) or e})", fix) from None
    if not (isinstance(meta, dict) and re.fullmatch(r"[0-9a-f]{32}", str(meta.get("release_id", ""))) and "dipsy_version" in meta):
        raise ReleaseError(f"{str(folder)!r} is not a dipsy release (its release.json has no dipsy release_id)", fix)
    others = [n for n in names if not (RELEASE_FILES.fullmatch(n) and (folder / n).is_file()
                                       or SET_FOLDER.fullmatch(n) and (folder / n).is_dir() and is_set_folder(folder / n))]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise ReleaseError(f"the release folder {str(folder)!r} also holds {shown}, which dipsy did not write",
                           "move those files out of it first, or choose another --out")


def check_writable_folder(folder: Path, flag: str) -> None:
    """Refuse ``folder`` (made if needed) when a file cannot be created in it. Leaves nothing behind."""
    folder = Path(folder).absolute()
    missing = []
    existing = folder
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        raise ReleaseError(f"cannot write into {str(folder)!r}: {str(existing)!r} is not a folder", f"choose another {flag}")
    try:
        for d in reversed(missing):
            d.mkdir()
        fd, probe = tempfile.mkstemp(prefix=".dipsy-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ReleaseError(f"cannot write into {str(folder)!r} ({e.strerror})", f"choose a writable {flag}") from None
    finally:
        for d in missing:
            try:
                d.rmdir()
            except OSError:
                pass


def sweep_stale(out: Path) -> list[Path]:
    """Remove the temporary folders of ``out`` left by runs that were killed (their process is
    gone), putting back first a replaced release whose replacement never arrived, and markers left
    without their folder. Returns the folders removed. Folders of live processes, of other hosts,
    of other targets or without a marker are left alone."""
    out = Path(out)
    removed = []
    try:
        markers = sorted(out.parent.glob(f".{glob.escape(out.name)}.*{OWNER_SUFFIX}"))
    except OSError:
        return removed
    for marker in markers:
        folder = marker.with_name(marker.name[: -len(OWNER_SUFFIX)])
        owner = owner_of(folder, marker)
        if owner is None or owner.get("target") != out.name:
            continue
        try:
            if folder.is_dir() and not folder.is_symlink():
                if owner.get("role") == "old" and (folder / out.name).is_dir() and not (out.exists() or out.is_symlink()):
                    os.replace(folder / out.name, out)  # the overwrite was killed between its two renames
                shutil.rmtree(folder)
                removed.append(folder)
            marker.unlink(missing_ok=True)
        except OSError:
            continue
    return removed


def _mark(folder: Path, out: Path, role: str) -> Path:
    return mark(folder, folder.with_name(folder.name + OWNER_SUFFIX), target=out.name, role=role)


def _with_transformations(privacy: dict[str, Any], domain: Domain) -> dict[str, Any]:
    """The statement with the domain's per-record transformations (clipping), listed after what it
    treats as public: one line per column, from the domain alone, never a count of changed records.

    The guarantee is unchanged: clipping is stable (a record maps to one record), so a mechanism
    that is ε-DP on the clipped data is ε-DP on the original (see :mod:`dipsy.domain.columns`)."""
    lines = domain.transformations()
    if not lines:
        return privacy
    claim = privacy.get("if_unseeded", privacy)  # a seeded release states its would-be guarantee there
    stated = {}
    for key, value in claim.items():
        stated[key] = value
        if key == "public":
            stated["transformations"] = list(lines)
    stated.setdefault("transformations", list(lines))
    if claim is privacy:
        return stated
    return {**privacy, "if_unseeded": stated}


def _umask() -> int:
    """The process's umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _move_into_place(tmp: Path, out: Path, overwrite: bool) -> None:
    old = None
    if out.exists() and overwrite:
        check_release_folder(out)  # again: it may have changed since the run began
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
        old_marker = _mark(old, out, "old")
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
            old_marker.unlink(missing_ok=True)
