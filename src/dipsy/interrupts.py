"""Ctrl-C and SIGTERM: one kind of interruption, held back while a step and its record must agree.

A release is told truthfully only if the step that changes what exists (the ledger's charge, the
rename that makes a release visible) and the note that it happened are never torn apart by an
interruption. :func:`held` keeps SIGINT and SIGTERM pending for the length of such a block (they
are delivered, and raise, as soon as it ends); :func:`terminate_as_interrupt` makes SIGTERM raise
:class:`Terminated`, a :class:`KeyboardInterrupt`, so that both take the same path to one line and
exit code 130; :func:`ignored` drops both while a run says how it ended. Only the main thread
receives signals in Python, so elsewhere these do nothing.

>>> with held():
...     pass
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The signals a person or a scheduler uses to stop a run.
STOPS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would raise :class:`KeyboardInterrupt`."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends (a blocked signal stays pending, and its
    handler runs once the block is left, on the first line after it)."""
    if not _main_thread():
        yield
        return
    before = None
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        yield
    finally:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextmanager
def ignored() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM in the block (a run saying how it ended: a second Ctrl-C must not
    tear that line); afterwards their handlers are as before."""
    if not _main_thread():
        yield
        return
    before = {stop: signal.signal(stop, signal.SIG_IGN) for stop in STOPS}
    try:
        yield
    finally:
        for stop, handler in before.items():
            signal.signal(stop, handler)


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated`; afterwards its handler is as before."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
