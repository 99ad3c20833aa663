"""Faults once work has begun: charge late, fail early, and say what is true.

The cases: a device without room (refused before the charge) or one that fills after it (the
spend taken back), a ledger that cannot take a spend back (said to be pending), categories the
output format cannot store (refused before the charge), a terminal that cannot be written after
the release (success, said on standard error), Ctrl-C and SIGTERM at chosen moments, Ctrl-C while
the command line starts, and a kill (one run folder left, swept by the next run wherever it writes).

Every case checks the last line (one line on standard error, no traceback, true at that moment:
nothing charged; the spend taken back; pending; or released, where, and what was spent), the exit
code (2: the user's fix; 130: interrupted before the release was in place; 0: the release is in
place, whatever failed after), the ledger (no spend without a release, a recorded spend for a
release in place) and that nothing is left behind: no run folder beside the output, no pointer
or DuckDB scratch in the temporary folder.

The full-device cases mount a small tmpfs, which needs root; where mounting fails they are
skipped, saying so. The moments of a signal are made exact by a driver that patches one stage
of the release path to send the signal to its own process just before or after that stage.
The subprocess cases start together (one fixture) and are judged one by one.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from conftest import CE_DATA, CE_DOMAIN, default_sigint

from dipsy.cli import main
from dipsy.engine.owner import MARKER, POINTER_PREFIX, RUN_PREFIX, sweep_runs
from dipsy.errors import DipsyError
from dipsy.privacy import Ledger
from dipsy.release import Release

# -- helpers ------------------------------------------------------------------------------------


def synth(out: Path, ledger: Path, *extra: str, columns: str = "Race") -> list[str]:
    return [
        "synth",
        str(CE_DATA),
        "--domain",
        str(CE_DOMAIN),
        "--method",
        "laplace-sanitizer",
        "--columns",
        columns,
        "--epsilon",
        "1",
        "--out",
        str(out),
        "--ledger",
        str(ledger),
        "--dataset-id",
        "ce",
        *extra,
    ]


def run(capfd, args: list[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def one_line(err: str, start: str, *parts: str) -> str:
    """The one line on standard error, which starts with ``start`` and holds every part."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), err
    for part in parts:
        assert part in lines[0], err
    return lines[0]


def statuses(ledger: Path) -> list[str]:
    """The status of each spend of data set 'ce' (none when the ledger does not exist)."""
    return [s["status"] for s in Ledger(ledger).spends("ce")] if ledger.exists() else []


def litter(*folders: Path) -> list[str]:
    """What a run may leave in ``folders``: run folders, their pointers, DuckDB scratch, old temporary folders."""
    return sorted(
        p.name
        for f in folders
        if f.is_dir()
        for p in f.iterdir()
        if p.name.startswith((RUN_PREFIX, POINTER_PREFIX, "dipsy-duckdb-", ".rel."))
    )


@pytest.fixture
def temp(tmp_path, monkeypatch) -> Path:
    """A private temporary folder, where pointers and scratch would show."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def device(tmp_path):
    """Mount a small tmpfs of the given size (root only); skip, saying why, where it cannot be mounted."""
    mounted = []

    def mount(size: str) -> Path:
        where = tmp_path / f"device{len(mounted)}"
        where.mkdir()
        if shutil.which("mount") is None:
            pytest.skip("no mount command here: the full-device cases mount a small tmpfs")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
        if done.returncode:
            pytest.skip(
                f"cannot mount a {size} tmpfs here ({' '.join(done.stderr.split()) or 'mount failed'}): "
                "the full-device cases need root"
            )
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(where: Path) -> Path:
    """Fill the device of ``where`` with one file, to the last byte."""
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as f:
        block = bytes(1 << 16)
        while True:
            try:
                f.write(block)
            except OSError as e:
                assert e.errno == errno.ENOSPC
                break
    with open(filler, "ab", buffering=0) as f:  # the last few bytes too
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass
    return filler


# -- a full device ------------------------------------------------------------------------------------


def test_a_device_without_room_is_refused_before_the_charge(capfd, device, tmp_path, temp):
    dev, ledger = device("512k"), tmp_path / "l.sqlite"
    code, _, err = run(capfd, synth(dev / "rel", ledger))
    assert code == 2
    one_line(err, "error: the device of", "free some space there", "nothing was charged")
    assert list(dev.iterdir()) == [] and not ledger.exists() and litter(temp) == []


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param([], id="parquet"),
        pytest.param(["--format", "csv"], id="csv"),
        pytest.param(["--stream"], id="streamed"),
        pytest.param(["--partition-by", "UrbanRural"], id="partitioned"),
    ],
)
def test_a_device_that_fills_after_the_charge_takes_the_spend_back(capfd, device, tmp_path, temp, monkeypatch, extra):
    dev, ledger = device("4m"), tmp_path / "l.sqlite"
    save = Release.save

    def filled_first(self, *args, **kwargs):  # someone else fills the device between the charge and the save
        fill(dev)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(Release, "save", filled_first)
    code, _, err = run(capfd, synth(dev / "rel", ledger, *extra, columns="Race,UrbanRural"))
    assert code == 2
    line = one_line(err, "error: ", "nothing was released, and its spend (ε = 1 under ", "for data set 'ce') was taken back")
    assert "no space left on device" in line.lower()
    assert statuses(ledger) == [] and [p.name for p in dev.iterdir()] == ["filler"] and litter(temp) == []


def test_a_spend_that_cannot_be_taken_back_is_said_to_be_pending(capfd, tmp_path, temp, monkeypatch):
    ledger, out = tmp_path / "l.sqlite", tmp_path / "rel"

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def locked(self, release_id):
        raise DipsyError("the budget ledger is locked", "try again")

    monkeypatch.setattr(Release, "save", full)
    monkeypatch.setattr(Ledger, "cancel", locked)
    code, _, err = run(capfd, synth(out, ledger))
    assert code == 2
    one_line(
        err,
        "error: no space left on device",
        "nothing was released, but its spend (ε = 1 under substitute for data set 'ce'; release ",
        f"stays pending in the ledger {ledger}",
    )
    assert statuses(ledger) == ["pending"] and not out.exists() and litter(tmp_path, temp) == []


def discover(out: Path, ledger: Path, skeleton: Path) -> list[str]:
    return [
        "domain",
        "discover",
        str(CE_DATA),
        "--domain",
        str(skeleton),
        "--out",
        str(out),
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--ledger",
        str(ledger),
        "--dataset-id",
        "ce",
    ]


@pytest.fixture
def skeleton(tmp_path) -> Path:
    path = tmp_path / "skeleton.yaml"
    path.write_text("columns:\n  Race: {kind: categorical, categories: TODO}\n")
    return path


def test_domain_discover_without_room_is_refused_before_the_charge(capfd, device, tmp_path, temp, skeleton):
    dev, ledger = device("512k"), tmp_path / "l.sqlite"
    code, _, err = run(capfd, discover(dev / "d.yaml", ledger, skeleton))
    assert code == 2
    one_line(err, "error: the device of", "nothing was charged")
    assert list(dev.iterdir()) == [] and not ledger.exists() and litter(temp) == []


def test_domain_discover_on_a_device_that_fills_takes_the_spend_back(capfd, device, tmp_path, temp, skeleton, monkeypatch):
    from dipsy.authoring import DomainFile

    dev, ledger = device("4m"), tmp_path / "l.sqlite"
    write = DomainFile.__call__

    def filled_first(self, result):
        fill(dev)
        return write(self, result)

    monkeypatch.setattr(DomainFile, "__call__", filled_first)
    code, _, err = run(capfd, discover(dev / "d.yaml", ledger, skeleton))
    assert code == 2
    line = one_line(err, "error: ", "nothing was released, and its spend (", "for data set 'ce') was taken back")
    assert "no space left on device" in line.lower()
    assert statuses(ledger) == [] and [p.name for p in dev.iterdir()] == ["filler"] and litter(temp) == []


# -- categories the format cannot store -----------------------------------------------------------------

# (id, the column's categories in YAML, a value of the data, extra arguments, a part of the message)
UNSTORABLE = [
    ("numbers and text in Parquet", "[1, a]", "a", [], "Parquet cannot store its categories 1, 'a'"),
    ("a date and text in Parquet", "[2020-01-01, a]", "a", [], "is read by YAML as a date"),  # refused as the domain is read
    ("bytes in Parquet", "[!!binary aGk=, !!binary eW8=]", "b'hi'", [], "is tagged !!binary"),
    ("an integer past 64 bits in Parquet", "[1180591620717411303424, 1]", "1", [], "Parquet cannot store"),
    ("NA in CSV", "['NA', x]", "x", ["--format", "csv"], "(read back, it is a missing value)"),
    ("a partition folder name too long", f"[{'x' * 300}, y]", "y", ["--partition-by", "D"], "is longer than the"),
]


@pytest.mark.parametrize("categories, value, extra, message", [pytest.param(*c[1:], id=c[0]) for c in UNSTORABLE])
def test_categories_the_format_cannot_store_are_refused_before_the_charge(
    capfd, tmp_path, temp, categories, value, extra, message
):
    domain, data = tmp_path / "d.yaml", tmp_path / "d.csv"
    domain.write_text(
        f"columns:\n  D: {{kind: categorical, categories: {categories}}}\n  E: {{kind: categorical, categories: [1, 2]}}\n"
    )
    data.write_text("D,E\n" + f"{value},1\n{value},2\n" * 10)
    ledger, out = tmp_path / "l.sqlite", tmp_path / "rel"
    code, _, err = run(
        capfd,
        [
            "synth",
            data,
            "--domain",
            domain,
            "--method",
            "laplace-sanitizer",
            "--epsilon",
            "1",
            "--out",
            out,
            "--ledger",
            ledger,
            "--dataset-id",
            "ce",
            "--accept-noise",
            *extra,
        ],
    )
    assert code == 2
    one_line(err, "error: ", message)
    assert not ledger.exists() and not out.exists() and litter(tmp_path, temp) == []


# -- a terminal that cannot be written, in this process --------------------------------------------------


class _Full:
    """A standard output on a full device."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    flush = write
    isatty = staticmethod(lambda: False)
    encoding = "utf-8"


def test_a_release_whose_terminal_is_full_is_a_success(capfd, tmp_path, temp, monkeypatch):
    ledger, out = tmp_path / "l.sqlite", tmp_path / "rel"
    monkeypatch.setattr(sys, "stdout", _Full())
    code, _, err = run(capfd, synth(out, ledger))
    assert code == 0
    release_id = json.loads((out / "release.json").read_text())["release_id"]
    one_line(
        err,
        f"warning: released to {out} (release {release_id}): ε = 1 under substitute for data set 'ce', recorded in "
        f"the ledger {ledger}; after that: OSError:",
        "No space left on device",
    )
    assert statuses(ledger) == ["released"] and litter(tmp_path, temp) == []


# -- signals at chosen moments, in this process -----------------------------------------------------------

#: (id, module, object, before or after, what the line says, the exit code)
MOMENTS = [
    ("before the charge", "dipsy.release", "Output.check", "before", "nothing was charged or released", 130),
    ("after the charge", "dipsy.privacy.session", "Session.measure", "after", "was taken back", 130),
    ("while saving", "dipsy.release", "Release.metadata", "after", "was taken back", 130),
    ("release in place, unrecorded", "dipsy.release", "_move_into_place", "after", "recorded in the ledger", 0),
    ("release recorded", "dipsy.privacy.ledger", "Ledger.confirm", "after", "recorded in the ledger", 0),
]


def _patch_signal(monkeypatch, module: str, path: str, when: str, sig: int) -> None:
    import importlib

    owner = importlib.import_module(module)
    *outer, name = path.split(".")
    for part in outer:
        owner = getattr(owner, part)
    real = getattr(owner, name)

    def signalled(*args, **kwargs):
        if when == "before":
            os.kill(os.getpid(), sig)
        result = real(*args, **kwargs)
        if when == "after":
            os.kill(os.getpid(), sig)
        return result

    monkeypatch.setattr(owner, name, signalled)


def judge(code: int, err: str, expected: int, says: str, sig: int, out: Path, ledger: Path) -> None:
    assert code == expected, err
    if expected == 0:
        release_id = json.loads((out / "release.json").read_text())["release_id"]
        what = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
        one_line(err, f"warning: released to {out} (release {release_id}): ε = 1", says, f"after that: {what}")
        assert statuses(ledger) == ["released"]
    else:
        one_line(err, "error: interrupted" if sig == signal.SIGINT else "error: terminated (SIGTERM)", says)
        assert statuses(ledger) == [] and not out.exists()


@pytest.mark.usefixtures("ctrl_c")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("module, path, when, says, expected", [pytest.param(*m[1:], id=m[0]) for m in MOMENTS])
def test_a_signal_at_any_moment_gives_one_true_line(capfd, tmp_path, temp, monkeypatch, module, path, when, says, expected, sig):
    ledger, out = tmp_path / "l.sqlite", tmp_path / "rel"
    _patch_signal(monkeypatch, module, path, when, sig)
    code, _, err = run(capfd, synth(out, ledger))
    judge(code, err, expected, says, sig, out, ledger)
    assert litter(tmp_path, temp) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # main puts SIGTERM's handler back


# -- in a dipsy process of its own ------------------------------------------------------------------------

SIGNALLED = textwrap.dedent("""
    import importlib, os, sys
    module, path, when, sig = sys.argv[1:5]
    owner = importlib.import_module(module)
    *outer, name = path.split(".")
    for part in outer:
        owner = getattr(owner, part)
    real = getattr(owner, name)
    def signalled(*args, **kwargs):
        if when == "before":
            os.kill(os.getpid(), int(sig))
        result = real(*args, **kwargs)
        if when == "after":
            os.kill(os.getpid(), int(sig))
        if when == "kill":
            os._exit(137)
        return result
    setattr(owner, name, signalled)
    sys.argv = ["dipsy", *sys.argv[5:]]
    from dipsy.__main__ import run
    run()
""")

STARTING = textwrap.dedent("""
    import os, signal, sys
    class Interrupted:  # Ctrl-C while pandas loads
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                os.kill(os.getpid(), signal.SIGINT)
    sys.meta_path.insert(0, Interrupted())
    sys.argv = ["dipsy", "methods"]
    from dipsy.__main__ import run
    run()
""")

#: (id, the stage a signal is sent at or None, the signal, standard output)
PROCESSES = [
    ("SIGINT before the charge", ("dipsy.release", "Output.check", "before"), signal.SIGINT, None),
    ("SIGTERM after the charge", ("dipsy.privacy.session", "Session.measure", "after"), signal.SIGTERM, None),
    ("SIGINT with the release in place", ("dipsy.release", "_move_into_place", "after"), signal.SIGINT, None),
    ("standard output on /dev/full", None, None, "full"),
    ("standard output a closed pipe", None, None, "closed"),
    ("killed after the charge", ("dipsy.privacy.session", "Session.measure", "kill"), signal.SIGKILL, None),
]


@pytest.fixture(scope="module")
def processes(tmp_path_factory) -> dict:
    """Every subprocess case, started at once, and its result once all have ended."""
    started = {}
    for name, stage, sig, stdout in PROCESSES + [("Ctrl-C while starting", None, None, None)]:
        where = tmp_path_factory.mktemp("process")
        temp = where / "temp"
        temp.mkdir()
        out, ledger = where / "out" / "rel", where / "l.sqlite"
        out.parent.mkdir()
        env = {**os.environ, "TMPDIR": str(temp), "DIPSY_LEDGER": str(ledger)}
        if name == "Ctrl-C while starting":
            argv = [sys.executable, "-c", STARTING]
        elif stage is None:
            argv = [sys.executable, "-m", "dipsy", *synth(out, ledger)]
        else:
            argv = [sys.executable, "-c", SIGNALLED, *stage, str(int(sig)), *synth(out, ledger)]
        sink = None
        if stdout == "full":
            sink = open("/dev/full", "w")
        elif stdout == "closed":
            read, write = os.pipe()
            os.close(read)
            sink = os.fdopen(write, "w")
        process = subprocess.Popen(
            default_sigint(argv), stdout=sink if sink is not None else subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        if sink is not None:
            sink.close()
        started[name] = (process, where, temp, out, ledger)
    results = {}
    for name, (process, where, temp, out, ledger) in started.items():
        _, err = process.communicate(timeout=300)
        results[name] = (process.returncode, err, where, temp, out, ledger)
    return results


@pytest.mark.parametrize("name, stage, sig", [pytest.param(p[0], p[1], p[2], id=p[0]) for p in PROCESSES[:3]])
def test_a_signal_to_a_dipsy_process_gives_one_true_line(processes, name, stage, sig):
    code, err, where, temp, out, ledger = processes[name]
    moment = next(m for m in MOMENTS if m[2] == stage[1])
    judge(code, err, moment[5], moment[4], sig, out, ledger)
    assert litter(where, out.parent, temp) == []


@pytest.mark.parametrize("name", ["standard output on /dev/full", "standard output a closed pipe"])
def test_a_release_whose_terminal_cannot_be_written_is_a_success(processes, name):
    code, err, where, temp, out, ledger = processes[name]
    assert code == 0, err
    release_id = json.loads((out / "release.json").read_text())["release_id"]
    error = "OSError: [Errno 28] No space left on device" if "full" in name else "BrokenPipeError: [Errno 32] Broken pipe"
    one_line(
        err,
        f"warning: released to {out} (release {release_id}): ε = 1 under substitute for data set 'ce', recorded",
        f"after that: {error}",
    )
    assert statuses(ledger) == ["released"] and litter(where, out.parent, temp) == []


def test_ctrl_c_while_the_command_line_starts_is_one_line(processes):
    code, err, *_ = processes["Ctrl-C while starting"]
    assert code == 130
    one_line(err, "error: interrupted while starting; nothing was charged or released")


def test_a_kill_leaves_one_run_folder_that_the_next_run_anywhere_sweeps(processes, capfd, tmp_path, monkeypatch):
    code, err, where, temp, out, ledger = processes["killed after the charge"]
    assert code == 137, err
    [left] = litter(out.parent)
    assert left.startswith(RUN_PREFIX) and [p.name for p in (out.parent / left).iterdir() if p.name.startswith("dipsy-duckdb-")]
    [pointer] = litter(temp)
    assert pointer.startswith(POINTER_PREFIX) and statuses(ledger) == ["pending"]  # killed: counted, never under-counted
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    elsewhere = tmp_path / "elsewhere" / "rel"
    code, _, err = run(capfd, synth(elsewhere, ledger))
    assert code == 0, err
    assert litter(out.parent, temp, elsewhere.parent) == [] and (elsewhere / "release.json").exists()


# -- the sweep of run folders ------------------------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_sweep_puts_back_a_release_an_overwrite_had_moved_aside(tmp_path, temp):
    dead = {"pid": _dead_pid(), "started": None, "host": socket.gethostname(), "target": "rel"}
    folder = tmp_path / f"{RUN_PREFIX}killed"
    (folder / "old" / "rel").mkdir(parents=True)
    (folder / "old" / "rel" / "release.json").write_text("{}")
    (folder / MARKER).write_text(json.dumps(dead))
    unmarked = tmp_path / f"{RUN_PREFIX}unmarked"  # named by a pointer: made, then killed before its marker
    unmarked.mkdir()
    (temp / f"{POINTER_PREFIX}unmarked.owner").write_text(json.dumps({**dead, "run": str(unmarked)}))
    live = tmp_path / f"{RUN_PREFIX}live"
    live.mkdir()
    (live / MARKER).write_text(json.dumps({**dead, "pid": os.getpid(), "started": None}))
    assert sorted(sweep_runs(tmp_path)) == sorted([folder, unmarked])
    assert (tmp_path / "rel" / "release.json").exists() and live.exists() and litter(temp) == []
