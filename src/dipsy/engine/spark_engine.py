"""Distributed engine: CSV and Parquet data queried with Apache Spark.

Spark reads, partitions and aggregates; dipsy's codec encodes. Python workers receive the records
as Arrow batches (``DataFrame.mapInArrow``), make of each batch the pandas columns
:func:`pandas.read_csv` or :func:`pandas.read_parquet` would hold for those rows, and call the
functions the NumPy engine calls (``encode_column``, ``numbers``, ``NumpyEngine._raw_counts``).
Spark sums the counts (``groupBy(...).count()``); only counts come back to the driver, and at most
five offending values per column for a validation error. One pass validates every row and writes
the codes of the valid rows, each column in the narrowest integer type its codes fit (a byte for up
to 128), as a private Parquet file, so each marginal after it is a plain Spark aggregate over that
file, with no Python in it.

Parquet data whose domain columns are of plain types (integers, floats, text matched as text:
:func:`~.spark_codes.native_kinds`) are validated and coded by Spark itself, with no Python worker:
the codec's rules are Spark SQL expressions (:mod:`.spark_codes`, as the DuckDB engine writes them
in SQL), the report's counts one Spark aggregate, and its examples the first offending rows in
file order (``_metadata.row_index``). Data without invalid rows are then counted from the file at
each query, as Spark's own ``groupBy`` of the raw columns counts them (the distinct rows coded on
the driver by the codec itself) where the columns have few values, else by the expressions; only
data with rows to drop get the private Parquet file of the valid rows' codes. (105 tables of 10⁷
rows, on two cores shared with other work: 0.9 to 1.2 times Spark's own ``groupBy`` of each, in
three runs, against 1.3 and 2.2 times with the pass of Python workers.)

Why it agrees bit for bit with the NumPy and DuckDB engines: every record goes through the same
code. The one column-wide property, the dtype pandas infers for a CSV column, is decided by a first
pass: each partition counts per column the missing values, numbers (pandas' syntax,
:data:`~.duckdb_engine.NUMBER_RE`), whole numbers and booleans, and the driver applies pandas'
rule to the sums. Examples are the first distinct offending values in file order: workers keep
the first five per file split with their positions, the driver orders the splits by file
(``_metadata``) and merges them with pandas' equality.

CSV is read as strings (a positional schema ``c0, c1, …`` from the header, read by dipsy), with
RFC 4180 quotes, no trimming, and a corrupt-record column that finds rows longer than the header.
Empty fields arrive as null, missing for pandas too. A file holding quotes gets one quick job that
looks for lines with an odd number of them. If there are none, the file is read line by line,
split across tasks. Otherwise (quoted line breaks) Python's ``csv`` module, which reads pandas'
grammar, rewrites it record by record into the private folder, every field quoted, and Spark reads
that copy in multi-line mode, one task per file.

Not read as pandas reads them (exotic files; DuckDB differs on most too): invalid UTF-8 (U+FFFD
where pandas refuses the file) and ``"x"y`` (kept raw, pandas reads ``xy``) and lines of control
characters such as ``\\v`` (skipped, pandas reads a value) in files without quoted line breaks; an
unterminated final quote (read to the end, pandas refuses); a line ``"  "`` in a file with quoted
line breaks (skipped as blank); a quoted line break starting on a line that also holds a literal
quote inside an unquoted field (missed); rows longer than the header (refused, pandas makes an
index); integers beyond int64 (read by value, pandas reads some mixes as text); pandas' chunk-wise
typing of large files (``DtypeWarning``). Parquet: nanosecond timestamps (Spark refuses them);
folders must use Hive-style ``key=value`` partitions.

Privacy: Spark's scratch space (shuffle spills, the Parquet file of codes, rewritten CSVs, the
driver's temporary files) is a private folder (0700) ``dipsy-spark-*`` in the temporary directory,
marked with its owner (:mod:`.owner`), removed when the session stops or the process exits, and
swept by the next session if the process was killed. In local mode the driver binds to 127.0.0.1;
the Web UI is off.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import csv
import functools
import gzip
import math
import os
import pickle
import re
import shutil
import socket
import sys
import tempfile
import threading
import warnings
import weakref
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..domain import ColumnIssue, Domain, ValidationReport
from ..domain.codec import encode_column, few_values, numbers, states
from ..domain.limits import check_width
from ..domain.validation import EXAMPLES, MISSING, OUTSIDE, WRONG_TYPE
from ..errors import DataError, ReleaseError
from .base import PANDAS_FALSE, PANDAS_TRUE, PICK_FIELDS, Engine, Pick
from .duckdb_engine import EXAMPLE_ROWS, NUMBER_RE, PANDAS_NA
from .files import dedup_names, file_format, refuse_repeated, unreadable_fix
from .numpy_engine import NumpyEngine
from .owner import mark, sweep
from .spark_codes import coded, native_kinds

JAVA_FIX = "install a Java 17+ runtime, e.g. apt install openjdk-17-jre-headless, or set JAVA_HOME"
MASTER_FIX = (
    "start the master, or correct its address in DIPSY_SPARK_MASTER (spark://HOST:PORT, port 7077 by default); "
    "unset DIPSY_SPARK_MASTER to run Spark on this machine"
)
#: Seconds the driver waits for a standalone master to accept a connection. Spark's own client
#: retries for about a minute and then reports only a stopped context, which reads like a JVM that
#: did not start.
MASTER_TIMEOUT = 5.0
#: The standalone master's port when its address names none.
MASTER_PORT = 7077
_PANDAS_WARNING = "PySpark does not yet fully support pandas"
_LOG4J = (
    "rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\nappender.console.type = Console\n"
    "appender.console.name = console\nappender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
    "appender.console.layout.pattern = %p %c{1}: %m%n%ex\n"
)
# Codes below zero say why a value is invalid (as in the DuckDB engine); the checked pass counts the
# rows and the invalid rows of a split under column -1, codes _ROWS and _INVALID.
_PROBLEMS = ((MISSING, -1), (WRONG_TYPE, -2), (OUTSIDE, -3))
_ROWS, _INVALID = 0, 1
#: A line of the checked pass's summary (see SparkEngine._checked): per file split ``(path, start)``,
#: the rows of ``(col, code)`` (``pos`` None), or one of its first offending values (pickled) at ``pos``.
_Summary = collections.namedtuple("_Summary", "path start col code n pos value")
_ARROW = {
    "string": pa.string(),
    "long": pa.int64(),
    "int": pa.int32(),
    "smallint": pa.int16(),
    "tinyint": pa.int8(),
    "binary": pa.binary(),
    "double": pa.float64(),
}
_WORKER_ERROR = "dipsy data error"
_NA = pa.array(PANDAS_NA)
_BOOLEANS = pa.array(PANDAS_TRUE + PANDAS_FALSE)
_BLANK = re.compile(r"[ \t]*")


# -- the session -----------------------------------------------------------------------------------

_LOCK = threading.Lock()
_SESSION: dict = {}


def spark_session(master: str | None = None):
    """The process's SparkSession, started on first use (master: ``master``, else the environment
    variable ``DIPSY_SPARK_MASTER``, else ``local[2]``); a running one is refused only if another
    master is asked for. ``DIPSY_SPARK_DRIVER_MEMORY`` (default 2g) and ``DIPSY_SPARK_JAVA_OPTIONS``
    (added to the driver JVM's options) are read when the session starts."""
    requested = master or os.environ.get("DIPSY_SPARK_MASTER")
    wanted = requested or "local[2]"
    with _LOCK:
        spark = _SESSION.get("spark")
        if spark is not None and spark.sparkContext._jsc is not None:
            if requested and spark.sparkContext.master != requested:
                raise DataError(
                    f"a Spark session with master {spark.sparkContext.master!r} already runs in this process",
                    f"use one master per process, or stop_session() first to use {wanted!r}",
                )
            return spark
        require_spark()
        check_master(wanted)  # before a JVM is started: an unreachable master is named in seconds
        from pyspark.sql import SparkSession

        sweep(Path(tempfile.gettempdir()), "dipsy-spark-*")  # folders of killed runs
        folder = Path(tempfile.mkdtemp(prefix="dipsy-spark-"))  # mode 0700
        mark(folder)
        (folder / "log4j2.properties").write_text(_LOG4J, encoding="utf-8")
        conf = {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.local.dir": str(folder),
            "spark.sql.warehouse.dir": str(folder / "warehouse"),
            "spark.driver.memory": os.environ.get("DIPSY_SPARK_DRIVER_MEMORY", "2g"),
            "spark.driver.extraJavaOptions":  # quiet logs; the JVM's temporary files in the private folder too
            f'"-Dlog4j2.configurationFile={(folder / "log4j2.properties").as_uri()}" "-Djava.io.tmpdir={folder}" '
            + os.environ.get("DIPSY_SPARK_JAVA_OPTIONS", ""),  # the operator's own, e.g. -XX:TieredStopAtLevel=1
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.sql.caseSensitive": "true",  # columns 'a' and 'A' are two columns, as for pandas
            "spark.sql.sources.partitionColumnTypeInference.enabled": "false",  # partition values as written
            "spark.executorEnv.PYTHONWARNINGS": f"ignore:{_PANDAS_WARNING}:FutureWarning",
            # PySpark otherwise records, around each call of a Column function, the Python line that
            # made it (for Spark's error messages, whose first line alone dipsy shows): five more
            # round trips to the JVM per call and a class looked up by its full name, which cost the
            # JVM more CPU than planning the engine's queries.
            "spark.python.sql.dataFrameDebugging.enabled": "false",
        }
        local = wanted.startswith("local")
        if local:  # one machine: no network exposure, and few shuffle partitions (aggregates are small)
            cores = re.fullmatch(r"local\[(\d+)(?:,\d+)?\]", wanted)
            conf.update(
                {
                    "spark.driver.host": "127.0.0.1",
                    "spark.driver.bindAddress": "127.0.0.1",
                    "spark.sql.adaptive.enabled": "false",
                    "spark.sql.shuffle.partitions": cores[1] if cores else str(os.cpu_count() or 1),
                }
            )
        builder = SparkSession.builder.master(wanted).appName("dipsy")
        for key, value in conf.items():
            builder = builder.config(key, value)
        try:
            with _quiet(), _jvm_started_without_a_fork_hook():
                spark = builder.getOrCreate()
        except Exception as e:  # the JVM did not start, or the cluster refused it (pyspark raises several kinds)
            shutil.rmtree(folder, ignore_errors=True)
            if local:
                raise DataError(f"cannot start Spark ({_first_line(e)})", JAVA_FIX) from None
            raise DataError(f"cannot start Spark with the master {wanted!r} ({_first_line(e)})", MASTER_FIX) from None
        spark.sparkContext.setLogLevel("ERROR")
        if local and "PYSPARK_PYTHON" not in os.environ:
            spark.sparkContext.pythonExec = sys.executable  # workers need this interpreter's packages
        spark.sparkContext.setCheckpointDir(str(folder / "checkpoints"))
        if not _SESSION.get("atexit"):
            atexit.register(stop_session)
        _SESSION.update(spark=spark, folder=folder, atexit=True)
        return spark


@contextlib.contextmanager
def _jvm_started_without_a_fork_hook():
    """Start Spark's JVM in its own process group instead of through PySpark's ``preexec_fn``.

    PySpark launches the JVM with a ``preexec_fn`` that ignores SIGINT, so that a Ctrl-C at the
    terminal stops Python, not the JVM. A ``preexec_fn`` runs Python code in a fork of this process;
    once JAX has run here (the pseudo-posterior's sampler), its threads run too, and
    a fork of a multithreaded process can deadlock (JAX warns of it). A process group of its own keeps
    the terminal's Ctrl-C from the JVM as well, and ``subprocess`` then forks without running Python.
    """
    from pyspark import java_gateway

    popen = getattr(java_gateway, "Popen", None)
    if popen is None:  # another PySpark: leave its launcher as it is
        yield
        return

    def launch(args, **kwargs):
        if kwargs.pop("preexec_fn", None) is not None:
            kwargs["process_group"] = 0
        return popen(args, **kwargs)

    java_gateway.Popen = launch  # the name the launcher calls
    try:
        yield
    finally:
        java_gateway.Popen = popen


def stop_session() -> None:
    """Stop dipsy's Spark session and its JVM, and remove its private folder (done at exit too)."""
    with _LOCK:
        spark, folder = _SESSION.pop("spark", None), _SESSION.pop("folder", None)
        if spark is not None:
            from pyspark import SparkContext

            with contextlib.suppress(Exception):
                spark.stop()
                # The JVM goes too (it exits when its stdin closes): Spark keeps its first local
                # folder for the JVM's life, so the next session needs a new JVM.
                gateway, SparkContext._gateway, SparkContext._jvm = SparkContext._gateway, None, None
                if gateway is not None:
                    gateway.shutdown()
                    gateway.proc.stdin.close()
                    gateway.proc.wait(timeout=30)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def check_master(master: str) -> None:
    """Refuse a standalone master (``spark://HOST:PORT``, or several for a standby, comma-separated)
    none of whose addresses accepts a connection within :data:`MASTER_TIMEOUT` seconds. Other
    masters (local, YARN, Kubernetes) are left to Spark, which names their errors itself.

    >>> check_master("local[2]")
    """
    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, colon, port = address.strip().rpartition(":")
        if not colon:  # no port given
            host, port = address.strip(), str(MASTER_PORT)
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_TIMEOUT):
                return
        except (OSError, ValueError) as e:  # refused, timed out, unknown host; a port that is no number
            reasons.append(f"{address.strip()}: {getattr(e, 'strerror', None) or e}")
    raise DataError(f"the Spark master {master!r} is unreachable ({'; '.join(reasons)})", MASTER_FIX)


def require_spark() -> None:
    """Raise a :class:`DataError` unless pyspark and a Java runtime are installed (no JVM is started)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise DataError("the Spark engine needs pyspark, which is not installed", "pip install 'dipsy[spark]'") from None
    home = os.environ.get("JAVA_HOME")
    if not (Path(home, "bin", "java").exists() if home else shutil.which("java")):
        raise DataError(
            f"the Spark engine needs a Java runtime, and {'JAVA_HOME holds none' if home else 'none was found'}", JAVA_FIX
        )


# -- the engine ------------------------------------------------------------------------------------


class SparkEngine(Engine):
    """Queries over a CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``, ``.pq``) file, or a folder
    of Parquet files (a partitioned dataset), with Spark.

    Parameters
    ----------
    path
        The data. It is read where it is, by Spark, never loaded on the driver.
    domain
        The columns in scope, matched by name against the header or schema.
    on_invalid
        ``"error"`` or ``"drop"``, as for every :class:`~.base.Engine`.
    master
        The Spark master (see :func:`spark_session`); the session is shared by all engines of
        the process and started at the first query, not here.
    """

    def __init__(self, path: str | Path, domain: Domain, on_invalid: str = "error", master: str | None = None) -> None:
        super().__init__(domain, on_invalid)
        require_spark()
        self.path, self.master = Path(path), master
        self.format = "parquet" if self.path.is_dir() else file_format(self.path)
        if not self.path.exists():
            raise DataError(f"data file {str(self.path)!r} does not exist", "check the path of the data file")
        self._kinds: dict[str, str] | None = None  # CSV: how pandas types each domain column
        self._multiline: bool | None = None
        self._files: dict[str, int] = {}
        self._state: dict = {}  # the cached codes and the rewritten CSV, released by close()
        self._finalizer = weakref.finalize(self, _release, self._state)
        if self.format == "csv":
            names = dedup_names(self._csv_header())
            self._schema = None
        else:
            names = self._parquet_schema()
        self._inner = {name: f"c{i}" for i, name in enumerate(names)}  # positional: no name is special to Spark
        #: Parquet of plain types: each domain column's kind, coded in Spark SQL (spark_codes); else None
        self._native: dict[str, str] | None = (
            native_kinds(self.domain.columns, self._schema)
            if self._schema is not None and all(n in self._inner for n in self.domain.names)
            else None
        )

    def close(self) -> None:
        """Drop the cached codes and the rewritten CSV, if any (also done on garbage collection)."""
        self._finalizer()

    # -- opening (driver, metadata only) --

    def _csv_header(self) -> list[str]:
        try:
            with self._open("rt") as f:
                for row in csv.reader(f):
                    if row and not (len(row) == 1 and _BLANK.fullmatch(row[0])):  # pandas skips blank lines
                        check_width(row, f"the header of {str(self.path)!r}")
                        refuse_repeated(row, self.domain, f"the header of {str(self.path)!r}")
                        return row
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            raise self._csv_error(e) from None
        raise DataError(f"CSV file {str(self.path)!r} has no header row", "write the column names on its first line")

    def _parquet_schema(self) -> list[str]:
        import json

        import pyarrow.parquet as pq

        try:
            dataset = pq.ParquetDataset(self.path)  # as pandas.read_parquet reads it
        except (OSError, pa.ArrowException) as e:
            raise DataError(f"cannot read Parquet data {str(self.path)!r}: {_first_line(e)}", unreadable_fix("parquet")) from None
        schema = dataset.schema
        check_width(schema.names, f"the schema of {str(self.path)!r}")
        refuse_repeated(schema.names, self.domain, f"the columns of {str(self.path)!r}")
        meta = schema.pandas_metadata or {}
        index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}  # pandas makes these the index
        if meta:  # keep the column dtypes (Int64, categories, time zones); batches get a default index
            meta = {**meta, "index_columns": [], "column_indexes": []}
            schema = schema.with_metadata({b"pandas": json.dumps(meta).encode()})
        self._schema = schema
        root = os.path.abspath(self.path)  # pandas' order of the files, by their path inside the data
        self._files = {os.path.relpath(os.path.abspath(f), root): i for i, f in enumerate(dataset.files)}
        return [n for n in schema.names if n not in index]

    # -- Spark plumbing --

    def _spark(self):
        spark = spark_session(self.master)
        if self._state.get("session") is not spark:  # a new session: what the old one held is gone
            _release(self._state)
            self._state["session"] = spark
        return spark

    def _run(self, action):
        """Run a Spark action; errors of reading become DataErrors."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        try:
            with _quiet():
                return action()
        except (PySparkException, Py4JJavaError) as e:
            found = re.search(rf"{_WORKER_ERROR}: (.*?) \|\| (.*)", str(e))
            if found:
                raise DataError(found[1], found[2]) from None
            raise DataError(
                f"cannot read {self.format.upper() if self.format == 'csv' else 'Parquet'} data "
                f"{str(self.path)!r}: {_first_line(e)}",
                unreadable_fix(self.format),
            ) from None

    def _source(self):
        """The records: columns ``c{i}`` (CSV: strings), and the file split each comes from. Made once
        per engine and session (the reader's options, the files' listing, the analysed plan); Spark
        reads the files at each query that needs them."""
        self._spark()  # a new session: the old one's source went with it
        if "source" not in self._state:
            self._state["source"] = self._read()
        return self._state["source"]

    def _read(self):
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        spark, path = self._spark(), self._link()
        split = [F.col("_metadata.file_path").alias("_path"), F.col("_metadata.file_block_start").alias("_start")]
        if self.format == "parquet":
            df = self._run(lambda: spark.read.parquet(path))  # reads the footers: errors are the file's
            missing = [n for n in self._inner if n not in df.columns]
            if missing:
                raise DataError(f"Spark does not see the column(s) {missing} of {str(self.path)!r}", unreadable_fix("parquet"))
            columns = [F.col(_quoted(n)).alias(c) for n, c in self._inner.items()]
            # Without the file's metadata, which Spark reads for every row once a query names it
            # (even where the query then drops it): the native pass's queries.
            self._state["plain"] = df.select(*columns)
            self._state["ordered"] = df.select(*columns, split[0], F.col("_metadata.row_index").alias("_row"))
            return df.select(*columns, *split)
        if self._multiline is None:
            # A quoted line break leaves an odd number of quotes on its first line (one quick scan,
            # and only for files that hold a quote at all).
            lines = spark.read.text(path)
            odd = lambda: lines.where(F.size(F.split("value", '"')) % 2 == 0).limit(1).count()  # noqa: E731
            self._multiline = self._has_quotes() and bool(self._run(odd))
        if self._multiline:
            path = str(self._rewritten())
        fields = [StructField(c, StringType()) for c in self._inner.values()] + [StructField("_bad", StringType())]
        reader = spark.read.schema(StructType(fields)).options(
            header=True,
            multiLine=self._multiline,
            quote='"',
            escape='"',
            mode="PERMISSIVE",
            columnNameOfCorruptRecord="_bad",
            ignoreLeadingWhiteSpace=False,
            ignoreTrailingWhiteSpace=False,
            encoding="UTF-8",
            maxColumns=max(20480, 2 * len(fields)),
        )
        if self._multiline:
            reader = reader.option("lineSep", "\n")
        return reader.csv(path).select(*self._inner.values(), "_bad", *split)

    def _link(self) -> str:
        """A link to the data in the private folder: Spark reads a path as a glob pattern and a URI,
        so a name holding ``*``, ``?``, ``[``, ``{`` or ``:`` would read other files, or none."""
        name = "d.csv.gz" if self.path.name.lower().endswith(".gz") else "d.csv" if self.format == "csv" else "d.parquet"
        if "link" not in self._state:
            self._state["link"] = Path(tempfile.mkdtemp(prefix="data-", dir=_SESSION["folder"]))
            (self._state["link"] / name).symlink_to(self.path.resolve(), target_is_directory=self.path.is_dir())
        return str(self._state["link"] / name)

    def _open(self, mode: str):
        opener = gzip.open if self.path.name.lower().endswith(".gz") else open
        return opener(self.path, mode) if mode == "rb" else opener(self.path, mode, encoding="utf-8-sig", newline="")

    def _csv_error(self, e: BaseException) -> DataError:
        return DataError(f"cannot read CSV file {str(self.path)!r}: {_first_line(e)}", unreadable_fix("csv"))

    def _has_quotes(self) -> bool:
        try:
            with self._open("rb") as f:
                return any(b'"' in chunk for chunk in iter(lambda: f.read(1 << 24), b""))
        except OSError as e:
            raise self._csv_error(e) from None

    def _rewritten(self) -> Path:
        """The CSV's records rewritten (Python's csv, the grammar pandas reads) with every field
        quoted and LF line ends, blank lines left out, in the private folder: what Spark's
        multi-line reader reads exactly as pandas reads the original."""
        if "copy" not in self._state:
            folder = Path(tempfile.mkdtemp(prefix="csv-", dir=_SESSION["folder"]))
            limit = csv.field_size_limit(sys.maxsize)
            try:
                with self._open("rt") as f, open(folder / "d.csv", "w", encoding="utf-8", newline="") as out:
                    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
                    for row in csv.reader(f):
                        if len(row) > len(self._inner):
                            raise self._csv_error(ValueError("a row has more fields than the header"))
                        if row and not (len(row) == 1 and _BLANK.fullmatch(row[0])):
                            writer.writerow(row)
            except (OSError, UnicodeDecodeError, csv.Error, DataError) as e:
                shutil.rmtree(folder, ignore_errors=True)
                raise e if isinstance(e, DataError) else self._csv_error(e) from None
            finally:
                csv.field_size_limit(limit)
            self._state["copy"] = folder
        return self._state["copy"] / "d.csv"

    def _plan(self, names) -> dict:
        """What a worker needs to type a batch's columns ``names`` as pandas would."""
        return {
            "format": self.format,
            "inner": {n: self._inner[n] for n in names},
            "kinds": self._kinds or {},
            "schema": self._schema,
            "width": len(self._inner),
            "where": str(self.path),
        }

    def _mapped(self, worker, schema: str, names, **args):
        with _quiet():
            return self._source().mapInArrow(functools.partial(worker, plan=self._plan(names), **args), schema)

    # -- queries --

    def _has_column(self, name: str) -> bool:
        return name in self._inner

    def _reopen(self, domain: Domain) -> SparkEngine:
        engine = SparkEngine(self.path, domain, self.on_invalid, self.master)
        # Bins decide neither a column's type nor which rows are valid: what was read holds.
        engine._kinds, engine._multiline, engine._report = self._kinds, self._multiline, self._report
        return engine

    def _validate(self) -> ValidationReport:
        absent = tuple(n for n in self.domain.names if n not in self._inner)
        if absent:
            rows = self._run(lambda: self._source().count())
            return ValidationReport(rows, rows, (), absent)
        if self._native is not None:
            return self._native_report()
        columns = self.domain.columns
        if self.format == "csv" and self._kinds is None:
            sums = self._mapped(_infer_partition, "col int, counts array<long>", self.domain.names).toArrow
            totals = np.zeros((len(columns), 5), np.int64)
            for j, part in zip(*self._run(sums).to_pydict().values()):
                totals[j] += part
            self._kinds = {c.name: _csv_kind(*totals[j]) for j, c in enumerate(columns)}
        checked = self._checked()
        summaries = self._run(checked.where(checked["summary"].isNotNull()).select("summary").collect)
        rows = [_Summary(*line) for s in summaries for line in pickle.loads(s.summary)]
        units = sorted({(r.path, r.start) for r in rows}, key=self._rank)
        counts: dict = {}
        found: dict = {}
        for r in rows:
            key = ((r.path, r.start), r.col, r.code)
            if r.pos is None:
                counts[key] = counts.get(key, 0) + r.n
            else:
                found.setdefault(key, []).append((r.pos, r.value))
        total = lambda col, code: sum(counts.get((u, col, code), 0) for u in units)  # noqa: E731
        issues = []
        for j, c in enumerate(columns):
            for problem, code in _PROBLEMS:
                n = total(j, code)
                if n:
                    shown = () if problem == MISSING else _merged_examples(units, j, code, counts, found)
                    issues.append(ColumnIssue(c.name, problem, n, shown))
        if issues and self.on_invalid == "error":  # every query will refuse: the codes serve none
            _release_codes(self._state)
        return ValidationReport(total(-1, _ROWS), total(-1, _INVALID), tuple(issues))

    def _rank(self, unit: tuple) -> tuple:
        """A file split ``(path, start)``'s place in pandas' order of the data's files."""
        return self._files.get(os.path.relpath(_local(unit[0]), self._link()), 0), unit[1]

    def _checked(self):
        """One pass of Python workers over the records, written once (:meth:`_kept`): per task, a
        pickled list of :class:`_Summary` lines (``summary`` not null: per file split, the rows,
        invalid rows, problems and first offending values); and each valid row's codes ``k{j}``
        (narrow integers, :func:`_code_type`), numbers ``x{j}`` and missing states ``s{j}``
        (``summary`` null)."""
        if "checked" not in self._state:
            schema = ", ".join(f"{n} {t}" for n, t in _checked_fields(self.domain.columns))
            self._kept(self._mapped(_check_partition, schema, self.domain.names, columns=self.domain.columns))
        return self._state["checked"]

    def _kept(self, rows) -> None:
        """``rows`` (confidential codes) written once as Parquet in a private folder (0700) of the
        session's, read back as ``checked``.

        Written, not cached: Spark's vectorised Parquet reader reads a byte per code, as its own
        ``groupBy`` of a file reads it, where Spark's in-memory cache of the same rows was slower to
        make and to read (105 tables of 10⁶ rows, validation included: 105 s against 82 s); and the
        file stays on disk, not in the driver's memory, at any n. It lives in the session's private
        folder and is removed by :meth:`close`, with the session, or as soon as validation refuses
        the data. Read with the rows' schema, so that a file of no rows (no part files) reads as no
        rows. On a cluster (a master that is not ``local``) the executors cannot reach this
        machine's private folder: they cache the rows themselves (memory, then their own scratch
        space)."""
        spark = self._spark()
        if not spark.sparkContext.master.startswith("local"):
            from pyspark import StorageLevel

            self._state["checked"] = rows.persist(StorageLevel.MEMORY_AND_DISK)
            return
        self._state["codes"] = folder = Path(tempfile.mkdtemp(prefix="codes-", dir=_SESSION["folder"]))  # mode 0700
        try:
            # Uncompressed: codes of few values are dictionary-encoded already, and snappy made
            # the writing slower (10⁷ rows: 41 s against 36 s) and the tables no faster.
            write = rows.write.option("compression", "none")
            self._run(lambda: write.parquet(str(folder / "codes")))  # the workers' errors are the data's
        except DataError:
            _release_codes(self._state)
            raise
        self._state["checked"] = spark.read.schema(rows.schema).parquet(str(folder / "codes"))

    def _codes(self):
        """The valid rows' fields ``k{j}``, ``x{j}``, ``s{j}`` (see :func:`_checked_fields`)."""
        if self._native is None:
            checked = self._checked()
            return checked.where(checked["summary"].isNull())
        fields = [rule.alias(n) for n, rule in self._native_fields()]
        if not self.report.invalid_rows:  # nothing to leave out: coded from the data at each query
            return self._plain().select(*fields)
        if "checked" not in self._state:
            problems = [rule.problem == 0 for rule in self._coded()]
            self._kept(self._plain().where(functools.reduce(lambda a, b: a & b, problems)).select(*fields))
        return self._state["checked"]

    def _cell_counts(self, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        from pyspark.sql import functions as F

        strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
        if self._native is not None and not self.report.invalid_rows and all(few_values(self.domain[n]) for n in names):
            return self._grouped_cell_counts(names, strides)
        codes = self._codes()  # first: it starts the session, which F.col needs
        index = {c.name: j for j, c in enumerate(self.domain.columns)}
        cell = functools.reduce(
            lambda a, b: a + b, [F.col(f"k{index[n]}").cast("long") * F.lit(s) for n, s in zip(names, strides)]
        )
        out = self._run(codes.select(cell.alias("cell")).groupBy("cell").count().toArrow)
        return out["cell"].to_numpy().astype(np.int64), out["count"].to_numpy().astype(np.int64)

    # -- the native pass: the codec in Spark SQL (Parquet of plain types; see spark_codes) --

    def _plain(self):
        """The Parquet records' columns ``c{i}`` alone (see :meth:`_read`)."""
        self._source()
        return self._state["plain"]

    def _coded(self) -> list:
        """Each domain column's :class:`~.spark_codes.Coded` rules over its raw values."""
        from pyspark.sql import functions as F

        self._spark()  # F.col needs the session (a new one drops the rules made in the old one)
        if "coded" not in self._state:
            kinds: dict[str, str] = self._native or {}
            self._state["coded"] = [coded(c, kinds[c.name], F.col(self._inner[c.name])) for c in self.domain.columns]
        return self._state["coded"]

    def _native_fields(self) -> list[tuple[str, object]]:
        """The rules of :func:`_checked_fields`' columns, in its order and types."""
        rules = self._coded()
        columns = self.domain.columns
        picked = {"k": lambda r: r.code, "x": lambda r: r.number, "s": lambda r: r.state}
        return [(n, picked[n[0]](rules[int(n[1:])]).cast(t)) for n, t in _checked_fields(columns)[1:]]

    def _native_report(self) -> ValidationReport:
        """The report from one Spark aggregate: the rows, the invalid rows, each column's rows of
        each problem (and each integer column's present values: pandas reads one with nulls as
        floats, which its examples show)."""
        from pyspark.sql import functions as F

        columns, rules = self.domain.columns, self._coded()
        kinds: dict[str, str] = self._native or {}
        ints = [j for j, c in enumerate(columns) if kinds[c.name] in ("int", "int64")]
        invalid = functools.reduce(lambda a, b: a | b, [r.problem < 0 for r in rules])
        counts = [F.count(F.lit(1)), F.count(F.when(invalid, 1))]
        counts += [F.count(F.when(r.problem == code, 1)) for r in rules for _, code in _PROBLEMS]
        counts += [F.count(F.col(self._inner[columns[j].name])) for j in ints]
        got = [int(x) for x in self._run(self._plain().agg(*[n.alias(f"n{i}") for i, n in enumerate(counts)]).collect)[0]]
        rows, by_problem, present = got[0], iter(got[2 : 2 + 3 * len(columns)]), dict(zip(ints, got[2 + 3 * len(columns) :]))
        issues = []
        for j, c in enumerate(columns):
            for (problem, code), found in zip(_PROBLEMS, by_problem):
                if found:
                    shown = () if problem == MISSING else self._native_examples(j, code, present.get(j, rows) < rows)
                    issues.append(ColumnIssue(c.name, problem, found, shown))
        return ValidationReport(rows, got[1], tuple(issues))

    def _native_examples(self, j: int, code: int, nulls: bool) -> tuple[str, ...]:
        """The first distinct values of column ``j`` with problem ``code`` among its first
        EXAMPLE_ROWS such rows in file order (pandas' order of the files, then rows), as ``str`` of
        what pandas holds (``nulls``: an integer column with nulls, which pandas reads as floats)."""
        from pyspark.sql import functions as F

        column = self.domain.columns[j]
        self._source()
        bad = self._state["ordered"].where(self._coded()[j].problem == code)
        files = self._run(bad.groupBy("_path").count().toArrow).to_pydict()
        needed: list[str] = []
        rows = 0
        for path, count in sorted(zip(files["_path"], files["count"]), key=lambda pc: self._rank((pc[0], 0))):
            if rows >= EXAMPLE_ROWS:
                break
            needed, rows = [*needed, path], rows + count
        rank = F.lit(0)
        for i, path in reversed(list(enumerate(needed))):
            rank = F.when(F.col("_path") == path, i).otherwise(rank)
        first = bad.where(F.col("_path").isin(needed)).select(rank.alias("_f"), "_row", self._inner[column.name])
        table = self._run(first.orderBy("_f", "_row").limit(EXAMPLE_ROWS).toArrow)
        values = _typed(table, self._plan([column.name]))[column.name]
        if nulls and not str(values.dtype).startswith(("Int", "UInt")):
            values = values.astype(np.float64)
        return tuple(str(v) for _, v in _first_distinct(list(enumerate(values.to_numpy()))))

    def _grouped_cell_counts(self, names: tuple[str, ...], strides: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Cell counts of data without invalid rows, whose columns ``names`` have few values
        (:func:`~dipsy.domain.codec.few_values`: no more valid values than codes): Spark's own ``groupBy`` of the raw
        columns, then each distinct row coded by the codec itself, as the DuckDB engine does."""
        raw = list(dict.fromkeys(self._inner[n] for n in names))
        table = self._run(self._plain().groupBy(*raw).count().toArrow)
        frame = _typed(table, self._plan(list(dict.fromkeys(names))))
        cells = np.zeros(table.num_rows, np.int64)
        for n, stride in zip(names, strides):
            codes = encode_column(frame[n], self.domain[n]).codes
            if (codes < 0).any():
                raise DataError(f"internal error: column {n!r} has invalid values in valid data", "report this bug")
            cells += codes * stride
        found, at = np.unique(cells, return_inverse=True)
        counts = np.zeros(len(found), np.int64)
        np.add.at(counts, at, table["count"].to_numpy().astype(np.int64))
        return found, counts

    def _values(self, picks: tuple[tuple[str, Pick], ...]) -> list[np.ndarray]:
        index = {c.name: j for j, c in enumerate(self.domain.columns)}
        field = lambda n, pick: f"{PICK_FIELDS[pick]}{index[n]}"  # noqa: E731
        out = self._run(self._codes().select(*dict.fromkeys(field(n, p) for n, p in picks)).toArrow)
        return [out[field(n, p)].to_numpy().astype(float if p == "number" else np.int64) for n, p in picks]

    def _raw_counts(self, name: str) -> tuple:
        from pyspark.sql import functions as F

        counted = self._mapped(_raw_partition, "t string, x double, n long", [name], name=name)
        out = self._run(counted.groupBy("t", "x").agg(F.sum("n").alias("n")).toArrow).to_pydict()
        texts = [(t, n) for t, n in zip(out["t"], out["n"]) if t is not None]
        nums = [(x, n) for t, x, n in zip(out["t"], out["x"], out["n"]) if t is None]
        return (
            [t for t, _ in texts],
            np.asarray([n for _, n in texts], np.int64),
            np.asarray([x for x, _ in nums], float),
            np.asarray([n for _, n in nums], np.int64),
        )

    # -- writing --

    def write_parquet(self, frames, folder: str | Path, partition_by=()) -> Path:
        """:func:`write_parquet` with this engine's Spark session."""
        return write_parquet(frames, folder, partition_by, self.master)


def write_parquet(frames, folder: str | Path, partition_by=(), master: str | None = None) -> Path:
    """Write pandas DataFrames (chunks of records, all of the same columns and dtypes) with Spark as
    one Parquet dataset in ``folder``, which must not exist, partitioned by the columns
    ``partition_by``; chunk by chunk (appended), so memory holds one chunk. Only the part files
    are kept."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    folder = Path(folder)
    if folder.exists():
        raise ReleaseError(f"{str(folder)!r} exists", "choose a new folder for the Parquet dataset")
    spark, schema = spark_session(master), None
    for frame in frames:
        try:
            with _quiet():
                chunk = spark.createDataFrame(frame, schema=schema)  # every chunk gets the first one's types
                chunk.write.mode("append").partitionBy(*partition_by).parquet(str(folder.resolve()))
        except (PySparkException, Py4JJavaError) as e:
            raise ReleaseError(
                f"Spark cannot write {str(folder)!r}: {_first_line(e)}", "check the folder's path and free space"
            ) from None
        schema = schema or chunk.schema
    if schema is None:
        raise ValueError("no records to write")
    for p in list(folder.rglob("*")):  # Spark's bookkeeping (_SUCCESS, .crc checksums): the dataset is its part files
        if p.is_file() and (p.name == "_SUCCESS" or p.name.endswith(".crc")):
            p.unlink()
    return folder


# -- the workers (run in Python processes beside the Spark executors) --------------------------------


def _typed(batch: pa.RecordBatch, plan: dict) -> pd.DataFrame:
    """The batch's columns as pandas would hold them after reading the whole file."""
    inner = plan["inner"]
    if plan["format"] == "csv":
        _refuse_long_rows(batch.column("_bad"), plan)
        return pd.DataFrame({n: _csv_column(batch.column(c), plan["kinds"].get(n, "str")) for n, c in inner.items()})
    schema = plan["schema"]
    fields = [schema.field(n) for n in inner]
    arrays = [_cast(batch.column(c), f.type) for c, f in zip(inner.values(), fields)]
    return _to_pandas(pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=schema.metadata)))


def _csv_column(texts: pa.Array, kind: str) -> pd.Series:
    """CSV fields as pandas' parser holds them in a column of ``kind`` (see :func:`_csv_kind`)."""
    missing = _missing(texts)
    values = texts.to_numpy(zero_copy_only=False).astype(object)
    if kind == "str":
        values[missing] = None
        return pd.Series(values, dtype="str")
    if kind in ("bool", "bool?"):
        flags = np.isin(values, PANDAS_TRUE)
        if kind == "bool":
            return pd.Series(flags)
        out = flags.astype(object)
        out[missing] = np.nan
        return pd.Series(out, dtype=object)
    if kind == "int":  # int64, else uint64, else Python ints, as pandas reads them
        ints = [int(t) for t in values]
        for dtype in (np.int64, np.uint64):
            with contextlib.suppress(OverflowError):
                return pd.Series(np.array(ints, dtype=dtype))
        return pd.Series(np.array(ints, dtype=object), dtype=object)
    values[missing] = "nan"
    return pd.Series(values.astype(np.float64))  # float(text): correctly rounded, as pandas' parser


def _csv_kind(missing: int, present: int, numbers_: int, whole: int, booleans: int) -> str:
    """pandas' dtype for a CSV column from its counts: int, float (also all missing), bool (with
    missing values: bool?, an object column), or str."""
    if present == numbers_:
        return "int" if whole == present and missing == 0 and present else "float"
    if booleans == present:
        return "bool" if missing == 0 else "bool?"
    return "str"


def _missing(texts: pa.Array) -> np.ndarray:
    """Null (an empty or absent field) or one of pandas' missing-value markers."""
    return pc.fill_null(pc.or_(pc.is_null(texts), pc.is_in(texts, value_set=_NA)), True).to_numpy(zero_copy_only=False)


def _refuse_long_rows(bad: pa.Array, plan: dict) -> None:
    for raw in pc.drop_null(bad).to_pylist():  # short rows (padded) and long ones: tell them apart
        if len(next(csv.reader([raw]), [])) > plan["width"]:
            problem = f"cannot read CSV file {plan['where']!r}: a row has more fields than the header"
            raise ValueError(
                f"{_WORKER_ERROR}: {problem} || {unreadable_fix('csv')}"
            )  # a DataError on the driver (SparkEngine._run)


def _cast(array: pa.Array, dtype: pa.DataType) -> pa.Array:
    """Spark's Arrow column as the file holds it (unsigned, dictionary, partition values as text)."""
    if pa.types.is_dictionary(dtype):
        return pc.dictionary_encode(_cast(array, dtype.value_type)).cast(dtype)
    return array if array.type == dtype else array.cast(dtype)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    try:
        from pandas.io._util import arrow_table_to_pandas  # what pandas.read_parquet calls
    except ImportError:  # pragma: no cover - older pandas
        return table.to_pandas()
    return arrow_table_to_pandas(table)


def _infer_partition(batches, plan):
    """Per domain column: missing values, present ones, numbers, whole numbers, booleans."""
    names = list(plan["inner"])
    totals = np.zeros((len(names), 5), np.int64)
    number = f"^(?:{NUMBER_RE})$"
    for batch in batches:
        _refuse_long_rows(batch.column("_bad"), plan)
        for j, name in enumerate(names):
            texts = batch.column(plan["inner"][name])
            present = ~_missing(texts)
            is_number = present & pc.fill_null(pc.match_substring_regex(texts, number), False).to_numpy(zero_copy_only=False)
            dotted = pc.fill_null(pc.match_substring_regex(texts, "[.eEiI]"), False).to_numpy(zero_copy_only=False)
            booleans = present & pc.fill_null(pc.is_in(texts, value_set=_BOOLEANS), False).to_numpy(zero_copy_only=False)
            totals[j] += [
                len(present) - present.sum(),
                present.sum(),
                is_number.sum(),
                (is_number & ~dotted).sum(),
                booleans.sum(),
            ]
    yield pa.RecordBatch.from_pydict({"col": pa.array(range(len(names)), pa.int32()), "counts": totals.tolist()})


def _check_partition(batches, plan, columns):
    """Per batch, the codes (and numbers) of the valid rows; then one row whose ``summary`` is the
    pickled list of :class:`_Summary` lines: per file split, the rows, invalid rows, each column's
    problems and their first distinct values."""
    schema = pa.schema([(n, _ARROW[t]) for n, t in _checked_fields(columns)])
    units = {}
    for batch in batches:
        frame = _typed(batch, plan)
        encoded = [encode_column(frame[c.name], c) for c in columns]
        invalid = np.zeros(batch.num_rows, bool)
        for e in encoded:
            invalid |= e.invalid
        valid = ~invalid
        codes = [e.codes[valid] for c, e in zip(columns, encoded) if c.encodable]
        codes += [numbers(frame[c.name], c)[valid] for c in columns if not c.is_categorical]
        codes += [states(frame[c.name], c)[valid] for c in columns if not c.is_categorical and c.missing is not None]
        yield _batch(schema, [None, *codes], int(valid.sum()))
        for unit, lo, hi in _runs(batch):
            u = units.setdefault(unit, {})
            u[(-1, _ROWS)] = u.get((-1, _ROWS), 0) + hi - lo
            u[(-1, _INVALID)] = u.get((-1, _INVALID), 0) + int(invalid[lo:hi].sum())
            for j, (c, e) in enumerate(zip(columns, encoded)):
                for (problem, code), mask in zip(_PROBLEMS, (e.missing, e.wrong_type, e.outside)):
                    mask, seen = mask[lo:hi], u.get((j, code), 0)
                    if problem != MISSING and seen < EXAMPLE_ROWS and mask.any():
                        bad = frame[c.name].iloc[lo:hi][mask].head(EXAMPLE_ROWS - seen)
                        firsts = np.flatnonzero(~bad.duplicated().to_numpy())
                        u.setdefault(("found", j, code), []).extend(zip(seen + firsts, pd.unique(bad)))
                    u[(j, code)] = seen + int(mask.sum())
    out = []
    for (path, start), u in units.items():
        for key, n in u.items():
            if key[0] != "found":
                out.append((path, start, key[0], key[1], n, None, None))
            else:
                out += [(path, start, key[1], key[2], 0, int(pos), pickle.dumps(v)) for pos, v in _first_distinct(n)]
    yield _batch(schema, [[pickle.dumps(out)]] + [None] * (len(schema) - 1), 1)


def _checked_fields(columns) -> list[tuple[str, str]]:
    """The summary, the code of each encodable column, the number of each integer or numeric one,
    the missing state of each of those that declares missing values."""
    return [
        ("summary", "binary"),
        *[(f"k{j}", _code_type(c.n_codes)) for j, c in enumerate(columns) if c.encodable],
        *[(f"x{j}", "double") for j, c in enumerate(columns) if not c.is_categorical],
        *[(f"s{j}", _code_type(c.n_states)) for j, c in enumerate(columns) if not c.is_categorical and c.missing is not None],
    ]


def _code_type(size: int) -> str:
    """The narrowest Spark integer type for codes 0 … size − 1 (and −1, a missing state's "none"):
    a table reads a byte per row and column where a long would take eight.

    >>> _code_type(2), _code_type(128), _code_type(129), _code_type(70_000), _code_type(2**40)
    ('tinyint', 'tinyint', 'smallint', 'int', 'long')
    """
    return "tinyint" if size <= 2**7 else "smallint" if size <= 2**15 else "int" if size <= 2**31 else "long"


def _batch(schema: pa.Schema, arrays: list, rows: int) -> pa.RecordBatch:
    """A batch of ``schema`` from ``arrays`` (``None``: a column of nulls)."""
    return pa.RecordBatch.from_arrays(
        [pa.nulls(rows, f.type) if a is None else pa.array(a, f.type) for a, f in zip(arrays, schema)], schema=schema
    )


def _raw_partition(batches, plan, name):
    """Distinct raw values and their counts, per batch: CSV fields as written, typed values otherwise."""
    for batch in batches:
        if plan["format"] == "csv":
            _refuse_long_rows(batch.column("_bad"), plan)
            texts = batch.column(plan["inner"][name]).filter(pa.array(~_missing(batch.column(plan["inner"][name]))))
            counts = pc.value_counts(texts)
            t, tc = counts.field("values").to_pylist(), counts.field("counts").to_numpy()
            x, xc = np.zeros(0), np.zeros(0, np.int64)
        else:
            t, tc, x, xc = NumpyEngine(_typed(batch, plan), Domain.from_sizes({name: 2}))._raw_counts(name)
        yield pa.RecordBatch.from_pydict(
            {
                "t": pa.array([*map(str, t), *[None] * len(x)], pa.string()),
                "x": pa.array([*[None] * len(t), *np.asarray(x, float)], pa.float64()),
                "n": pa.array(np.concatenate([np.asarray(tc, np.int64), np.asarray(xc, np.int64)])),
            }
        )


def _runs(batch: pa.RecordBatch):
    """The batch's rows by file split, ``((path, start), first row, row after the last)``, in order."""
    paths, starts = batch.column("_path"), batch.column("_start")
    ends: set[int] = set()
    for col in (paths, starts):
        ends.update(pc.run_end_encode(col).run_ends.to_pylist() if len(col) else [])
    lo = 0
    for hi in sorted(ends):
        yield (paths[lo].as_py(), starts[lo].as_py()), lo, hi
        lo = hi


def _first_distinct(found) -> list:
    """The first :data:`EXAMPLES` distinct values (pandas' equality, as ``pd.unique``) of ``(pos, value)`` pairs."""
    found = sorted(found, key=lambda pv: pv[0])
    values = np.empty(len(found), dtype=object)
    values[:] = [v for _, v in found]
    codes, _ = pd.factorize(values)
    _, first = np.unique(codes, return_index=True)
    return [found[i] for i in sorted(first)[:EXAMPLES]]


def _merged_examples(units, col, code, counts, found) -> tuple[str, ...]:
    """The first distinct offending values among the first EXAMPLE_ROWS offending rows, in file order."""
    candidates, offset = [], 0
    for u in units:
        key = (u, col, code)
        candidates += [(offset + pos, pickle.loads(v)) for pos, v in found.get(key, []) if offset + pos < EXAMPLE_ROWS]
        offset += counts.get(key, 0)
    return tuple(str(v) for _, v in _first_distinct(candidates))


# -- helpers ----------------------------------------------------------------------------------------


def _release(state: dict) -> None:
    for key in ("source", "plain", "ordered", "coded"):
        state.pop(key, None)
    _release_codes(state)
    for key in ("copy", "link"):
        if key in state:
            shutil.rmtree(state.pop(key), ignore_errors=True)  # a link is removed, never what it points to


def _release_codes(state: dict) -> None:
    """Forget the checked pass and remove its Parquet file of confidential codes (or, on a
    cluster, drop the executors' cached copy)."""
    checked = state.pop("checked", None)
    if checked is not None and "codes" not in state:
        with contextlib.suppress(Exception):
            checked.unpersist()
    if "codes" in state:
        shutil.rmtree(state.pop("codes"), ignore_errors=True)


def _local(uri: str) -> str:
    """The local path of a file URI, as pyarrow names the file."""
    return os.path.abspath(unquote(urlparse(uri).path))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _first_line(e: BaseException) -> str:
    java = getattr(e, "java_exception", None)  # py4j's own message says only which call failed
    lines = [line.strip() for line in str(java if java is not None else e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


@contextlib.contextmanager
def _quiet():
    """pyspark warns about pandas 3 on each conversion: silence that warning here only."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PANDAS_WARNING, category=FutureWarning)
        yield
