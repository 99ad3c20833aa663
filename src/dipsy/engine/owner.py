"""Which process owns a temporary folder, so that the folders of killed runs can be swept.

A folder of confidential intermediate data (a DuckDB spill folder, a release being written) holds
a marker file naming the process that made it: its pid, the pid's start time (Linux, to tell a
reused pid) and the host. A later run removes such folders whose process is gone on this host;
folders without a marker, or of another host, are never touched.

A command that writes (``dipsy synth``, ``dipsy domain discover``) keeps every temporary file in
one :class:`RunFolder` beside its output: the release or domain file being written, the release
an overwrite replaces, and the DuckDB engine's scratch (:func:`scratch_folder`). It is removed on
every way out of the command; a kill leaves that one folder, which the next such command sweeps
wherever it writes (:func:`sweep_runs`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import tempfile
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any

#: The marker file's name inside an owned folder.
MARKER = ".dipsy-owner"
#: The file beside a folder (or, for a run folder, in the system's temporary folder) that marks it.
OWNER_SUFFIX = ".owner"
#: A run folder's name: this prefix and a random token.
RUN_PREFIX = ".dipsy-run."
#: The pointer to a run folder in the system's temporary folder: this prefix, the token, ``.owner``.
POINTER_PREFIX = "dipsy-run-"

#: The run folder of the command running in this context, for the engines' scratch.
_SCRATCH: ContextVar[Path | None] = ContextVar("dipsy_scratch", default=None)


def mark(folder: Path, marker: Path | None = None, **extra: Any) -> Path:
    """Write the marker of this process for ``folder`` (inside it, or at ``marker``); returns its path."""
    marker = Path(folder) / MARKER if marker is None else Path(marker)
    owner = {"pid": os.getpid(), "started": started(os.getpid()), "host": socket.gethostname(), **extra}
    marker.write_text(json.dumps(owner), encoding="utf-8")
    return marker


def owner_of(folder: Path, marker: Path | None = None) -> dict | None:
    """The marker of ``folder`` (inside it, or at ``marker``) when its process is gone on this host, else None."""
    marker = Path(folder) / MARKER if marker is None else Path(marker)
    try:
        owner = json.loads(marker.read_text(encoding="utf-8"))
        if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
            return None
        return None if alive(int(owner["pid"]), owner.get("started")) else owner
    except (OSError, ValueError, KeyError, TypeError):
        return None


def sweep(parent: Path, pattern: str) -> list[Path]:
    """Remove the folders under ``parent`` matching ``pattern`` whose owning process is gone."""
    removed: list[Path] = []
    try:
        candidates = sorted(Path(parent).glob(pattern))
    except OSError:
        return removed
    for folder in candidates:
        if folder.is_dir() and not folder.is_symlink() and owner_of(folder) is not None:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def started(pid: int) -> str | None:
    """The start time of process ``pid`` (Linux: clock ticks after boot), or None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def alive(pid: int, start: str | None) -> bool:
    """Whether process ``pid`` (started at ``start``, when known) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's live process
    except OSError:
        return True
    now = started(pid)
    return start is None or now is None or now == start


def scratch_folder() -> Path | None:
    """Where an engine puts its confidential scratch: the running command's :class:`RunFolder`,
    or None (the system's temporary folder) outside one."""
    return _SCRATCH.get()


class RunFolder:
    """Every temporary file of one command, in one folder beside its output (``parent``, so that
    what is written there is renamed into place on the same device), mode 0700.

    Entered, it is the engines' :func:`scratch_folder`; left by any way (an error, Ctrl-C,
    SIGTERM), it is removed with all it holds. Its marker names this process and the output
    (``target``); a pointer file in the system's temporary folder names it, so that after a kill
    the next command sweeps it wherever that command writes (:func:`sweep_runs`, run here first).

    >>> import tempfile
    >>> parent = Path(tempfile.mkdtemp())
    >>> with RunFolder(parent, "rel") as run:
    ...     scratch_folder() == run.path, run.path.parent == parent
    (True, True)
    >>> list(parent.iterdir()), scratch_folder()
    ([], None)
    """

    def __init__(self, parent: str | Path, target: str) -> None:
        parent = Path(parent)
        sweep_runs(parent)
        token = secrets.token_hex(8)
        self.path = parent / f"{RUN_PREFIX}{token}"
        self.pointer = Path(tempfile.gettempdir()) / f"{POINTER_PREFIX}{token}{OWNER_SUFFIX}"
        # The pointer first: a kill at any later moment leaves a folder the pointer names.
        mark(self.pointer.parent, self.pointer, run=str(self.path.absolute()), target=target)
        try:
            self.path.mkdir(mode=0o700)
            mark(self.path, target=target)
        except BaseException:
            self.remove()
            raise
        self._scratch: Token[Path | None] | None = None
        #: The output this run put in place, set by its writer at the rename (signals held).
        self.placed: Path | None = None

    def __enter__(self) -> RunFolder:
        self._scratch = _SCRATCH.set(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._scratch is not None, "__enter__ set it"
        _SCRATCH.reset(self._scratch)
        self.remove()

    def remove(self) -> None:
        """Remove the folder, then its pointer (a kill between leaves a pointer the next sweep drops)."""
        shutil.rmtree(self.path, ignore_errors=True)
        try:
            self.pointer.unlink(missing_ok=True)
        except OSError:
            pass


def sweep_runs(parent: str | Path) -> list[Path]:
    """Remove the run folders of killed commands: those the pointers in the system's temporary
    folder name, and those in ``parent``, whose process is gone on this host. A release that an
    overwrite had moved aside and whose replacement never arrived is put back first. Returns the
    folders removed."""
    removed = []
    temp = Path(tempfile.gettempdir())
    try:
        pointers = sorted(temp.glob(f"{POINTER_PREFIX}*{OWNER_SUFFIX}"))
    except OSError:
        pointers = []
    for pointer in pointers:
        owner = owner_of(temp, pointer)
        try:
            if owner is None or pointer.lstat().st_uid != os.getuid():
                continue
            folder = Path(str(owner.get("run", "")))
            if folder.is_absolute() and folder.name.startswith(RUN_PREFIX) and _clear(folder, str(owner.get("target", "")), True):
                removed.append(folder)
            pointer.unlink(missing_ok=True)
        except OSError:
            continue
    try:
        folders = sorted(Path(parent).glob(f"{RUN_PREFIX}*"))
    except OSError:
        folders = []
    for folder in folders:
        owner = owner_of(folder)
        if owner is not None and folder not in removed and _clear(folder, str(owner.get("target", "")), False):
            removed.append(folder)
    return removed


def _clear(folder: Path, target: str, pointed: bool) -> bool:
    """Remove a dead run's folder, putting back first a release its overwrite moved aside. A
    folder reached by its pointer may lack its own marker (a kill just after it was made), but
    one that has a marker must name a dead process too."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    if pointed and (folder / MARKER).exists() and owner_of(folder) is None:
        return False
    old = folder / "old" / target
    out = folder.parent / target
    if target and "/" not in target and target not in (".", "..") and old.is_dir() and not (out.exists() or out.is_symlink()):
        os.replace(old, out)  # the overwrite was killed between its two renames
    shutil.rmtree(folder, ignore_errors=True)
    return True
