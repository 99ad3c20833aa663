"""``python -m dipsy`` and the ``dipsy`` console script: the command line.

:func:`run` imports the command line itself, so that Ctrl-C or SIGTERM while NumPy, pandas and
JAX load (seconds) ends in one line and exit code 130 rather than a traceback (``import dipsy``
loads nothing heavy: see :mod:`dipsy`). Once :func:`dipsy.cli.main` has said how the command
ended, a late Ctrl-C cannot change it: both signals are ignored while the interpreter shuts down.
"""

import os
import signal
import sys


def run() -> None:
    """Run the command line with ``sys.argv`` and exit with its code."""
    signal.signal(signal.SIGTERM, _terminated)  # main takes SIGTERM over, and hands this back when it ends
    try:
        from .cli import main
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted while starting; nothing was charged or released\n")
        sys.exit(130)
    code = main()
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)
    try:
        sys.stdout.flush()
    except OSError:  # main has said what happened: the interpreter's own flush at exit must not say it again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    sys.exit(code)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    run()
