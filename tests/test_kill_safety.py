"""A run killed at any stage never leaves a visible release without its spend in the ledger.

Each case runs ``dipsy synth`` in a fresh Python process whose one patched function ends the
process at once (``os._exit``, as a kill would: no ``finally``, no cleanup) just before or just
after a stage of the release path. Then, in this process: if a release folder is visible, the
ledger holds a spend for its release id (a kill may over-count, never under-count); and the next
run into the same folder, a process of its own, succeeds (stale temporary folders are swept, not
reused as a release).

The processes are forked from one Python process of this module's own (:data:`ZYGOTE`) that has
imported ``dipsy.cli`` (and the readers a run imports on its way to the first stage) and run nothing:
importing was most of each process's 2 CPU seconds, and a fork starts each run from the state of
``python -m dipsy`` after its imports.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import CE_DATA, CE_DOMAIN

from dipsy.privacy import Ledger

#: (module, object path, before or after): the stages of a release, in order.
STAGES = [
    ("dipsy.privacy.ledger", "Ledger.reserve", "before"),
    ("dipsy.privacy.ledger", "Ledger.reserve", "after"),
    ("dipsy.privacy.session", "Session.measure", "after"),
    ("dipsy.methods.base", "Model.draw_chunks", "before"),
    ("dipsy.release", "Release.metadata", "after"),
    ("dipsy.release", "_move_into_place", "before"),
    ("dipsy.release", "_move_into_place", "after"),
    ("dipsy.privacy.ledger", "Ledger.confirm", "before"),
    ("dipsy.privacy.ledger", "Ledger.confirm", "after"),
]

ZYGOTE = textwrap.dedent("""
    import json, os, sys
    import dipsy.cli  # what `python -m dipsy` imports before it runs anything
    import duckdb, pyarrow.dataset  # and what a run imports before the charge (reading the data), no thread started

    def threads() -> int:
        try:
            return len(os.listdir("/proc/self/task"))  # every thread, the native libraries' too
        except OSError:
            import threading
            return threading.active_count()

    while line := sys.stdin.readline():
        request = json.loads(line)
        if threads() != 1:  # a fork copies one thread: another's locks would stay held in the run
            print(-1, flush=True)
            sys.exit(f"{threads()} threads in the process the runs are forked from: no fork")
        pid = os.fork()
        if pid:
            print(pid, flush=True)  # for the test to kill on a timeout
            print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
            continue
        # the run: its own output file, the test's environment and folder; it ends the process
        sys.stdin = open(os.devnull)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        if request["stage"]:
            import importlib
            module, path, when = request["stage"]
            owner = importlib.import_module(module)
            *outer, name = path.split(".")
            for part in outer:
                owner = getattr(owner, part)
            real = getattr(owner, name)
            def killed(*args, _real=real, _when=when, **kwargs):
                if _when == "before":
                    os._exit(137)
                result = _real(*args, **kwargs)
                os._exit(137)
            setattr(owner, name, killed)
        sys.argv = ["dipsy", *request["args"]]
        sys.exit(dipsy.cli.main(request["args"]))
""")


class Zygote:
    """The process the runs are forked from (:data:`ZYGOTE`), one request at a time."""

    def __init__(self) -> None:
        # one thread only, so that forking it is safe: no BLAS threads started as NumPy loads, no
        # background thread of Arrow's allocator (its threads start later, in the run, when it reads)
        single = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ | single
        )
        self.pending = b""  # read from its output, not yet answered (its answers are lines)

    def _answer(self, deadline: float) -> int:
        fd = self.process.stdout.fileno()  # read unbuffered: select then sees every byte not yet read
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 4096) if ready else b""
            if not chunk:
                raise TimeoutError("no answer from the process the runs are forked from")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return int(line)

    def run(self, log: Path, stage: tuple[str, ...], args: list[str]) -> subprocess.CompletedProcess:
        request = {"log": str(log), "env": dict(os.environ), "cwd": os.getcwd(), "stage": list(stage), "args": args}
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + 120
        pid = self._answer(deadline)
        assert pid > 0, "the process the runs are forked from has started a thread: it cannot fork safely"
        try:
            code = self._answer(deadline)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)  # the run hangs: end it, and take its exit code, the answer due
            self._answer(time.monotonic() + 30)
            raise
        output = log.read_text(errors="replace")
        return subprocess.CompletedProcess(args, code, stdout=output, stderr=output)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def zygote():
    process = Zygote()
    yield process
    process.close()


def synth(zygote: Zygote, out: Path, ledger: Path, *stage: str) -> subprocess.CompletedProcess:
    args = [
        "synth",
        str(CE_DATA),
        "--domain",
        str(CE_DOMAIN),
        "--method",
        "laplace-sanitizer",
        "--columns",
        "Race",
        "--epsilon",
        "1",
        "--out",
        str(out),
        "--ledger",
        str(ledger),
        "--dataset-id",
        "ce",
    ]
    # the run's output in a file beside the test's folder, not in it: the test lists that folder
    log = out.parent.with_name(f"{out.parent.name}-{'killed' if stage else 'again'}.log")
    return zygote.run(log, stage, args)


@pytest.mark.parametrize("stage", STAGES, ids=[f"{p}-{w}" for _, p, w in STAGES])
def test_a_kill_never_leaves_a_release_without_its_spend(stage, tmp_path, zygote):
    out, ledger = tmp_path / "release", tmp_path / "ledger.sqlite"
    killed = synth(zygote, out, ledger, *stage)
    assert killed.returncode == 137, killed.stderr
    if out.exists():  # visible: its spend must be there
        release_id = json.loads((out / "release.json").read_text())["release_id"]
        assert release_id in {s["release_id"] for s in Ledger(ledger).spends("ce")}
    again = synth(zygote, out, ledger) if not out.exists() else None
    if again is not None:  # stale temporary folders do not stop the next run
        assert again.returncode == 0, again.stderr
        assert (out / "release.json").exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".release")] == []
