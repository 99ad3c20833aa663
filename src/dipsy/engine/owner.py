"""Which process owns a temporary folder, so that the folders of killed runs can be swept.

A folder of confidential intermediate data (a DuckDB spill folder, a release being written) holds
a marker file naming the process that made it: its pid, the pid's start time (Linux, to tell a
reused pid) and the host. A later run removes such folders whose process is gone on this host;
folders without a marker, or of another host, are never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

#: The marker file's name inside an owned folder.
MARKER = ".dipsy-owner"


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
    removed = []
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
