"""The budget ledgers dipsy has created on this machine, so that a missing one is an error, never a fresh start.

A ledger is the record of every spend of a data set. Were it deleted, moved or replaced, the next
release would find no file, create a new one and start from zero spent: the cap would be
forgotten. So every ledger dipsy creates is remembered, by its resolved path, in a small text file
(:func:`record_path`: ``$DIPSY_CONFIG_DIR/ledgers.txt``, else ``ledgers.txt`` in the user's config
folder, e.g. ``~/.config/dipsy``), and a ledger that dipsy created and that is gone is refused
(:func:`check_not_lost`) with the fix: restore it, or — the data steward's decision — remove its
line from that file to start an empty ledger there. The record also tells the commands which
files no output may overwrite (:mod:`dipsy.paths`).

>>> import os, tempfile, pathlib
>>> before = os.environ.get("DIPSY_CONFIG_DIR"); os.environ["DIPSY_CONFIG_DIR"] = tempfile.mkdtemp()
>>> book = pathlib.Path(tempfile.mkdtemp()) / "l.sqlite"
>>> remember(book); [p.name for p in known_ledgers()]
['l.sqlite']
>>> check_not_lost(book)
Traceback (most recent call last):
...
dipsy.errors.DipsyError: the budget ledger ... that dipsy created is missing: ...
>>> _ = os.environ.pop("DIPSY_CONFIG_DIR") if before is None else os.environ.update(DIPSY_CONFIG_DIR=before)
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from ..errors import DipsyError


def default_ledger_path() -> Path:
    """``$DIPSY_LEDGER``, or ``ledger.sqlite`` under the user's data directory."""
    env = os.environ.get("DIPSY_LEDGER")
    return Path(env) if env else Path(platformdirs.user_data_dir("dipsy")) / "ledger.sqlite"


def record_path() -> Path:
    """The file that lists the ledgers dipsy created: ``$DIPSY_CONFIG_DIR/ledgers.txt`` or the user's config folder's."""
    folder = os.environ.get("DIPSY_CONFIG_DIR") or platformdirs.user_config_dir("dipsy")
    return Path(folder) / "ledgers.txt"


def known_ledgers() -> list[Path]:
    """The resolved paths of every ledger dipsy has created here (an unreadable record lists none)."""
    try:
        lines = record_path().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return [Path(line) for line in dict.fromkeys(x.strip() for x in lines) if line]


def remember(ledger: str | Path) -> None:
    """Add ``ledger`` (a file dipsy has just created) to the record; a record that cannot be written
    is left as it is (the ledger itself is the record that matters)."""
    path = Path(os.path.realpath(ledger))
    if path in known_ledgers():
        return
    record = record_path()
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        with open(record, "a", encoding="utf-8") as f:  # one short append: concurrent runs interleave lines, not bytes
            f.write(f"{path}\n")
    except OSError:
        pass


def forget(ledger: str | Path) -> None:
    """Take ``ledger`` out of the record: a command that created it and failed before recording
    anything removes it again (:func:`dipsy.cli.main`'s undo), so it was never a record of spends.
    An empty record is removed, with its folder when that is left empty."""
    path, record = Path(os.path.realpath(ledger)), record_path()
    left = [p for p in known_ledgers() if p != path]
    try:
        if left:
            record.write_text("".join(f"{p}\n" for p in left), encoding="utf-8")
        else:
            record.unlink(missing_ok=True)
            record.parent.rmdir()
    except OSError:
        pass


def check_not_lost(ledger: str | Path) -> None:
    """Refuse to start a ledger afresh where dipsy created one that is now missing."""
    path = Path(os.path.realpath(ledger))
    if not path.exists() and path in known_ledgers():
        raise DipsyError(
            f"the budget ledger {str(path)!r} that dipsy created is missing: a new one there would start this "
            "machine's record of spends from zero",
            f"restore it from its backup; or, if the data steward decides to start an empty ledger there, "
            f"remove its line from {record_path()}",
        )


def protected_ledgers(*more: str | Path | None) -> list[Path]:
    """Every ledger no command's output may overwrite: ``more`` (the command's own), ``$DIPSY_LEDGER``
    or the default location, and every ledger dipsy has created here."""
    return [Path(p) for p in more if p is not None] + [default_ledger_path(), *known_ledgers()]
