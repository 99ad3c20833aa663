"""Shared fixtures: no test touches the user's real budget ledger, nor the record of the ledgers dipsy created."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"
_JAX_CACHE = pytest.StashKey[str]()
_RUN_FOLDER = pytest.StashKey[str]()


def pytest_configure(config):
    """One JAX compilation cache on disk for the run, shared by the xdist workers and the processes the
    tests start (they inherit the environment): the pseudo-posterior's sampler compiles the same programs
    for every release, and compiling is most of the time its tests take. Removed at the end of the run;
    a cache named in JAX_COMPILATION_CACHE_DIR by the caller is used and kept."""
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="dipsy-tests-jax-cache-")
        os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")  # the sampler's, not mbi's many small ones
        config.stash[_JAX_CACHE] = folder
    # A ledger and a record of ledgers of the run's own, for what runs before a test's own (below): a
    # module's or session's fixture that draws a release records it (dipsy.synthesize's default ledger)
    # here, never in the user's data folder.
    run_folder = tempfile.mkdtemp(prefix="dipsy-tests-ledger-", dir=LEDGER_ROOT)
    config.stash[_RUN_FOLDER] = run_folder
    os.environ["DIPSY_LEDGER"] = os.path.join(run_folder, "ledger.sqlite")
    os.environ["DIPSY_CONFIG_DIR"] = os.path.join(run_folder, "config")
    # The tests' Spark JVMs live a minute or two and run small queries: C1 alone compiles what they run
    # (the optimizing compiler C2 spent 45 of test_spark_engine.py's 111 CPU seconds), and one GC thread.
    # Spark's own jars are not verified as they load (25,000 classes; verification cost about 8 % of the
    # CPU). One task per chunk that write_parquet writes (spark.default.parallelism, read from the
    # system properties as the session starts): half the part files, and Hadoop forks a chmod for each
    # file and folder it writes.
    os.environ.setdefault(
        "DIPSY_SPARK_JAVA_OPTIONS",
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
        " -Dspark.default.parallelism=1",
    )


#: Test files that run on one worker together (``make test``'s ``--dist loadfile`` otherwise sends each
#: file to a worker of its own choosing): the Spark modules, which then share one JVM (:func:`spark`).
TOGETHER = {"tests/test_spark_engine.py": "spark", "tests/test_spark_release.py": "spark"}
#: The longest units of work, longest first (seconds on 2 cores, from ``--durations=0``): they start
#: first, and the many short files fill in behind them. Started last, as the default order (most tests
#: first) had it, the pseudo-posterior file alone kept one worker busy for 80 s after the other finished.
LONGEST_FIRST = (
    "tests/test_pseudo_posterior.py",  # 170 s: NUTS programs compiled per model and data shape
    "spark",  # 135 s
    "tests/test_docs.py",  # 50 s
    "tests/test_engine.py",  # 43 s
    "tests/test_report.py",  # 40 s
    "tests/test_dpsyn.py",  # 32 s
    "tests/test_kill_safety.py",  # 28 s
)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the files of :data:`TOGETHER` as one unit of work, and the units of
    :data:`LONGEST_FIRST` sent out first."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return TOGETHER.get(file, file)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the queue is complete before the first unit goes out
                for scope in reversed(LONGEST_FIRST):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
                self.ordered = True
            super()._assign_work_unit(node)

    return ByFile(config, log)


def pytest_unconfigure(config):
    for key in (_JAX_CACHE, _RUN_FOLDER):
        folder = config.stash.get(key, None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def address_limited(limit: int, argv: list[str]) -> list[str]:
    """``argv`` run under an address-space limit of ``limit`` bytes, set by a small Python process that
    then becomes ``argv`` (exec): no ``preexec_fn``, which would run Python code in a fork of this
    process, where JAX's threads may already run."""
    cap = (
        "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_AS, (n, n)); "
        "os.execv(sys.argv[2], sys.argv[2:])"
    )
    return [sys.executable, "-c", cap, str(limit), *argv]


def default_sigint(argv: list[str]) -> list[str]:
    """``argv`` started with Ctrl-C's default action, as from a terminal, also when these tests run
    with SIGINT ignored (a shell's command started in the background), which a new Python keeps."""
    reset = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    return [sys.executable, "-c", reset, *argv]


def skip_without_spark(what: str) -> None:
    """Skip the calling test module, saying why, unless pyspark and a Java runtime are installed."""
    from dipsy.engine.spark_engine import require_spark
    from dipsy.errors import DataError

    try:
        require_spark()
    except DataError as e:
        pytest.skip(f"{what}: {e}", allow_module_level=True)


#: What starting the worker's Spark session warned or raised unraisably (see :func:`spark`).
SPARK_STARTED: dict[str, list] = {}


@pytest.fixture(scope="session")
def spark():
    """The worker's one Spark session, shared by the Spark modules (a JVM start is 10-20 s of CPU),
    started once JAX has run in this process, as it has after mbi's estimation or the pseudo-posterior's
    sampler: what the start warned or raised unraisably is kept in :data:`SPARK_STARTED`. Stopped at
    the end, when its private scratch folder must go with it."""
    import warnings

    import jax.numpy as jnp

    from dipsy.engine.spark_engine import _SESSION, spark_session, stop_session

    jnp.ones(3).sum().block_until_ready()  # JAX's backend, its threads and its at-fork hook now run
    unraisable, hook = [], sys.unraisablehook
    sys.unraisablehook = unraisable.append  # a warning raised inside an at-fork hook arrives here
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            session = spark_session()
    finally:
        sys.unraisablehook = hook
    SPARK_STARTED.update(warnings=[str(w.message) for w in caught], unraisable=[str(u.exc_value) for u in unraisable])
    # For the tests' small files only (users keep Spark's settings and the engine's): a query costs the
    # JVM 0.1-0.3 s of CPU whatever the rows, and the tests run about 120. No Java is generated and
    # compiled (Janino, then the JIT) for each new query: a few thousand rows are read as fast
    # interpreted (7-15 % less CPU). One reduce task per aggregate (the engine asks for one per core).
    for key, value in {
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.shuffle.partitions": "1",
    }.items():
        session.conf.set(key, value)
    folder = _SESSION["folder"]
    yield session
    stop_session()
    assert not folder.exists()  # the private scratch folder goes with the session


@pytest.fixture
def ctrl_c():
    """A SIGINT raises KeyboardInterrupt here during the test, as Python sets up from a terminal, also
    when these tests run with SIGINT ignored (a shell's command started in the background)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


#: Where the tests' default ledgers live: in memory where the machine has a tmpfs. A release commits
#: its ledger lines with SQLite's fsync; on a disk that is 14 ms of each 27 ms small release, and the
#: suite makes thousands of them (measured on test_marginal_sets' 400-release coverage test: 11.4 s
#: → 6.9 s with no ledger at all). What the ledger records, and how, is the same on either.
LEDGER_ROOT = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, tmp_path_factory, monkeypatch):
    """The default ledger in a folder of the test's own (in memory where it can be: LEDGER_ROOT), and
    the record of the ledgers dipsy created in a folder of the test's own beside it."""
    folder = Path(tempfile.mkdtemp(prefix="dipsy-test-ledger-", dir=LEDGER_ROOT)) if LEDGER_ROOT else tmp_path
    path = folder / "ledger.sqlite"
    monkeypatch.setenv("DIPSY_LEDGER", str(path))
    monkeypatch.setenv("DIPSY_CONFIG_DIR", str(tmp_path_factory.mktemp("dipsy-config")))
    yield path
    if folder != tmp_path:
        shutil.rmtree(folder, ignore_errors=True)
