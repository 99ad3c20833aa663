"""The ``dipsy`` command line: ``methods``, ``domain check``, ``plan``, ``synth``, ``evaluate``, ``compare``, ``budget show``.

Bad input ends with one line on standard error, ``error: <problem>; <fix>``, and exit code 2
(design rule 5), with no Python traceback, and leaves nothing behind: no output folder, no ledger
made by the refused command, no temporary folder, no folder made to hold any of them. What can be
checked before any work is: the budget (:data:`EPSILON_RANGE`, :data:`RHO_RANGE`, δ in (0, 1)),
the number of sets (:data:`MAX_SETS`), the columns, the domain (its sizes too:
:data:`~dipsy.domain.MAX_CODES`), and every output path (writable, not a folder where a file goes,
``--overwrite`` only of a dipsy release). Running out of memory is reported as such. An error
that is not about the input (a bug) is one line too, with exit code 1; ``DIPSY_TRACEBACK=1``
shows its traceback.

A release is charged late and fails early: what the output needs (room, a format that stores
every category) is checked after the plan and before the charge (:class:`~dipsy.release.Output`).
A failure of the machine after the charge (a full device, a name too long, no permission:
:data:`ENVIRONMENT`) is exit code 2, Ctrl-C or SIGTERM 130, and the line says what was spent and
that it was taken back, or is pending; once the release is in place, any later failure is a
``warning:`` line saying where it is and what it spent, with exit code 0 (:func:`main`).
"""

from __future__ import annotations

import errno
import gc
import json
import logging
import math
import os
import sqlite3
import sys
import tempfile
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from .api import run
from .domain import Domain
from .engine import ENGINES, engine_for
from .engine.owner import RunFolder
from .errors import DataError, DipsyError, ReleaseError, on_command_line
from .interrupts import Terminated, ignored, terminate_as_interrupt
from .methods import NEIGHBOURINGS, default_method
from .methods import methods as list_methods
from .methods.base import MAX_ROWS, MAX_SETS
from .paths import Paths, check_outputs
from .permissions import umask
from .privacy import Ledger, default_ledger_path
from .privacy.budget import EPSILON_RANGE, RHO_RANGE
from .privacy.composition import composed_total, parse_cap
from .privacy.known import check_not_lost, forget, protected_ledgers
from .release import FORMATS, check_target, check_writable_folder
from .release_sets import check_partition_columns
from .request import Destination, Request
from .terminal import printable
from .version import __version__


class _Terminal(Console):
    """The console, escaping control characters in every text it prints (categories, names and
    paths come from the data and the domain file: see :func:`~dipsy.terminal.printable`)."""

    def render_str(self, text: str, **options: Any) -> Any:  # every str printed, table cells too, passes here
        return super().render_str(printable(text), **options)

    def on_broken_pipe(self) -> None:
        """The reader went away (``dipsy synth … | head``): write nothing more, and let :func:`main`
        say what was done (rich's own answer, SystemExit(1), would call a release a failure)."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


#: Markup off: names, categories and paths from the data could hold rich's [tags]; :func:`_styled` marks what is styled.
out = _Terminal(highlight=False, soft_wrap=True, markup=False)


def _styled(style: str, label: str, rest: str = "", **options: Any) -> None:
    """Print ``label`` in ``style`` (e.g. "bold red"), then ``rest`` as plain text (markup escaped)."""
    out.print(f"[{style}]{escape(label)}[/{style}]{escape(rest)}", markup=True, **options)


#: What to undo if the running command fails (see :func:`main`); each entry runs once.
_undo: list[Callable[[], None]] = []
#: What the running command is doing, for an out-of-memory message.
_doing = ["running the command"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the command line (the console script is :func:`dipsy.__main__.run`); returns the exit code.

    0: done; 2: bad input (one line ``error: <problem>; <fix>``), or a failure of the machine that
    the user can fix (a full device, a name too long, no permission: :data:`ENVIRONMENT`); 1: a
    bug (one line; set ``DIPSY_TRACEBACK=1`` for the traceback); 130: interrupted (Ctrl-C, or
    SIGTERM, taken alike). A failed command undoes what it made (see :func:`_undo_all`).

    The line is true at every moment of a release (:class:`_Run`): before the charge it says
    nothing was charged; after it, what was spent and whether it was taken back or stays pending;
    once the output is in place, any later failure (a terminal that cannot be written, an
    interruption) is one ``warning:`` line saying where the release is and what it spent, with
    exit code 0: the release exists, and a retry would spend again.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrintableFormatter("%(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    _undo.clear()
    _doing[0] = "running the command"
    _run.reset()
    code, message = 0, ""  # on a failure, _usage or _failure gives the message
    caught: BaseException | None = None
    with terminate_as_interrupt(), on_command_line():
        try:
            cli.main(args=argv, prog_name="dipsy", standalone_mode=False)
            sys.stdout.flush()  # a terminal that cannot be written fails here, not at exit
        except click.ClickException as e:
            # 'dipsy' or 'dipsy domain' alone: show the help (a NoArgsIsHelpError, a UsageError with its context)
            if type(e).__name__ == "NoArgsIsHelpError" and isinstance(e, click.UsageError) and e.ctx is not None:
                click.echo(e.ctx.get_help())
                return 0
            code, message, caught = 2, _usage(e), e
        except SystemExit:
            raise
        except BaseException as e:  # noqa: BLE001 - every other failure, Ctrl-C and SIGTERM too, ends in one line
            e = e.error if isinstance(e, _Passed) else e
            code, message = _failure(e)
            if code == 1 and os.environ.get("DIPSY_TRACEBACK") and _run.placed is None:
                _undo_all()
                raise e
            caught = e
        if code:
            assert caught is not None  # both except clauses that set a code set caught too (the other raises)
            with ignored():  # the run is saying how it ended: a second Ctrl-C must not tear that
                code, line = _run.ending(code, message, caught)
                # What the failed run still holds (a DuckDB engine and its spill folder of confidential
                # rows) is held by the frames of the exception's traceback: release it now, not at exit.
                traceback.clear_frames(caught.__traceback__)
                caught = None
                gc.collect(1)
                if code:
                    _undo_all()
                if line:
                    _say(line)
    _undo.clear()
    return code


#: Failures of the machine, not of dipsy, that the user can fix (exit code 2): each errno's fix.
ENVIRONMENT = {
    errno.ENOSPC: "free some space on that device, or write to another one",
    errno.EDQUOT: "free some of your disk quota, or write elsewhere",
    errno.EFBIG: "write to a file system that takes larger files",
    errno.ENAMETOOLONG: "choose a shorter path",
    errno.EACCES: "choose a path you may write, or change its permissions",
    errno.EPERM: "choose a path you may write, or change its permissions",
    errno.EROFS: "choose a writable device",
    errno.EMFILE: "raise the limit of open files (ulimit -n)",
    errno.ENFILE: "raise the system's limit of open files",
    errno.EIO: "check the device",
}
#: The exit code of a command whose reader went away (``dipsy methods | head``), as a shell reports SIGPIPE.
BROKEN_PIPE = 141


def _failure(e: BaseException) -> tuple[int, str]:
    """The exit code and the ``<problem>; <fix>`` of a failure (see :func:`main`)."""
    if isinstance(e, Terminated):
        return 130, "terminated (SIGTERM)"
    if isinstance(e, (click.exceptions.Abort, KeyboardInterrupt)):
        return 130, "interrupted"
    if isinstance(e, DipsyError):
        return 2, str(e)
    if isinstance(e, MemoryError):
        return 2, (
            f"out of memory while {_doing[0]}; choose fewer columns (--columns), coarser bins in the domain file, "
            "fewer sets, or a method that works on marginals (see 'dipsy methods')"
        )
    number = e.errno if isinstance(e, OSError) and e.errno in ENVIRONMENT else None
    if number is None and not isinstance(e, OSError):  # DuckDB and others name the error in their message only
        number = next((n for n in ENVIRONMENT if os.strerror(n) in str(e)), None)
    if number is not None:
        filename = getattr(e, "filename", None)
        where = f" ({filename})" if filename else ""
        return 2, f"{os.strerror(number).lower()}{where} while {_doing[0]}; {ENVIRONMENT[number]}"
    return 1, (
        f"internal error: {type(e).__name__}: {_one_line(str(e)) or 'no message'}{_where(e)}; this is a bug in dipsy: "
        "please report it with the command (DIPSY_TRACEBACK=1 shows the traceback)"
    )


def _say(line: str) -> None:
    """Write the last line on standard error; a standard error that cannot be written loses it, nothing more."""
    try:
        click.echo(printable(_one_line(line)), err=True)
    except OSError:
        pass


class _Run:
    """What the running command has done that its last line must state (see :func:`main`).

    ``release_id`` is set once the ledger holds the command's charge (:class:`_Recording`);
    ``pending`` while that charge is neither taken back nor confirmed; ``confirmed`` once the
    ledger marks it released. ``work`` is the command's run folder, whose ``placed`` names the
    output once it is in place (set at the rename, with the signals held).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.ledger: Ledger | None = None
        self.release_id: str | None = None
        self.spent = ""
        self.pending = False
        self.confirmed = False
        self.work: RunFolder | None = None

    @property
    def placed(self) -> Path | None:
        return None if self.work is None else self.work.placed

    @property
    def ledger_path(self) -> str:
        """The ledger's file, for the last line (the ledger is set with ``release_id``, by :meth:`charged`)."""
        return "(none)" if self.ledger is None else str(self.ledger.path)

    def charged(self, ledger: Ledger, dataset_id: str, release_id: str, spends: Any, relation: Any, guarantee: str) -> None:
        budgets = [s.budget for s in spends]
        try:
            total = str(composed_total(budgets) or ", ".join(map(str, budgets)))
        except DipsyError:  # a local ε_x: no DP total
            total = ", ".join(map(str, budgets))
        name = f"{dataset_id[:12]}…" if len(dataset_id) == 64 else dataset_id  # a file's SHA-256
        test = " (a seeded test: recorded, never counted)" if guarantee == "test" else ""
        self.ledger, self.release_id, self.pending = ledger, release_id, True
        self.spent = f"{total} under {relation} for data set {name!r}{test}"

    def ending(self, code: int, message: str, error: BaseException) -> tuple[int, str]:
        """The exit code and the last line of a command that failed with ``error`` (``code`` and
        ``message`` from :func:`_failure`)."""
        if self.placed is not None:
            # Interrupted between the rename and the record of it (the ledger is set with release_id).
            if self.release_id is not None and self.ledger is not None and not self.confirmed:
                try:
                    self.ledger.confirm(self.release_id)
                except Exception:  # noqa: BLE001 - it stays pending, counted, and the line says so
                    pass
            recorded = "recorded" if self.confirmed else "recorded as pending (counted)"
            what = message if code == 130 else f"{type(error).__name__}: {_one_line(str(error))}"
            return 0, (
                f"warning: released to {self.placed} (release {self.release_id}): {self.spent}, {recorded} in the ledger "
                f"{self.ledger_path}; after that: {what}"
            )
        if self.release_id is None:
            if isinstance(error, BrokenPipeError):  # the reader chose to stop reading: nothing to say, and no one to say it to
                return BROKEN_PIPE, ""
            return code, f"error: {message}" + ("; nothing was charged or released" if code == 130 else "")
        if self.pending:
            return code, (
                f"error: {message}; nothing was released, but its spend ({self.spent}; release {self.release_id}) "
                f"stays pending in the ledger {self.ledger_path}, counted against the data set"
            )
        return code, f"error: {message}; nothing was released, and its spend ({self.spent}) was taken back"


#: The running command's state (see :class:`_Run`).
_run = _Run()


class _Recording(Ledger):
    """The budget ledger, noting in :data:`_run` what it records for the running command."""

    def reserve(self, dataset_id: str, release_id: str, method: str, spends: Any, relation: Any, **options: Any) -> Any:
        reservation = super().reserve(dataset_id, release_id, method, spends, relation, **options)
        _run.charged(self, dataset_id, release_id, spends, relation, options.get("guarantee", "dp"))
        return reservation

    def cancel(self, release_id: str) -> int:
        deleted = super().cancel(release_id)
        if release_id == _run.release_id:
            _run.pending = False
        return deleted

    def confirm(self, release_id: str) -> None:
        super().confirm(release_id)
        if release_id == _run.release_id:
            _run.pending, _run.confirmed = False, True


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class _PrintableFormatter(logging.Formatter):
    """Log lines with control characters escaped (a warning may quote values of the data)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def _where(e: BaseException) -> str:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f" (at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno})" if tb is not None else ""


def _usage(e: click.ClickException) -> str:
    """A click error in the ``<problem>; <fix>`` form: the fix is the command's --help."""
    problem = _one_line(e.format_message()).rstrip(".")
    ctx = getattr(e, "ctx", None)
    command = ctx.command_path if ctx is not None else "dipsy"
    return f"{problem}; see '{command} --help'"


def _undo_all() -> None:
    """Run the undo list, newest first; an undo that fails is skipped (never a second error)."""
    while _undo:
        step = _undo.pop()
        try:
            step()
        except Exception:  # noqa: BLE001 - best effort: the first error is the one to report
            pass


def _keep_no_new_folders(folder: Path) -> None:
    """On failure, remove the folders that ``folder`` needs and that do not exist yet, if empty."""
    missing = []
    f = Path(folder).absolute()
    while not f.exists() and not f.is_symlink() and f != f.parent:
        missing.append(f)
        f = f.parent

    def undo() -> None:
        for d in missing:  # deepest first; rmdir removes only an empty folder
            try:
                d.rmdir()
            except OSError:
                break

    _undo.append(undo)


def _keep_no_new_ledger(path: Path) -> None:
    """On failure, remove a ledger file this command created that records nothing.

    The check and the removal happen under SQLite's exclusive lock, and only when every table is
    empty, so that no record of any run is ever lost."""
    if path.exists() or path.is_symlink():
        return
    _keep_no_new_folders(path.parent)

    def undo() -> None:
        if not path.is_file():
            return
        with sqlite3.connect(path, timeout=5, isolation_level=None) as db:
            db.execute("BEGIN EXCLUSIVE")
            try:
                tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                empty = all(db.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() is None for t in tables)
                if empty:
                    path.unlink()
                    forget(path)
                    for suffix in ("-journal", "-wal", "-shm"):
                        Path(f"{path}{suffix}").unlink(missing_ok=True)
            finally:
                db.execute("ROLLBACK")
        db.close()

    _undo.append(undo)


def _number(flag: str, value: str | None, allowed: tuple[float, float] | None = None) -> float | None:
    """The number given with ``flag``, or a :class:`DipsyError` before any work is done."""
    if value is None:
        return None
    name = flag.lstrip("-")
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if name == "delta":
        if not (math.isfinite(x) and 0 < x < 1):
            raise DipsyError(f"delta must lie in (0, 1), got {value!r}", "pass --delta with e.g. 1e-9 (well below 1/n)")
        return x
    if not math.isfinite(x) or x <= 0:
        raise DipsyError(f"{name} must be a finite number > 0, got {value!r}", f"pass {flag} with a positive number, e.g. 1.0")
    if allowed is not None:
        lo, hi = allowed
        if not lo <= x <= hi:
            raise DipsyError(
                f"{name} must lie between {lo:g} and {hi:g}, got {value}",
                f"pass {flag} within that range (a smaller ε or ρ gives noise that swamps the data, a larger one no privacy)",
            )
    return x


class _Passed(Exception):
    """A failure carried past click to :func:`main` as it was (``error``)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Group(click.Group):
    """The command group, letting Ctrl-C, SIGTERM and a closed standard output reach :func:`main`
    as they are: click would turn the first two into Abort after a blank line on standard error,
    and the last into sys.exit(1), which would call a finished release a failure."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, BrokenPipeError) as e:
            raise _Passed(e) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dipsy")
def cli() -> None:
    """Differentially private synthetic data with exact privacy statements."""


@cli.command()
def methods() -> None:
    """List the synthesis methods with their guarantees, one line each (options below)."""
    for m in list_methods():
        _styled("bold", f"{m.name:<24}", " ", end="")
        out.print(m.summary)
        out.print(
            f"{'':24} {m.definition}; neighbours: {', '.join(m.neighbourings)}; releases: {', '.join(m.releases)}; {m.sets}"
        )
        for option in m.options:
            out.print(f"{'':24} --option {option}")


@cli.group()
def domain() -> None:
    """Work with domain files."""


def _columns(values: tuple[str, ...]) -> list[str] | None:
    """The names given with --columns (comma-separated or repeated); None when not given."""
    if not values:
        return None
    names = [c.strip() for v in values for c in v.split(",") if c.strip()]
    if not names:
        raise DipsyError(
            "--columns was given but names no column", "name columns, e.g. --columns Race,Income, or leave out --columns for all"
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DipsyError(f"--columns names {', '.join(map(repr, twice))} more than once", "name each column once")
    return names


@domain.command("check")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--domain", "domain_path", required=True, type=click.Path(path_type=Path), help="Domain file (YAML or JSON).")
@click.option("--columns", multiple=True, help="Columns to check (comma-separated or repeated); default all.")
@click.option(
    "--on-invalid",
    type=click.Choice(["error", "drop"]),
    default="error",
    show_default=True,
    help="What to do with rows that do not match.",
)
@click.option("--engine", "backend", type=click.Choice(ENGINES), default=None, help="Backend that reads DATA (default duckdb).")
def domain_check(data: Path, domain_path: Path, columns: tuple[str, ...], on_invalid: str, backend: str | None) -> None:
    """Check DATA (CSV, Parquet, SAS, Stata or SPSS) against a domain file."""
    chosen = _columns(columns)
    full = Domain.load(domain_path)
    scope = full.project(chosen)
    _doing[0] = f"reading {data}"
    engine = engine_for(data, scope, on_invalid, backend)
    try:
        report = engine.ensure_valid()
    finally:
        getattr(engine, "close", lambda: None)()
    if report.rows == 0:  # synth refuses such data: say so here too
        raise DataError(f"{str(data)!r} has no rows", "write the records below the header")
    if report.valid_rows == 0:
        raise DataError(
            f"none of the {report.rows} rows of {str(data)!r} match the domain: {report.summary()}",
            "fix the data or the domain file",
        )
    if report.ok:
        out.print(f"ok: all {report.rows} rows match the domain ({len(scope)} columns)")
    else:
        out.print(f"{report.summary()}\n{report.invalid_rows} row(s) would be dropped; {report.valid_rows} kept")
    for note in _domain_notes(scope):
        out.print(f"note: {note}")
    for line in _rule_lines(scope):
        out.print(line)
    dropped = full.dropped_rules(chosen)
    if dropped:
        names = ", ".join(repr(rule.name) for rule, _ in dropped)
        left = ", ".join(dict.fromkeys(c for _, cols in dropped for c in cols))
        out.print(
            f"note: {len(dropped)} rule(s) name columns not chosen ({left}): a release of these columns does not enforce "
            f"them ({names})"
        )


def _rule_lines(scope: Domain) -> list[str]:
    """The domain's edit rules, one line each (from the domain alone: the data's breaks are for
    ``dipsy evaluate``, which counts them)."""
    if not scope.rules:
        return []
    lines = [
        f"rules: {len(scope.rules)} edit rule(s); every release enforces them on its synthetic records (post-processing), "
        "and 'dipsy evaluate' counts the records breaking each"
    ]
    for cells in scope.rule_cells:
        lines.append(
            f"  rule {cells.name!r}: {cells.rule.text()} (forbids {int(cells.forbidden.sum()):,} of the "
            f"{cells.forbidden.size:,} combinations of {' × '.join(cells.columns)})"
        )
    return lines


def _domain_notes(scope: Domain) -> list[str]:
    """What the domain's declarations do, from the domain alone: roles, and clipping."""
    from .domain.columns import ROLE_READERS

    notes = []
    public = [c.name for c in scope.columns if c.role == "public"]
    if public:
        notes.append(
            f"the domain declares {', '.join(public)} public: {' and '.join(sorted(ROLE_READERS))} may release a column "
            "declared public as it is (and refuse to repeat any other); no other method releases a column as it is, "
            "whatever its role"
        )
    return notes + [f"{line}; releases state it" for line in scope.transformations()]


@domain.command("init")
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_path",
    default="domain.yaml",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Domain file to write (YAML).",
)
@click.option(
    "--from-public",
    "public",
    type=click.Path(path_type=Path),
    default=None,
    help="A file you declare public (CSV, Parquet, SAS, Stata, SPSS): categories and bounds are filled from it, its SHA-256 recorded.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
def domain_init(data: Path, out_path: Path, public: Path | None, overwrite: bool) -> None:
    """Write a domain skeleton for DATA (CSV, Parquet, SAS, Stata or SPSS) from its metadata only.

    No value of DATA is read or written: every category list, bound and bin (and every kind of a
    CSV file) is TODO, to fill from public knowledge; dipsy refuses the file until none is left.
    Of a SAS, Stata or SPSS file the metadata, taken as public, gives each column's description
    (its variable label) and, from its value labels, a categorical column's categories and labels.
    """
    from .authoring import check_target, init_domain, write_skeleton

    check_target(out_path, overwrite)  # every output check before any work
    _check_output_file(out_path, "--out")
    check_outputs({"--out": out_path}, {"the data": data, "the --from-public file": public}, ledgers=protected_ledgers())
    _doing[0] = f"reading the header of {data}"
    skeleton = init_domain(data, public)
    _keep_no_new_folders(out_path.parent)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_skeleton(skeleton, out_path, overwrite)
    filled = f"; categories and bounds from the public file {skeleton.public}" if skeleton.public else ""
    left = (
        f"{skeleton.todos} TODO placeholder(s) to fill from public knowledge (dipsy refuses the file until none is left)"
        if skeleton.todos
        else "no TODO left: check the values, then 'dipsy domain check'"
    )
    out.print(f"wrote {out_path}: {len(skeleton.columns)} columns{filled}; {left}")


@domain.command("discover")
@click.argument("data", type=click.Path(path_type=Path))
@click.option(
    "--domain",
    "domain_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The skeleton ('dipsy domain init') with TODOs to discover.",
)
@click.option("--out", "out_path", required=True, type=click.Path(path_type=Path), help="Domain file to write (YAML).")
@click.option("--epsilon", required=True, help="Total ε of the discovery, split equally over the columns discovered.")
@click.option(
    "--delta", default=None, help="Total δ, split over the category columns (needed for categories; at most 1e-3, far below 1/n)."
)
@click.option(
    "--categories",
    multiple=True,
    help="Columns whose categories to discover (comma-separated or repeated); default every categories: TODO.",
)
@click.option(
    "--bins",
    "bins",
    multiple=True,
    metavar="COL=K",
    help="Discover K bins of an integer or numeric column with declared bounds (repeatable).",
)
@click.option(
    "--log",
    "log",
    multiple=True,
    help="Bins columns with a log-spaced grid (geometric, or in log(1 + x) from a lower bound of 0), for skewed columns (repeatable).",
)
@click.option("--grid", default=256, show_default=True, type=click.IntRange(min=2), help="Cells of each bins grid.")
@click.option(
    "--ledger",
    type=click.Path(path_type=Path),
    default=None,
    help="Budget ledger (SQLite); default $DIPSY_LEDGER or the user data folder.",
)
@click.option("--dataset-id", required=True, help="Name of the data set in the ledger (later releases of it use the same).")
@click.option(
    "--neighbouring",
    type=click.Choice(list(NEIGHBOURINGS)),
    default="add-remove",
    show_default=True,
    help="Neighbouring relation of the spends.",
)
@click.option(
    "--on-invalid",
    type=click.Choice(["error", "drop"]),
    default="error",
    show_default=True,
    help="Rows outside a bins column's bounds.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Seed (a test discovery: not private); default from the OS."
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
def domain_discover(
    data: Path,
    domain_path: Path,
    out_path: Path,
    epsilon: str,
    delta: str | None,
    categories: tuple[str, ...],
    bins: tuple[str, ...],
    log: tuple[str, ...],
    grid: int,
    ledger: Path | None,
    dataset_id: str,
    neighbouring: str,
    on_invalid: str,
    seed: int | None,
    overwrite: bool,
) -> None:
    """Fill a skeleton's TODO categories and bins by a DP measurement of DATA, charged to the ledger.

    Categories: DP partition selection, (ε, δ)-DP (values held by few records are not released).
    Bins: DP quantiles from one noisy histogram on a public grid, ε-DP. The written domain records
    the discovery, and every release that uses it states it.
    """
    from .api import discover_domain
    from .authoring import check_target
    from .domain.domain import read_spec
    from .methods.discovery import plan_discovery

    _number("--epsilon", epsilon, EPSILON_RANGE)
    _number("--delta", delta)
    chosen = _columns(categories)
    counts = {}
    for pair in bins:
        name, sep, k = pair.partition("=")
        if not sep or not name.strip() or not k.strip().isdigit():
            raise DipsyError(f"--bins {pair!r} is not COL=K", "write it as e.g. --bins Income=10")
        counts[name.strip()] = int(k)
    logs = _columns(log) or []
    check_target(out_path, overwrite)
    _check_output_file(out_path, "--out")
    ledger_path = Path(ledger or default_ledger_path())
    reads = {"the data": data, "the --domain file": domain_path}
    check_outputs({"--out": out_path}, reads, ledgers=protected_ledgers(ledger_path))
    check_outputs({"--ledger": ledger_path}, reads)
    _check_ledger_path(ledger_path)
    plan_discovery(
        read_spec(domain_path), epsilon, delta, categories=chosen, bins=counts, log=logs, grid=grid, neighbouring=neighbouring
    )  # every refusal from public inputs, before any read
    _keep_no_new_folders(out_path.parent)
    _keep_no_new_ledger(ledger_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    _doing[0] = f"discovering the domain of {data}"
    with RunFolder(out_path.parent, out_path.name) as work:  # the file being written, the engines' scratch
        _run.work = work
        result = discover_domain(
            data,
            domain_path,
            out_path,
            epsilon=epsilon,
            delta=delta,
            dataset_id=dataset_id,
            categories=chosen,
            bins=counts,
            log=logs,
            grid=grid,
            ledger=_Recording(ledger_path),
            neighbouring=neighbouring,
            seed=seed,
            on_invalid=on_invalid,
            overwrite=overwrite,
            work=work,
        )
    for (name, values), m in zip(result.categories.items(), result.measurements):
        shown = ", ".join(map(repr, values[:20])) + (", …" if len(values) > 20 else "")
        what = (
            f"{len(values)} categor{'y' if len(values) == 1 else 'ies'} [{shown}]"
            if values
            else "no value passed the threshold: its categories stay TODO"
        )
        out.print(f"{name}: {what} (DP partition selection, threshold {m['noise']['threshold']}, {_cost(m)})")
    for (name, edges), m in zip(result.bins.items(), result.measurements[len(result.categories) :]):
        out.print(f"{name}: {len(edges) - 1} bins, edges {list(edges)} (noisy histogram, {_cost(m)})")
    total = result.total
    charged = f"ε = {total.epsilon:g}" + (f", δ = {total.delta:g}" if getattr(total, "delta", 0) else "")
    where = f"data set {dataset_id!r} in the ledger {ledger_path} (release {result.release_id})"
    if seed is not None:
        _styled(
            "bold red",
            "TEST DISCOVERY",
            f" (seed {seed}): not differentially private — its noise can be regenerated; "
            f"recorded, never counted, as {charged} under {neighbouring} for {where}; every release using {out_path} "
            "says NOT PRIVATE: never publish one",
        )
    else:
        out.print(f"charged {charged} under {neighbouring} to {where}")
    left = f"; categories of {', '.join(result.left)} still TODO" if result.left else ""
    out.print(f"wrote {out_path}{left}")


def _cost(m: dict) -> str:
    """A measurement's cost as its description states it."""
    return f"ε = {m['epsilon']:g}" + (f", δ = {m['delta']:g}" if m.get("delta") else "")


_RELEASE_CHOICES = (
    click.option("--domain", "domain_path", required=True, type=click.Path(path_type=Path), help="Domain file (YAML or JSON)."),
    click.option(
        "--method",
        default=None,
        help="Synthesis method (see 'dipsy methods'); default dirichlet-multinomial for --epsilon alone, "
        "privsyn when --delta or --rho is given.",
    ),
    click.option(
        "--epsilon",
        default=None,
        help="Total privacy budget ε of the release (all sets together); for a local-guarantee method, the ceiling of its measured ε_x.",
    ),
    click.option("--delta", default=None, help="δ of an (ε, δ) budget, for zCDP and (ε, δ) methods (e.g. privsyn, dpsyn)."),
    click.option("--rho", default=None, help="A ρ-zCDP budget instead of --epsilon/--delta, for zCDP methods."),
    click.option(
        "--sets",
        default=1,
        show_default=True,
        type=click.IntRange(min=1),
        help="Number of synthetic sets m (each its share: ε/m, ρ/m or (ε/m, δ/m); see 'dipsy methods').",
    ),
    click.option("--columns", multiple=True, help="Columns to synthesize (comma-separated or repeated); default all."),
)


def _release_choices(command: Callable) -> Callable:
    """The options that say what a release is: ``synth`` takes them, and ``plan`` that forecasts it."""
    for option in reversed(_RELEASE_CHOICES):
        command = option(command)
    return command


@cli.command()
@click.argument("data", type=click.Path(path_type=Path))
@_release_choices
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed: a reproducible test release, recorded and NOT private; default from the OS.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="parquet",
    show_default=True,
    help="Files of the sets: parquet, csv, or dta (Stata), sav (SPSS), xpt (SAS transport v5) with the domain's labels.",
)
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE", help="Method option, e.g. alpha=10 (repeatable).")
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Folder to write the release into.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out folder.")
@click.option("--on-invalid", type=click.Choice(["error", "drop"]), default="error", show_default=True)
@click.option(
    "--neighbouring",
    type=click.Choice(list(NEIGHBOURINGS)),
    default=None,
    help="Neighbouring relation, for methods private under either (default: the method's).",
)
@click.option(
    "--release",
    "kind",
    type=click.Choice(["records", "table"]),
    default="records",
    show_default=True,
    help="Synthetic records, or the released table of cell counts.",
)
@click.option(
    "--ledger",
    type=click.Path(path_type=Path),
    default=None,
    help="Budget ledger (SQLite); default $DIPSY_LEDGER or the user data folder.",
)
@click.option("--dataset-id", default=None, help="Name of the data set in the ledger; default the SHA-256 of DATA.")
@click.option(
    "--budget-cap",
    default=None,
    help="What this data set may ever spend: ε, 'ε,δ' or 'rho=ρ' (stored in the ledger); 'local=ε' caps its local-guarantee releases.",
)
@click.option("--raise-cap", is_flag=True, help="Let --budget-cap raise or redefine a stored cap (recorded in the ledger).")
@click.option("--accept-noise", is_flag=True, help="Release even when the forecast says the release will be essentially noise.")
@click.option(
    "--rows",
    type=click.IntRange(min=1, max=MAX_ROWS),
    default=None,
    help="A row count you declare public, for the forecast of methods that do not treat n as public.",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default=None,
    help="Backend that reads DATA: duckdb (default for files), spark (master from $DIPSY_SPARK_MASTER, else local), numpy.",
)
@click.option(
    "--stream",
    is_flag=True,
    help="Draw and write each set in chunks of 10^6 records (a folder of part files): memory holds a chunk, not the set.",
)
@click.option(
    "--partition-by",
    "partition_by",
    multiple=True,
    help="Write each set as a folder partitioned by these categorical columns (comma-separated or repeated).",
)
def synth(
    data: Path,
    domain_path: Path,
    method: str | None,
    epsilon: str | None,
    delta: str | None,
    rho: str | None,
    sets: int,
    columns: tuple[str, ...],
    seed: int | None,
    fmt: str,
    options: tuple[str, ...],
    out_dir: Path,
    overwrite: bool,
    on_invalid: str,
    neighbouring: str | None,
    kind: str,
    ledger: Path | None,
    dataset_id: str | None,
    budget_cap: str | None,
    raise_cap: bool,
    accept_noise: bool,
    rows: int | None,
    engine: str | None,
    stream: bool,
    partition_by: tuple[str, ...],
) -> None:
    """Synthesize DATA (CSV, Parquet, SAS, Stata or SPSS) under differential privacy and write a release to --out."""
    # Everything that can be checked before any work is checked here, in this order.
    given_budget = _number("--epsilon", epsilon, EPSILON_RANGE), _number("--delta", delta), _number("--rho", rho, RHO_RANGE)
    if sets > MAX_SETS:
        raise DipsyError(f"sets must be at most {MAX_SETS}, got {sets}", "each set costs ε/m: a few sets (5–50) serve inference")
    if budget_cap is not None:
        parse_cap(budget_cap)
    chosen = _columns(columns)
    parsed = _options(options)
    named_method, method = method, method or default_method(*given_budget[1:])
    check_target(out_dir, overwrite)
    ledger_path = Path(ledger or default_ledger_path())
    reads: Paths = {"the data": data, "the --domain file": domain_path, **_option_files(method, parsed)}
    check_outputs({}, reads, ledgers=protected_ledgers(ledger_path), out_folder=("--out", out_dir))
    check_outputs({"--ledger": ledger_path}, reads)
    _check_ledger_path(ledger_path)
    domain = Domain.load(domain_path)
    domain.project(chosen)  # an unknown column is refused here, before the data are read
    partitions = tuple(_columns(partition_by) or ())
    check_partition_columns(partitions, domain.project(chosen))
    if stream and kind == "table":
        raise DipsyError("--stream writes records in chunks; a table release is one row per cell", "leave out --stream")
    _keep_no_new_folders(out_dir.parent)
    _keep_no_new_ledger(ledger_path)
    _doing[0] = f"synthesizing from {data}"
    named = None if chosen is None else tuple(chosen)
    request = Request(
        data,
        domain,
        method,
        *given_budget,
        sets,
        named,
        parsed,
        neighbouring,
        kind,
        seed,
        on_invalid,
        accept_noise,
        rows,
        stream,
        engine,
        output=Destination(out_dir, fmt, overwrite, partitions),
        ledger=ledger_path,
        dataset_id=dataset_id,
        budget_cap=budget_cap,
        raise_cap=raise_cap,
    )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # Every temporary file of the run (the release being written, the engine's scratch) in one
    # folder beside --out, removed on every way out; the printing below comes after it is gone.
    with RunFolder(out_dir.parent, out_dir.name) as work:
        _run.work = work
        # The release is written to the request's output (checked before the charge: the folder,
        # its room, the categories' format); a progress bar only for a person at a terminal, never in a log.
        release = run(request, ledger=_Recording(ledger_path), progress=sys.stderr.isatty(), work=work)
    _print_forecast(release.forecast)
    for note in _domain_notes(release.domain):
        out.print(f"note: {note}")
    s = release.statement
    params = ", ".join(_parameter(k, v) for k, v in release.parameters.items() if not isinstance(v, dict))
    if named_method is None:
        out.print(
            f"note: no --method given: {release.method}, the default for a budget {'with δ or ρ' if release.method != 'dirichlet-multinomial' else 'of ε alone'}"
        )
    out.print(f"{release.method}: {params}")
    noise = release.parameters.get("noise")
    if isinstance(noise, dict) and {"distribution", "scale", "sd"} <= set(noise):
        post = f"; {noise['post_processing']}" if noise.get("post_processing") else ""
        out.print(f"noise: {noise['distribution']}, scale {noise['scale']}, sd {noise['sd']:.4g}{post}")
    equivalent = s.equivalent()
    also = f" (so (ε, δ)-DP with ε = {equivalent[0]:.4g}, δ = {equivalent[1]:g})" if equivalent else ""
    claim = f"{s.definition}, {s.total} in total{also}, {s.per_set} per set, {s.sets} set(s); {s.neighbouring}"
    if s.private and s.guarantee == "local":
        _styled("bold yellow", "LOCAL GUARANTEE", f" (not worst-case DP; never counted against a DP budget): {claim}")
    elif s.private:
        out.print(f"privacy: {claim}")
    else:
        _styled(
            "bold red",
            "TEST RELEASE",
            f" (seed {release.seed}): not differentially private — its noise can be "
            f"regenerated from the recorded seed; never publish it. Unseeded it would be: {claim}",
        )
    if release.dropped_rows:
        out.print(f"note: {release.dropped_rows} row(s) that did not match the domain were dropped (not written to the release)")
    what = "table(s) of" if release.kind == "table" else "set(s) of"
    out.print(f"wrote {len(release.tables)} {what} {len(release.tables[0])} rows to {out_dir} (ledger: {ledger_path})")


def _print_forecast(forecast: dict | None) -> None:
    if not forecast:
        return
    style = {"noise": "bold red", "weak": "bold yellow"}.get(forecast["verdict"], "")
    if style:
        out.print("forecast (", end="")
        _styled(style, forecast["verdict"].upper(), f"): {forecast['summary']}")
    else:
        out.print(f"forecast ({forecast['verdict']}): {forecast['summary']}")
    if forecast.get("not_forecast"):
        out.print(
            f"  not forecast: {'; '.join(forecast['not_forecast'][:3])}" + (" …" if len(forecast["not_forecast"]) > 3 else "")
        )


@cli.command("plan")
@click.argument("data", type=click.Path(path_type=Path), required=False)
@_release_choices
@click.option("--option", "options", multiple=True, metavar="NAME=VALUE", help="Method option (repeatable).")
@click.option(
    "--neighbouring",
    type=click.Choice(list(NEIGHBOURINGS)),
    default=None,
    help="Neighbouring relation, for methods private under either.",
)
@click.option("--on-invalid", type=click.Choice(["error", "drop"]), default="error", show_default=True)
@click.option(
    "--rows",
    type=click.IntRange(min=1, max=MAX_ROWS),
    default=None,
    help="A row count you declare public (for methods that do not treat n as public).",
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write the forecast as JSON here.")
def plan_command(
    data: Path | None,
    domain_path: Path,
    method: str | None,
    epsilon: str | None,
    delta: str | None,
    rho: str | None,
    sets: int,
    columns: tuple[str, ...],
    options: tuple[str, ...],
    neighbouring: str | None,
    on_invalid: str,
    rows: int | None,
    json_path: Path | None,
) -> None:
    """Forecast a release's error from public inputs, before anything is read or charged.

    DATA is read only when the method treats n as public (its rows are validated and counted);
    nothing is charged and nothing is recorded in the ledger.
    """
    from .api import plan_forecast

    budget = {
        "epsilon": _number("--epsilon", epsilon, EPSILON_RANGE),
        "delta": _number("--delta", delta),
        "rho": _number("--rho", rho, RHO_RANGE),
    }
    method = method or default_method(budget["delta"], budget["rho"])
    if json_path is not None:
        _check_output_file(json_path, "--json")
        check_outputs(
            {"--json": json_path},
            {"the data": data, "the --domain file": domain_path, **_option_files(method, _options(options))},
            ledgers=protected_ledgers(),
        )
    domain = Domain.load(domain_path)
    chosen = _columns(columns)
    domain.project(chosen)
    _doing[0] = "forecasting the release"
    result = plan_forecast(
        data,
        domain,
        method,
        budget["epsilon"],
        sets,
        delta=budget["delta"],
        rho=budget["rho"],
        columns=chosen,
        options=_options(options),
        on_invalid=on_invalid,
        neighbouring=neighbouring,
        rows=rows,
    )
    table = Table("part", "verdict", "what the numbers say", title=f"forecast for {method}: {result.verdict.upper()}")
    for part in result.parts:
        table.add_row(part["what"] + (f" (×{part['sets']})" if part.get("sets") else ""), part["verdict"], part["text"])
    out.print(table)
    _print_forecast(result.to_dict())
    if json_path is not None:
        _keep_no_new_folders(json_path.parent)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result.to_dict(), indent=1) + "\n", encoding="utf-8")
        out.print(f"wrote {json_path}")


def _parameter(name: str, value: Any) -> str:
    """One public parameter for the terminal; a list of records (e.g. rdt's trees) by its length."""
    if isinstance(value, float):
        return f"{name} = {value:.6f}"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return f"{name}: {len(value)} (see release.json)"
    return f"{name} = {value}"


def _check_ledger_path(path: Path) -> None:
    """Refuse a ledger path that is a folder, or whose folder cannot take a new file."""
    if path.is_dir():
        raise DipsyError(f"the budget ledger {str(path)!r} is a folder", "pass --ledger with a file path")
    if not path.exists():
        try:
            check_writable_folder(path.parent, "--ledger")
        except ReleaseError as e:
            raise DipsyError(
                f"cannot create the budget ledger {str(path)!r}: {e.problem}", "pass --ledger with a writable path"
            ) from None


def _option_files(method: str, options: dict[str, str]) -> dict[str, str]:
    """The files a method's options name as public inputs (``public=``, ``structure=``…): what it reads."""
    from .methods import get

    known = {o.name for o in get(method).options if o.public_file}
    return {f"the {name}= file": value for name, value in options.items() if name in known and Path(value).exists()}


def _options(pairs: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise DipsyError(f"option {pair!r} is not NAME=VALUE", "write it as e.g. --option alpha=10")
        parsed[name.strip()] = value.strip()
    return parsed


@cli.command("audit")
@click.argument("method")
@click.option(
    "--draws",
    default=20_000,
    show_default=True,
    type=click.IntRange(min=200, max=10_000_000),
    help="Draws of a mechanism with no exact loss (a posterior draw) on each of the two answers.",
)
@click.option(
    "--broken",
    is_flag=True,
    help="Audit the deliberately broken variant (half the noise, the statement unchanged): the audit's power test.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the release (a test release) and of the draws.",
)
def audit_command(method: str, draws: int, broken: bool, seed: int) -> None:
    """Audit METHOD on worst-case neighbouring data: every measurement's privacy loss against its cost.

    Runs the real release path on D, recording each measurement; computes each one's privacy loss
    between its exact answers on D and D' (exact where its laws are known, else a Clopper–Pearson
    lower bound, 95 %, from --draws draws) against the cost it states, composes them against the
    statement's total, and replays the release on D' from D's answers (it must be the same
    release). 'all' audits every registered method.
    """
    from .audit import CASES, NOT_AUDITED, audit, format_table
    from .methods import get

    names = sorted(CASES) if method == "all" else [get(method).name]
    if names[0] in NOT_AUDITED:
        raise DipsyError(
            f"{names[0]} is not audited: {NOT_AUDITED[names[0]]}",
            "audit a method with a worst-case guarantee (see 'dipsy methods')",
        )
    results = []
    with Progress(
        TextColumn("auditing {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task("", total=len(names))
        for name in names:
            bar.update(task, description=name)
            results.append(audit(name, broken=broken, draws=draws, seed=seed))
            bar.advance(task)
    out.print(format_table(results))
    for r in results:
        out.print(f"{r.method}: {CASES[r.method].why}")


@cli.command("rdt-leaf-size")
@click.option("--p0", type=float, required=True, help="The label's share in the leaf, e.g. 0.25.")
@click.option("--epsilon", type=float, required=True, help="ε of one tree (the leaf counts' budget).")
@click.option("--width", type=float, default=None, help="The widest interval wanted, e.g. 0.05.")
@click.option("--lower", type=float, default=None, help="Or the interval to stay within: its lower end.")
@click.option("--upper", type=float, default=None, help="… and its upper end.")
@click.option("--level", type=float, default=0.90, show_default=True, help="The interval's level 1 − α.")
@click.option(
    "--neighbouring",
    type=click.Choice(["add-remove", "substitute"]),
    default="add-remove",
    show_default=True,
    help="The leaf counts' sensitivity: 1 under add/remove, 2 under substitution.",
)
@click.option("--grid", default=None, help="Candidate leaf sizes, e.g. 100,250,500,1000,2000 (default: the exact least size).")
def rdt_leaf_size(
    p0: float,
    epsilon: float,
    width: float | None,
    lower: float | None,
    upper: float | None,
    level: float,
    neighbouring: str,
    grid: str | None,
) -> None:
    """The least leaf size n_B whose synthetic label share has a narrow enough interval (S-004 §5)."""
    from .methods.rdt.calibration import format_calibration, min_leaf_size

    try:
        sizes = None if grid is None else [int(g) for g in grid.split(",") if g.strip()]
    except ValueError:
        raise DipsyError(f"--grid must list whole numbers, got {grid!r}", "e.g. --grid 250,500,1000,2000") from None
    result = min_leaf_size(
        p0,
        epsilon,
        width=width,
        lower=lower,
        upper=upper,
        level=level,
        sensitivity=1 if neighbouring == "add-remove" else 2,
        grid=sizes,
    )
    out.print(format_calibration(result))


@cli.command("evaluate")
@click.argument("data", type=click.Path(path_type=Path))
@click.argument("release_dir", type=click.Path(path_type=Path))
@click.option(
    "--domain",
    "domain_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Domain file; default the release's domain.yaml.",
)
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None, help="Write the HTML report here.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write every metric as JSON here.")
@click.option(
    "--formula",
    default=None,
    help="Regression to compare, e.g. 'Expenditure ~ Income + C(Race)' (default: the domain's analyses:, else default "
    "models chosen from the domain).",
)
@click.option(
    "--model",
    type=click.Choice(["ols", "logit"]),
    default=None,
    help="Regression model for --formula (default: logit when the response is a column of two categories, else ols).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the metrics' own sampling.")
@click.option(
    "--sensitive",
    metavar="COL[,COL]",
    default=None,
    help="Sensitive columns to judge against the public ones (S-004's outputs), e.g. sex,race; COL=LEVEL names the category "
    "its logistic regression models, e.g. sex=Female (default: the release's own, as rdt records them).",
)
@click.option(
    "--groups",
    metavar="COL[,COL]",
    default=None,
    help="Score the marginals inside each group of these columns too, SDNist's k-marginal score among them (the NIST per-PUMA view), e.g. PUMA or PUMA,YEAR.",
)
@click.option(
    "--group-k", type=click.IntRange(1, 3), default=3, show_default=True, help="Order of the marginals scored inside each group."
)
def evaluate_command(
    data: Path,
    release_dir: Path,
    domain_path: Path | None,
    report_path: Path | None,
    json_path: Path | None,
    formula: str | None,
    model: str | None,
    seed: int,
    sensitive: str | None,
    groups: str | None,
    group_k: int,
) -> None:
    """Compare the release in RELEASE_DIR with the original DATA: metrics, plots, HTML report."""
    from .evaluation import evaluate, jsonable, load_release, read_original
    from .evaluation.report import write_report

    outputs = {"--json": json_path, "--report": report_path}
    for flag, path in outputs.items():  # every output is checked before any work
        if path is not None:
            _check_output_file(path, flag)
    if json_path is not None and report_path is not None and json_path.absolute() == report_path.absolute():
        raise DipsyError(f"--json and --report both name {str(json_path)!r}", "give them different paths")
    check_outputs(
        outputs,
        {"the data": data, "the --domain file": domain_path},
        folders={"the release": release_dir},
        ledgers=protected_ledgers(),
    )
    _doing[0] = "evaluating the release"
    chosen = None if sensitive is None else [c.strip() for c in sensitive.split(",") if c.strip()]
    by = None if groups is None else [c.strip() for c in groups.split(",") if c.strip()]
    metrics = evaluate(
        data, release_dir, domain_path, formula=formula, model=model, seed=seed, sensitive=chosen, groups=by, group_k=group_k
    )
    marg = metrics["marginals"]
    out.print(
        f"marginal TVD, mean (worst): 1-way {marg['1-way']['mean_tvd']:.4f} ({marg['1-way']['worst_tvd']:.4f}), "
        f"2-way {marg['2-way']['mean_tvd']:.4f} ({marg['2-way']['worst_tvd']:.4f})"
    )
    km = marg["k_marginal_score"]
    baselines = ", ".join(f"{b['fraction']:.0%} {b['score']:.0f}" for b in km["baselines"])
    out.print(f"all-pairs score (dipsy's) {km['score']:.0f} of 1000 (subsamples of the original: {baselines})")
    if "sdnist" in marg:
        sd, sg = marg["sdnist"], marg["sdnist"]["by_group"]
        out.print(
            f"SDNist's k-marginal score (pairs with {', '.join(sd['groups'])}) {sd['score']:.0f} of 1000, like a "
            f"{', '.join(f'{f:.0%}' for f in sd['equivalent_fraction'])} subsample; per group mean "
            f"{', '.join(f'{v:.0f}' for v in sg['mean'])}, worst {', '.join(f'{v:.0f}' for v in sg['worst'])} "
            f"(40% subsamples: {sg['baseline_mean']:.0f})"
        )
    if "by_group" in marg:
        g = marg["by_group"]
        worst = "; ".join(
            f"{', '.join(f'{k}={v}' for k, v in w['group'].items())} {w['score']:.0f} ({w['rows_original']} rows)"
            for w in g["worst"][:3]
        )
        out.print(
            f"{g['k']}-way score inside {g['groups_scored']} groups of {', '.join(g['groups'])}: {g['score']:.0f} of 1000 "
            f"(median group {g['quantiles']['50%']:.0f}; worst: {worst})"
        )
    logit = metrics["propensity"]["logistic"]
    out.print(f"pMSE (logistic), standardised: {', '.join(f'{z:.2f}' for z in logit['standardised'])}")
    if metrics.get("rules"):
        found = metrics["rules"]
        out.print(
            f"edit rules ({len(found['rules'])}): records breaking one, original {found['any']['original']:,}; "
            f"sets {', '.join(f'{n:,}' for n in found['any']['synthetic'])}"
        )
    if metrics.get("missing"):
        shares = "; ".join(
            f"{c} {100 * sum(v['original']):.1f}% (sets {', '.join(f'{100 * sum(s):.1f}%' for s in v['synthetic'])})"
            for c, v in metrics["missing"].items()
        )
        out.print(f"rows in a missing state, original (sets): {shares}")
    if metrics.get("sensitive"):
        part = metrics["sensitive"]
        tvd = ", ".join(f"{k} {v:.4f}" for k, v in part["tvd_mean"].items())
        out.print(
            f"sensitive {', '.join(part['sensitive'])} × public: mean TVD {tvd}; joint-proportion r "
            f"{', '.join(f'{r:.3f}' for r in part['proportions']['r'])}; indicator slope r "
            f"{', '.join(f'{r:.3f}' for r in part['indicators']['slope_r'])}"
        )
        for fitted in part["logit"].values():
            out.print(
                f"logistic model of {fitted['response']}: "
                + (
                    f"not comparable ({fitted['error']})"
                    if fitted.get("error")
                    else f"{len(fitted['coefficients'])} coefficients, synthetic-original r {fitted['coefficient_r']:.3f}"
                )
            )
    if metrics.get("inference") and metrics["inference"].get("models"):
        part = metrics["inference"]
        models = part["models"]
        fitted = sum(1 for m in models if m.get("coefficients"))
        verdict = (metrics.get("verdicts") or {}).get("inference") or {}
        out.print(
            f"inference ({part['source']} models): {fitted} of {len(models)} compared"
            + (f", {verdict['level']}" if verdict.get("level") else "")
            + "; "
            + "; ".join(m["formula"] for m in models)
        )
        unprotected = [m["formula"] for m in models if m.get("measured_for") is False]
        if unprotected and len(unprotected) < len(models):
            out.print(f"  not protected (their marginals not measured as a declared analysis): {'; '.join(unprotected)}")
        elif unprotected:
            out.print(
                "  not protected: the release measured no model's marginals as a declared analysis (see the domain's analyses:)"
            )
        for m in models:
            _print_conclusions(m)
    pending = None
    if json_path:  # written beside its target, and renamed into place once the report is written too
        _keep_no_new_folders(json_path.parent)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{json_path.name}.", dir=json_path.parent)
        pending = Path(name)
        _undo.append(lambda: pending.unlink(missing_ok=True))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(jsonable(metrics), indent=1, allow_nan=False) + "\n")
        pending.chmod(0o666 & ~umask())
    if report_path:
        _keep_no_new_folders(report_path.parent)
        existed = report_path.exists()
        _, tables, release_domain = load_release(release_dir)
        domain = release_domain if domain_path is None else Domain.load(domain_path).project(release_domain.names)
        write_report(metrics, read_original(data, domain), tables, domain, report_path)
        if not existed:
            _undo.append(lambda: report_path.unlink(missing_ok=True))
    if pending is not None and json_path is not None:  # pending is made for a json_path only
        os.replace(pending, json_path)
        out.print(f"wrote {json_path}")
    if report_path:
        out.print(f"wrote {report_path}")


def _print_conclusions(model: dict[str, Any]) -> None:
    """One line per term with a noise-aware interval, beside the original's; one per term whose synthetic
    interval reaches another conclusion than the original's (its sign: positive, negative or unclear)."""
    formula = model.get("formula", "?")
    if model.get("noise_aware_error"):
        out.print(f"  noise-aware  {formula}: not fitted ({model['noise_aware_error']})")
    interval = lambda part: f"{part['estimate']:.3g} [{part['lower']:.3g}, {part['upper']:.3g}]"
    for row in model.get("coefficients") or []:
        said = row.get("conclusion") or {}
        if "noise_aware" in row:
            same = "same" if said.get("noise_aware") == said.get("original") else "differs"
            out.print(
                f"  noise-aware  {formula}  {row['term']}: {interval(row['noise_aware'])} "
                f"(original {interval(row['original'])}; conclusion {same})"
            )
        if "synthetic" in said and "original" in said and said["synthetic"] != said["original"]:
            out.print(
                f"  conclusion differs  {formula}  {row['term']}: synthetic {said['synthetic']}, original {said['original']}"
            )


@cli.command("compare")
@click.argument("data", type=click.Path(path_type=Path))
@click.argument("release_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--column", required=True, help="The integer or numeric column to compare, e.g. Expenditure.")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None, help="Write the HTML page here.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write the numbers as JSON here.")
def compare_command(
    data: Path, release_dirs: tuple[Path, ...], column: str, report_path: Path | None, json_path: Path | None
) -> None:
    """Several releases of one column beside the original DATA: guarantee, ECDF utility, quantiles."""
    from .evaluation import jsonable
    from .evaluation.compare import load_column, summarise, write_comparison

    for flag, path in {"--json": json_path, "--report": report_path}.items():
        if path is not None:
            _check_output_file(path, flag)
    if json_path is not None and report_path is not None and json_path.absolute() == report_path.absolute():
        raise DipsyError(f"--json and --report both name {str(json_path)!r}", "give them different paths")
    check_outputs(
        {"--json": json_path, "--report": report_path},
        {"the data": data},
        folders={f"the release {d}": d for d in release_dirs},
        ledgers=protected_ledgers(),
    )
    _doing[0] = "comparing the releases"
    values, loaded = load_column(data, release_dirs, column)  # read once, for the numbers and the page
    result = summarise(values, loaded, column)
    table = Table(
        "release", "guarantee", "sets", "U_m", "U_a", "mean", title=f"{column}: original mean {result['original']['mean']:.4g}"
    )
    for r in result["releases"]:
        table.add_row(
            f"{r['method']} ({Path(r['folder']).name})",
            r["guarantee"],
            str(r["sets"]),
            f"{r['U_m_mean']:.3f}",
            f"{r['U_a_mean']:.4f}",
            f"{sum(r['mean']) / len(r['mean']):.4g}",
        )
    out.print(table)
    if any(r["kind"] == "local" for r in result["releases"]):
        out.print("a local ε_x holds for this data set only and is not on the scale of a DP ε: read each statement")
    for path, write in (
        (json_path, lambda p: p.write_text(json.dumps(jsonable(result), indent=1, allow_nan=False) + "\n", encoding="utf-8")),
        (report_path, lambda p: write_comparison(result, values, loaded, p)),
    ):
        if path is not None:
            _keep_no_new_folders(path.parent)
            existed = path.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path)
            if not existed:
                _undo.append(partial(path.unlink, missing_ok=True))
            out.print(f"wrote {path}")


def _check_output_file(path: Path, flag: str) -> None:
    """Refuse an output file path that is a folder, or whose folder cannot take a new file."""
    if path.is_dir():
        raise DipsyError(
            f"{flag} {str(path)!r} is a folder",
            f"pass {flag} with a file path, e.g. {path / ('metrics.json' if flag == '--json' else 'report.html')}",
        )
    try:
        check_writable_folder(path.parent, flag)
    except ReleaseError as e:
        raise DipsyError(f"cannot write {flag} {str(path)!r}: {e.problem}", f"pass {flag} with a writable path") from None


@cli.group()
def budget() -> None:
    """Inspect the privacy budget ledger."""


@budget.command("show")
@click.option(
    "--ledger",
    type=click.Path(path_type=Path),
    default=None,
    help="Budget ledger; default $DIPSY_LEDGER or the user data folder.",
)
@click.option("--dataset-id", default=None, help="Show every spend of this data set.")
def budget_show(ledger: Path | None, dataset_id: str | None) -> None:
    """What each data set has spent, in how many releases, against which cap (creates nothing)."""
    path = Path(ledger or default_ledger_path())
    if path.is_dir():
        raise DipsyError(f"the budget ledger {str(path)!r} is a folder", "pass --ledger with the ledger's file path")
    if not path.exists():
        check_not_lost(path)  # a ledger dipsy created that is gone is an error, not an empty record
        out.print(f"no ledger at {path}; nothing has been recorded there")
        return
    led = Ledger.open_existing(path)
    if dataset_id:
        table = Table("time", "release", "method", "spend", "budget", title=f"data set {dataset_id}")
        for r in led.spends(dataset_id):
            amount = ", ".join(f"{k} = {r[k]:g}" for k in ("epsilon", "delta", "rho") if r[k] is not None)
            if r["definition"] == "zCDP":
                amount = f"rho = {r['rho']:g}" + (f" (stated at δ = {r['delta']:g})" if r["delta"] is not None else "")
            table.add_row(r["created"], r["release_id"][:12], r["method"], r["label"], f"{r['definition']}: {amount}")
    else:
        table = Table("data set", "definition", "spent", "releases", "cap", title=f"ledger {path}")
        for t in led.totals():
            table.add_row(t.dataset_id, t.spent.definition, t.describe(), str(t.releases), str(t.cap) if t.cap else "none")
    out.print(table)
    if dataset_id:  # the spends, then what they compose to: one total per relation
        for t in led.totals():
            if t.dataset_id == dataset_id:
                out.print(f"total: {t.describe()}" + (f"; cap {t.cap}" if t.cap else ""))
