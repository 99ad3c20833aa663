"""Outputs never touch inputs (DESIGN rule 8): every command's paths, resolved and compared before any work.

A command names what it reads (the confidential data, the domain, public files, a release's
folder, the budget ledger) and what it writes (a report, a JSON file, a domain file, a release
folder). :func:`check_outputs` resolves every path — following symbolic links (``realpath``) and,
where both files exist, comparing their device and inode, so a hard link or a bind-mounted alias
of an input is the input — and refuses, with the reason:

- an output that *is* an input (the data file, the domain, a public file, …);
- an output that is a budget ledger: the one the command uses, ``$DIPSY_LEDGER``, the default
  location, or any ledger dipsy has created on this machine (the caller passes them:
  :func:`dipsy.privacy.known.protected_ledgers`) — a report written over the record of every
  spend would start the next release from zero;
- an output inside a release folder the command reads (its ``release.json``, its domain, its sets);
- a folder output (``--out`` of ``synth``) that is, or holds, an input or a ledger: replacing it
  would destroy them;
- an output that is a device, a pipe or a socket;
- two outputs that are one file.

Nothing is created or changed by the check.

>>> import tempfile, pathlib
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> (tmp / "data.csv").write_text("x\\n1\\n")
4
>>> check_outputs({"--json": tmp / "data.csv"}, {"the data": tmp / "data.csv"})
Traceback (most recent call last):
...
dipsy.errors.DipsyError: --json names ... which is the data; nothing was written; give --json a path of its own
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import DipsyError

Paths = Mapping[str, "str | Path | None"]


def _resolved(path: str | Path) -> Path:
    """The absolute path with every symbolic link followed (also for a path that does not exist yet)."""
    return Path(os.path.realpath(Path(path).expanduser()))


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of an existing file, or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path, or the same device and inode
    (a hard link, a bind mount).

    >>> same_file("/tmp", "/tmp/")
    True
    """
    if _resolved(a) == _resolved(b):
        return True
    ia, ib = _identity(_resolved(a)), _identity(_resolved(b))
    return ia is not None and ia == ib


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies inside ``folder`` (both resolved), by path or by the folder's identity."""
    if path == folder or folder in path.parents:
        return True
    target = _identity(folder)
    return target is not None and any(_identity(p) == target for p in path.parents)


def check_outputs(
    outputs: Paths,
    inputs: Paths,
    *,
    folders: Paths | None = None,
    ledgers: Iterable[str | Path] = (),
    out_folder: tuple[str, str | Path] | None = None,
) -> None:
    """Refuse, before any work, outputs that would overwrite what the command reads (module docstring).

    Parameters
    ----------
    outputs
        ``{flag: path}`` of the files the command writes (None: not given).
    inputs
        ``{what: path}`` of the files it reads (the data, the domain, public files…).
    folders
        ``{what: folder}`` it reads whole (a release): no output may lie inside one.
    ledgers
        The budget ledgers no output may be: the command's, and every one dipsy knows
        (:func:`dipsy.privacy.known.protected_ledgers`).
    out_folder
        ``(flag, folder)`` of a folder the command writes (or replaces): it may neither be nor hold
        an input, a read folder or a ledger.
    """
    given = {flag: _resolved(p) for flag, p in outputs.items() if p is not None}
    reads = {what: _resolved(p) for what, p in inputs.items() if p is not None}
    read_folders = {what: _resolved(p) for what, p in (folders or {}).items() if p is not None}
    books = [_resolved(p) for p in ledgers]
    flags = list(given)
    for i, flag in enumerate(flags):
        path = given[flag]
        _refuse_special(flag, path)
        for what, source in reads.items():
            if same_file(path, source):
                _refuse(flag, path, f"which is {what}")
        for what, folder in read_folders.items():
            if _inside(path, folder):
                _refuse(flag, path, f"which is inside {what} ({folder})")
        for book in books:
            if same_file(path, book):
                _refuse(flag, path, "which is a budget ledger, the record of every spend")
        for other in flags[:i]:
            if same_file(path, given[other]):
                _refuse(flag, path, f"which {other} names too")
    if out_folder is not None:
        flag, folder = out_folder[0], _resolved(out_folder[1])
        _refuse_special(flag, folder)
        for what, source in [*reads.items(), *read_folders.items(), *(("a budget ledger", b) for b in books)]:
            if same_file(folder, source) or _inside(source, folder):
                _refuse(
                    flag,
                    folder,
                    f"which {'is' if same_file(folder, source) else 'holds'} {what} ({source})",
                    "give --out a folder of its own",
                )


def _refuse_special(flag: str, path: Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        _refuse(flag, path, "which is a device, a pipe or a socket, not a file")


def _refuse(flag: str, path: Path, why: str, fix: str | None = None) -> None:
    raise DipsyError(f"{flag} names {str(path)!r}, {why}; nothing was written", fix or f"give {flag} a path of its own")
