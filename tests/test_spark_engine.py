"""The Spark engine agrees bit for bit with the NumPy and DuckDB engines (design rule 7).

Every query (contingency tables dense and sparse, values, value counts, the validation report with
its examples, row counts, rebinning) is compared with ``NumpyEngine`` on ``pd.read_csv(path)`` /
``pd.read_parquet(path)`` and with ``DuckDBEngine`` on the same file (DuckDB reads no folders).
One Spark session serves the module; files are small and each test runs few Spark jobs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SPARK_STARTED, skip_without_spark

skip_without_spark("Spark engine tests")

from dipsy.domain import Column, Domain  # noqa: E402
from dipsy.engine import DuckDBEngine, Engine, NumpyEngine, engine_for  # noqa: E402
from dipsy.engine.spark_engine import SparkEngine, spark_session  # noqa: E402
from dipsy.errors import DataError, ReleaseError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CE, CE_DOMAIN = ROOT / "examples" / "ce" / "CEdata.csv", ROOT / "examples" / "ce" / "domain.yaml"
ADULT, ADULT_DOMAIN = ROOT / "examples" / "adult" / "priv.csv", ROOT / "examples" / "adult" / "domain.yaml"


@contextlib.contextmanager
def setting(spark, key: str, value: str):
    """The session's setting ``key`` is ``value`` inside the block."""
    old = spark.conf.get(key)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.set(key, old)


@pytest.fixture
def small_splits(spark):
    """Files split into many pieces (tasks), to check that row order is file order across them: 16 KiB
    each, so that a few thousand rows make several."""
    with setting(spark, "spark.sql.files.maxPartitionBytes", "16384"):
        yield


@pytest.fixture
def opened(spark):
    """Make Spark engines, closed at the end of the test."""
    made: list[SparkEngine] = []

    def make(*args, **kwargs) -> SparkEngine:
        made.append(SparkEngine(*args, **kwargs))
        return made[-1]

    yield make
    for engine in made:
        engine.close()


def part(path: Path, records: slice, folder: Path) -> Path:
    """The header and the records ``records`` (one line each) of the CSV file ``path``, as a file in ``folder``."""
    with open(path, encoding="utf-8") as f:
        header, *lines = f.readlines()
    out = folder / path.name
    out.write_text(header + "".join(lines[records]), encoding="utf-8")
    return out


def read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path) if path.name.endswith((".csv", ".csv.gz")) else pd.read_parquet(path)


def three(opened, path: Path, domain: Domain, on_invalid: str = "error") -> list[Engine]:
    """NumPy (pandas' reading), DuckDB (files only) and Spark engines over ``path``."""
    engines = [NumpyEngine(read(path), domain, on_invalid)]
    if path.is_file():
        engines.append(DuckDBEngine(path, domain, on_invalid))
    return [*engines, opened(path, domain, on_invalid)]


def outcome(engine: Engine, columns, form: str):
    try:
        return engine.contingency(columns, form=form)
    except DataError as e:
        return str(e)


def assert_agree(engines: list[Engine], queries=(), form: str = "sparse") -> None:
    first, *others = engines
    for engine in others:
        assert engine.report == first.report, type(engine).__name__
    for columns in queries:
        want = outcome(first, columns, form)
        for engine in others:
            got = outcome(engine, columns, form)
            if isinstance(want, str) or isinstance(got, str):
                assert got == want, (type(engine).__name__, columns)
            else:
                assert got.equals(want) and got.is_sparse == want.is_sparse, (type(engine).__name__, columns)


def assert_same_values(engines: list[Engine], names: list[str]) -> None:
    """values() in each engine's row order: equal once sorted alike (bits and dtypes)."""
    expected = None
    for engine in engines:
        values = engine.values(names)
        order = np.lexsort([values[n] for n in reversed(names)])
        values = {n: values[n][order] for n in names}
        if expected is None:
            expected = values
        for n in names:
            assert values[n].dtype == expected[n].dtype and np.array_equal(values[n], expected[n]), (type(engine).__name__, n)


def assert_same_value_counts(engines: list[Engine], columns) -> None:
    for name in columns:
        first, *others = [e.value_counts(name) for e in engines]
        for vc in others:
            assert vc.values == first.values and vc.counts.tolist() == first.counts.tolist(), name


def ce_invalid() -> Domain:
    """CE against narrower bounds and fewer races: rows outside, examples shown."""
    base = Domain.load(CE_DOMAIN)
    return Domain(
        (
            base["UrbanRural"],
            Column("Income", "numeric", lower=0, upper=200_000, bins=(0.0, 50_000.0, 100_000.0, 200_000.0)),
            Column("Race", "categorical", categories=(1, 2, 3, 4, 5)),
            Column("Expenditure", "numeric", lower=0, upper=50_000, bins=(0.0, 1000.0, 5000.3, 50_000.0), clip=True),
        )
    )


def adult_frame(rows: int = 3000, seed: int = 0) -> tuple[Domain, pd.DataFrame]:
    """Random rows against Adult's domain, with missing values, wrong types and values outside."""
    domain = Domain.load(ADULT_DOMAIN)
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {c.name: rng.integers(0, len(c.categories) + 1, rows) for c in domain.columns}
    )  # the last code is outside
    frame["age"] = frame["age"].astype(float).where(rng.random(rows) > 0.02)  # missing
    frame["workclass"] = frame["workclass"].astype(str).where(rng.random(rows) > 0.01, "x")  # text: wrong type
    frame["education"] = frame["education"].astype("float32") + (rng.random(rows) < 0.01) * np.float32(0.5)
    return domain, frame


# -- CE ---------------------------------------------------------------------------------------------


def _three(path: Path, domain_file: Path):
    """The three engines over one file, made once for the module; Spark's closed at the end."""
    domain = Domain.load(domain_file)
    engines = [NumpyEngine(read(path), domain), DuckDBEngine(path, domain), SparkEngine(path, domain)]
    yield engines
    engines[-1].close()


@pytest.fixture(scope="module")
def ce(spark):
    yield from _three(CE, CE_DOMAIN)


def test_ce_contingency_sparse(ce):
    assert ce[-1].report.ok and ce[-1].report.rows == 994
    assert_agree(ce, [None, ("Income", "Race"), ("Expenditure", "UrbanRural")], form="sparse")


def test_ce_contingency_dense(ce):
    assert_agree(ce, [("Race",), ("Income",), ("Race", "UrbanRural")], form="dense")
    assert ce[-1].contingency(["Race"]).dense().tolist() == [816, 109, 7, 39, 6, 17]


def test_ce_num_rows_and_values(ce):
    assert [e.num_rows() for e in ce] == [994] * 3
    assert_same_values(ce, ["Income", "Race", "Expenditure"])


def test_ce_value_counts(ce):
    assert_same_value_counts(ce, ["Income", "Race"])


def test_ce_invalid_rows_dropped_alike(opened):
    engines = three(opened, CE, ce_invalid(), "drop")
    report = engines[-1].report
    assert [(i.column, i.problem, i.rows) for i in report.issues] == [
        ("Income", "values outside the domain", 46),
        ("Race", "values outside the domain", 17),
    ]
    assert report.issues[1].examples == ("6",) and len(report.issues[0].examples) == 5
    assert_agree(engines, [None, ("Race", "Income"), ("Expenditure",)], form="dense")
    assert_same_values(engines, ["Income", "Expenditure"])
    assert len({e.num_rows() for e in engines}) == 1 and engines[-1].num_rows() == report.valid_rows


def test_ce_invalid_rows_raise_alike(opened):
    messages = []
    for engine in three(opened, CE, ce_invalid()):
        with pytest.raises(DataError) as err:
            engine.contingency(["Race"])
        messages.append(str(err.value))
    assert len(set(messages)) == 1 and "'Race': 17 rows" in messages[0] and "(e.g. 6)" in messages[0]


def test_rebinned_agrees(ce):
    domain = ce[0].domain
    other = Domain(
        tuple(
            dataclasses.replace(c, bins=(0.0, 20_000.0, 60_000.0, 1_000_000.0)) if c.name == "Income" else c
            for c in domain.columns
        )
    )
    rebinned = [e.rebinned(other) for e in ce]
    assert_agree(rebinned, [("Income",), ("Income", "Race")], form="dense")
    assert rebinned[-1].contingency(["Income"]).dense().sum() == 994
    rebinned[-1].close()


def test_missing_column_and_has_column(opened):
    domain = Domain((*Domain.load(CE_DOMAIN).columns, Column("Age", "integer", lower=0, upper=99)))
    engines = three(opened, CE, domain, "drop")
    assert_agree(engines, [("Race",)])
    assert engines[-1].report.missing_columns == ("Age",) and engines[-1].report.rows == 994
    spark = engines[-1]
    assert spark.has_column("Race") and not spark.has_column("Age") and not spark.has_column("race")
    with pytest.raises(DataError, match="no column 'Age'"):
        spark.value_counts("Age")


# -- Adult ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult(spark, tmp_path_factory):
    """Every eighth record of Adult (4,048 of 32,384; the file is sorted by sex), validated in Arrow
    batches of 1,000 records: one task gets five batches, as the whole file made four of Spark's
    default 10,000."""
    three = _three(part(ADULT, slice(None, None, 8), tmp_path_factory.mktemp("adult")), ADULT_DOMAIN)
    with setting(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "1000"):
        engines = next(three)
        assert engines[-1].report.ok  # the checked pass (the report, the cached codes) runs now
    yield engines
    next(three, None)  # closes the Spark engine


def test_adult_contingency(adult):
    assert adult[-1].report.ok and adult[-1].num_rows() == 4048
    assert_agree(adult, [("age", "sex"), ("race", "occupation", "education"), None], form="sparse")
    assert_agree(adult, [("hours-per-week",), ("sex", "race")], form="dense")


def test_adult_values_and_value_counts(adult):
    assert_same_values(adult, ["age", "race"])
    assert_same_value_counts(adult, ["age", "workclass"])


def test_adult_examples_in_file_order_across_splits(opened, small_splits, tmp_path):
    """Rows outside the domain in every split: the examples are the first ones of the file. Adult's
    first 8,000 records (128 KB) make eight splits of small_splits' size, as the whole file made of
    64 KiB ones: as many tasks, a quarter of the rows."""
    base = Domain.load(ADULT_DOMAIN)
    halve = lambda c: dataclasses.replace(c, categories=c.categories[: len(c.categories) // 2])  # noqa: E731
    narrow = Domain(tuple(halve(c) if c.name in ("age", "occupation") else c for c in base.columns))
    engines = three(opened, part(ADULT, slice(8000), tmp_path), narrow, "drop")
    assert engines[-1]._source().rdd.getNumPartitions() > 4
    report = engines[-1].report
    assert [i.column for i in report.issues] == ["age", "occupation"] and all(len(i.examples) == 5 for i in report.issues)
    assert_agree(engines, [("age", "occupation", "sex")])


# -- Parquet: a file, a partitioned folder ---------------------------------------------------------


def test_parquet_file_agrees(opened, tmp_path, small_splits):
    domain, frame = adult_frame()
    path = tmp_path / "adult.parquet"
    frame.to_parquet(path, row_group_size=400)  # several row groups (30 KB in all): several splits
    engines = three(opened, path, domain, "drop")
    report = engines[-1].report
    assert {i.problem for i in report.issues} == {"missing values", "values of the wrong type", "values outside the domain"}
    assert_agree(engines, [None, ("age", "workclass"), ("education",)], form="sparse")
    assert_agree(engines, [("sex", "race")], form="dense")
    assert_same_values(engines, ["age", "education"])
    assert_same_value_counts(engines, ["workclass", "education"])


def test_partitioned_folder_agrees(opened, tmp_path):
    domain, frame = adult_frame(seed=1)
    folder = tmp_path / "adult"
    frame.to_parquet(folder, partition_cols=["sex"])  # sex comes back as a categorical column, last
    engines = three(opened, folder, domain, "drop")
    assert len(engines) == 2 and engines[-1].report.issues
    assert_agree(engines, [None, ("sex", "race"), ("age",)])
    assert_same_values(engines, ["sex", "workclass"])
    assert_same_value_counts(engines, ["sex"])
    with pytest.raises(DataError) as err:
        NumpyEngine(read(folder), domain).contingency(["sex"])
    with pytest.raises(DataError) as spark_err:
        opened(folder, domain).contingency(["sex"])
    assert str(spark_err.value) == str(err.value)


# -- CSV that pandas reads in its own way ----------------------------------------------------------

AWKWARD = (  # each field twice: read against a text declaration (first) and a number one (second)
    "id,word,word_n,num,num_t,flag,flag_n,mixed,mixed_n\n"
    '1,"a, b","a, b",1,1,True,True,x,x\n'
    '2,"say ""hi""","say ""hi""", 1, 1,TRUE,TRUE,NA,NA\n'
    "3,,,1e3,1e3,false,false,,\n"
    "\n"
    "4,NA,NA,+2,+2,FALSE,FALSE,1,1\n"
    '5,"","",-0,-0,true,true,2.5,2.5\n'
    '6,null,null,0001,0001,,,"3","3"\n'
    "7,plain,plain,1.,1.,True,True, 4, 4\n"
    "  \n"
    "8, a , a ,2.50,2.50,False,False,N/A,N/A\n"
    "9,#N/A,#N/A,inf,inf,true,true,1e0,1e0\n"
)
AWKWARD_DOMAIN = Domain(
    (
        Column("id", "integer", lower=0, upper=7),
        Column("word", "categorical", categories=("a, b", 'say "hi"', "plain", "two\nlines")),
        Column("word_n", "numeric", lower=0, upper=1, bins=(0.0, 1.0)),
        Column("num", "numeric", lower=-1, upper=1000, bins=(-1.0, 1.0, 10.0, 1000.0)),
        Column("num_t", "categorical", categories=("1", "1000", "2", "0", "2.5")),
        Column("flag", "categorical", categories=("True", "False")),
        Column("flag_n", "integer", lower=0, upper=1),
        Column("mixed", "categorical", categories=(1, 2.5, 3, 4)),
        Column("mixed_n", "integer", lower=0, upper=3, clip=True),
    )
)
LINE_BREAK = '10,"two\nlines","two\nlines",3,3,True,True,4,4\n'


@pytest.mark.parametrize("layout", ["lines", "quoted line break", "crlf, quoted line break"])
def test_awkward_csv_read_as_pandas_reads_it(opened, tmp_path, layout):
    text = AWKWARD if layout == "lines" else AWKWARD + LINE_BREAK
    if layout.startswith("crlf"):
        text = text.replace("\n", "\r\n")
    path = tmp_path / "awkward.csv"
    path.write_bytes(text.encode())
    engines = three(opened, path, AWKWARD_DOMAIN, "drop")
    report = engines[-1].report
    assert report.rows == (9 if layout == "lines" else 10) and {i.column for i in report.issues} >= {
        "id",
        "word",
        "mixed",
        "num_t",
    }
    assert engines[-1]._multiline == (layout != "lines")
    assert_agree(engines, [None, ("word", "flag_n", "mixed_n")])
    assert_same_value_counts(engines, ["word", "num", "flag", "mixed"] if layout == "lines" else ["word", "mixed"])


def test_gzip_csv_agrees(opened, tmp_path):
    import gzip

    path = tmp_path / "awkward.csv.gz"
    path.write_bytes(gzip.compress((AWKWARD + LINE_BREAK).encode()))
    assert_agree(three(opened, path, AWKWARD_DOMAIN, "drop"), [("flag", "mixed")])


def test_long_rows_refused(opened, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("a,b\n1,2\n1,2,3\n")
    with pytest.raises(DataError, match="more fields than the header"):
        opened(path, Domain.from_sizes({"a": 2}), "drop").contingency(["a"])


# -- files, session, engine_for --------------------------------------------------------------------


def test_file_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        SparkEngine(tmp_path / "nope.csv", Domain.from_sizes({"a": 2}))
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(DataError, match="neither CSV nor Parquet"):
        SparkEngine(tmp_path / "data.xlsx", Domain.from_sizes({"a": 2}))
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="cannot read Parquet"):
        SparkEngine(tmp_path / "bad.parquet", Domain.from_sizes({"a": 2}))


def test_missing_pyspark_or_java_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "d.csv"
    path.write_text("a\n1\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    with pytest.raises(DataError, match="Java 17\\+ runtime"):
        SparkEngine(path, Domain.from_sizes({"a": 2}))
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark fails
    with pytest.raises(DataError, match=r"pip install 'dipsy\[spark\]'"):
        SparkEngine(path, Domain.from_sizes({"a": 2}))


def test_one_master_per_process(spark):
    assert spark_session() is spark
    with pytest.raises(DataError, match="already runs"):
        spark_session("local[1]")


@pytest.mark.parametrize("name", ["it's my [data]*.csv", "col:on{1}.parquet"])
def test_awkward_path(opened, tmp_path, name):
    """Spark reads paths as glob patterns and URIs: the engine reads this file, and only it."""
    frame = pd.read_csv(CE)
    for path, rows in ((tmp_path / name, frame), (tmp_path / name.replace("*", "1").replace(":", "_"), frame.head(10))):
        rows.to_csv(path, index=False) if name.endswith(".csv") else rows.to_parquet(path)
    domain = Domain.load(CE_DOMAIN)
    assert_agree(three(opened, tmp_path / name, domain), [("Race", "UrbanRural")])


def test_private_scratch_folder(spark, opened, tmp_path):
    from dipsy.engine.spark_engine import _SESSION

    folder = _SESSION["folder"]
    assert spark.conf.get("spark.local.dir") == str(folder) and spark.conf.get("spark.ui.enabled") == "false"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and (folder / ".dipsy-owner").exists()
    path = tmp_path / "q.csv"
    path.write_text('a\n"x\ny"\n1\n')
    engine = opened(path, Domain.from_sizes({"a": 2}), "drop")
    assert engine.contingency(["a"]).dense().tolist() == [0, 1]
    copy = engine._state["copy"]
    assert copy.parent == folder and copy.exists()
    engine.close()
    assert not copy.exists()


def test_codes_written_once_narrow_private_and_removed(opened, tmp_path):
    """The valid rows' codes are one Parquet file in a private folder of the session's, a byte per
    code where a column has at most 128 (two bytes up to 2¹⁵), whose tables are DuckDB's; it goes
    with close(), and at once when validation refuses the data."""
    from pyspark.sql.types import ByteType, ShortType

    from dipsy.engine.spark_engine import _SESSION

    rng = np.random.default_rng(3)
    path = tmp_path / "codes.parquet"
    pd.DataFrame({"a": rng.integers(0, 3, 500), "b": rng.integers(0, 1000, 500), "c": rng.integers(0, 5, 500)}).to_parquet(path)
    domain = Domain((Column("a", "categorical", categories=(0, 1)), *Domain.from_sizes({"b": 1000, "c": 5}).columns))
    engines = three(opened, path, domain, "drop")
    spark = engines[-1]
    assert_agree(engines, [("a", "b"), ("b", "c"), None], form="sparse")
    assert_same_values(engines, ["b", "c"])
    folder = spark._state["codes"]
    assert folder.parent == _SESSION["folder"] and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert len(list(folder.rglob("*.parquet"))) >= 1
    types = {f.name: f.dataType for f in spark._codes().schema.fields}
    assert (types["k0"], types["k1"], types["k2"]) == (ByteType(), ShortType(), ByteType())
    spark.contingency(["c"])
    assert spark._state["codes"] == folder  # the pass ran once: later tables read the same file
    spark.close()
    assert not folder.exists() and "checked" not in spark._state
    before = set(_SESSION["folder"].glob("codes-*"))  # other tests' engines may hold theirs
    refused = opened(path, domain)  # on_invalid="error": a's 2 is outside
    with pytest.raises(DataError, match="'a'"):
        refused.contingency(["a"])
    assert "codes" not in refused._state and set(_SESSION["folder"].glob("codes-*")) == before


@pytest.mark.parametrize("partition_by", [(), ("sex", "race")])
def test_write_parquet_round_trip(opened, tmp_path, partition_by):
    _, frame = adult_frame(rows=600, seed=2)
    frame = frame.dropna().astype({"sex": "int64", "race": "int64"})
    folder = tmp_path / "synthetic"
    engine = opened(CE, Domain.load(CE_DOMAIN))
    engine.write_parquet((frame.iloc[i : i + 300] for i in range(0, len(frame), 300)), folder, partition_by=partition_by)
    back = pd.read_parquet(folder)
    back = back.astype({c: frame[c].dtype for c in partition_by})[list(frame.columns)]
    key = list(frame.columns)
    pd.testing.assert_frame_equal(back.sort_values(key).reset_index(drop=True), frame.sort_values(key).reset_index(drop=True))
    with pytest.raises(ReleaseError, match="exists"):
        engine.write_parquet([frame], folder)


def test_engine_for_choices(opened, tmp_path):
    domain = Domain.load(CE_DOMAIN)
    frame = pd.read_csv(CE)
    assert type(engine_for(frame, domain)) is NumpyEngine and type(engine_for(frame, domain, engine="numpy")) is NumpyEngine
    assert type(engine_for(CE, domain)) is DuckDBEngine and type(engine_for(str(CE), domain, engine="duckdb")) is DuckDBEngine
    from_file = engine_for(CE, domain, engine="numpy")
    assert type(from_file) is NumpyEngine and from_file.contingency(["Race"]).equals(
        NumpyEngine(frame, domain).contingency(["Race"])
    )
    spark = engine_for(CE, domain, "drop", engine="spark")
    assert type(spark) is SparkEngine and spark.on_invalid == "drop"
    spark.close()
    for backend in ("duckdb", "spark"):
        with pytest.raises(DataError, match="reads files"):
            engine_for(frame, domain, engine=backend)
    with pytest.raises(DataError) as err:
        engine_for(CE, domain, engine="polars")
    assert all(name in str(err.value) for name in ("'numpy'", "'duckdb'", "'spark'"))
    with pytest.raises(DataError, match="does not exist"):
        engine_for(tmp_path / "nope.csv", domain, engine="numpy")


def test_import_dipsy_does_not_start_spark():
    code = "import sys, dipsy, dipsy.engine, dipsy.engine.spark_engine; assert 'pyspark' not in sys.modules, 'pyspark'"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_the_jvm_starts_without_forking_a_process_where_jax_runs(spark):
    """Once JAX has run, its threads run too; starting Spark must not run Python in a fork of that
    process (PySpark's preexec_fn did, and JAX's at-fork hook warned of a possible deadlock)."""
    import jax

    assert jax.devices() and spark.range(3).count() == 3  # JAX ran before the session started (the fixture)
    started = SPARK_STARTED
    forks = [m for m in started["warnings"] + started["unraisable"] if "fork" in m]
    assert not forks and not started["unraisable"], forks or started["unraisable"]


def test_declared_missing_states_agree(opened, tmp_path):
    """Declared missing values (tests/test_missing_values.py's survey file: empty cells, NA, -8/-9,
    '.a', a pooled state, a clipped column): Spark's workers run the NumPy codec, so they agree too."""
    from test_missing_values import QUERIES, SURVEY_CSV, assert_agree, survey_domain

    path = tmp_path / "survey.csv"
    path.write_text(SURVEY_CSV)
    domain = survey_domain()
    assert_agree(NumpyEngine(pd.read_csv(path), domain, "drop"), opened(path, domain, "drop"), QUERIES)


# -- Parquet of plain types: validated and coded in Spark SQL (no Python workers) -------------------


def plain_table(rows: int = 3000, seed: int = 0, clean: bool = False):
    """A Parquet table of every plain type the native pass codes (integers with nulls, int8/32,
    float64 with NaN, float32, text) against a domain of bins, clipping, numeric and text
    categories, missing states and a numeric column without bins; with values missing, of the wrong
    type and outside the domain, unless ``clean``. Nulls every 50th row (in every row group)."""
    import pyarrow as pa

    from dipsy.domain.missing import Missing

    rng = np.random.default_rng(seed)
    every = np.arange(rows) % 50 == 7
    odd = lambda p: rng.random(rows) < (0 if clean else p)  # noqa: E731
    words = [f"w{i:03d}" for i in range(40)]
    codes = [1, 3, 5, 8, 13, 21, 34, 55, 89, 144, 2.5]
    hours = rng.integers(0, 61, rows).astype(float)
    hours[odd(0.02)] = 2.5
    hours[rng.random(rows) < 0.03] = -8
    income = rng.exponential(200, rows)
    edge = rng.random(rows) < 0.05  # values on bin edges
    income[edge] = rng.choice([0.0, 10.0, 100.0, 500.0, 1000.0], edge.sum())
    spend = rng.normal(25, 20, rows).astype(np.float32)
    spend[edge] = rng.choice(np.linspace(0, 50, 41), edge.sum())
    income[odd(0.02)] = np.inf
    income[every & odd(1)] = np.nan
    word = np.array(rng.choice(words, rows), dtype=object)
    word[odd(0.02)] = "w999"
    word[rng.random(rows) < 0.02] = ".a"
    word[every & odd(1)] = None
    ratio = rng.choice([0.5, 1.0, 2.25, 1e20] + ([] if clean else [3.0, 0.1]), rows)
    table = pa.table(
        {
            "age": pa.array(np.where(odd(0.03), 95, rng.integers(0, 90, rows)), pa.int16(), mask=every),
            "code": pa.array(np.where(odd(0.03), 4, rng.choice(codes[:-1], rows)), pa.int32()),
            "hours": pa.array(hours, pa.float64(), mask=every),  # nulls: DuckDB casts a NaN in a state (a bug)
            "income": pa.array(np.minimum(income, 999.0) if clean else income, pa.float64()),
            "spend": pa.array(spend, pa.float32()),
            "word": pa.array(word, pa.string()),
            "flag": pa.array(rng.integers(0, 2 if clean else 3, rows), pa.int8()),
            "ratio": pa.array(ratio, pa.float64()),
            "amount": pa.array(np.where(rng.random(rows) < 0.05, -9.0, rng.random(rows) * 100 * (1 + odd(0.1))), pa.float64()),
            "share": pa.array(np.where(odd(0.02), 1.1, rng.random(rows)), pa.float32()),
            "level": pa.array(rng.integers(-3, 9, rows), pa.int8()),
            "grade": pa.array(rng.choice([0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 10.0] + ([] if clean else [3.0]), rows)),
            "rank": pa.array(np.where(odd(0.03), rng.choice([2.5, 5.0], rows), rng.integers(1, 5, rows)), pa.float64()),
        }
    )
    domain = Domain(
        (
            Column("age", "integer", lower=0, upper=89, missing=Missing(empty="skipped") if clean else None),
            Column("code", "categorical", categories=tuple(codes)),
            Column("hours", "integer", lower=0, upper=60, missing=Missing(empty="skipped", codes=((-8, "refused"),))),
            Column("income", "numeric", lower=0, upper=1000, bins=(0.0, 10.0, 100.0, 500.0, 1000.0)),
            Column("spend", "numeric", lower=0, upper=50, bins=tuple(float(e) for e in np.linspace(0, 50, 41)), clip=True),
            Column("word", "categorical", categories=tuple(words), missing=Missing(codes=((".a", "not asked"),))),
            Column("flag", "categorical", categories=("0", "1", "01")),
            Column("ratio", "categorical", categories=("0.5", "1", "2.25", "1e+20")),
            Column("amount", "numeric", lower=0, upper=100, missing=Missing(codes=((-9, "n/a"),))),
            Column("share", "numeric", lower=0, upper=1, bins=(0.0, 0.25, 0.5, 1.0)),
            Column("level", "integer", lower=0, upper=5, clip=True),
            Column("grade", "ordinal", categories=(0, 0.5, 1, 1.5, 2, 10)),
            Column("rank", "categorical", categories=(1, 2, 3, 4)),
        )
    )
    return domain, table


#: The columns of plain_table's domain that have cells (amount is numeric without bins).
ENCODABLE = ("age", "code", "hours", "income", "spend", "word", "flag", "ratio", "share", "level", "grade", "rank")


def python_path(engine: SparkEngine) -> SparkEngine:
    """The engine made to validate and code with Python workers (the codec itself), as it does
    data the native pass does not code."""
    engine._native = None
    return engine


def assert_same_records(engines: list[Engine], names: list[str]) -> None:
    """records() (numbers, states, codes) equal across engines once their rows are sorted alike."""
    expected = None
    for engine in engines:
        r = engine.records(names)
        arrays = [*r.numbers.values(), *r.states.values(), *r.codes.values()]
        rows = np.stack([np.asarray(a, float) for a in arrays], axis=1)
        rows = rows[np.lexsort(rows.T[::-1])]
        expected = rows if expected is None else expected
        assert np.array_equal(rows, expected, equal_nan=True), type(engine).__name__


def test_plain_parquet_coded_in_spark_as_the_codec_codes(opened, tmp_path, small_splits):
    import pyarrow.parquet as pq

    domain, table = plain_table()
    path = tmp_path / "plain.parquet"
    pq.write_table(table, path, row_group_size=500)  # several splits
    engines = [*three(opened, path, domain, "drop"), python_path(opened(path, domain, "drop"))]
    native = engines[2]
    assert native._native is not None and engines[3]._native is None
    report = native.report
    assert "checked" not in native._state  # validated without a pass of Python workers
    problems = {(i.column, i.problem) for i in report.issues}
    assert problems == {
        ("age", "missing values"),
        ("age", "values outside the domain"),
        ("code", "values outside the domain"),
        ("hours", "values of the wrong type"),
        ("income", "missing values"),
        ("income", "values outside the domain"),
        ("word", "missing values"),
        ("word", "values outside the domain"),
        ("flag", "values outside the domain"),
        ("ratio", "values outside the domain"),
        ("amount", "values outside the domain"),
        ("share", "values outside the domain"),
        ("grade", "values outside the domain"),
        ("rank", "values outside the domain"),
    }, problems
    assert [i.examples for i in report.issues if i.column in ("share", "rank")] == [("1.1",), ("2.5", "5.0")]
    assert next(i for i in report.issues if i.column == "age" and i.examples).examples == ("95.0",)  # nulls: floats
    assert_agree(
        engines,
        [
            ENCODABLE,
            ("age", "code"),
            ("hours", "word"),
            ("income", "spend"),
            ("flag", "ratio"),
            ("share", "level", "grade", "rank"),
        ],
        form="sparse",
    )
    assert_agree(engines, [("spend",), ("hours",)], form="dense")
    assert_same_values(engines, ["age", "code", "income", "spend", "word"])
    assert_same_records(engines, ["amount", "hours", "spend"])
    assert native._state["codes"].parent.name.startswith("dipsy-spark-")  # valid rows' codes: the private folder


def test_plain_parquet_without_invalid_rows_is_counted_from_the_data(opened, tmp_path):
    """No row to leave out: nothing is written, each table is coded from the data (Spark's own
    groupBy of the raw columns where they have few values)."""
    import pyarrow.parquet as pq

    domain, table = plain_table(clean=True, seed=4)
    path = tmp_path / "clean.parquet"
    pq.write_table(table, path, row_group_size=1000)
    engines = [*three(opened, path, domain), python_path(opened(path, domain))]
    native = engines[2]
    assert native.report.ok and native.report.rows == 3000
    assert_agree(
        engines,
        [
            ENCODABLE,
            ("age", "hours"),
            ("code", "word", "flag"),
            ("income", "ratio"),
            ("spend",),
            ("level", "grade", "rank", "share"),
        ],
    )
    assert_same_values(engines, ["code", "income", "spend"])
    assert_same_records(engines, ["age", "amount", "hours"])
    assert "codes" not in native._state and "checked" not in native._state
    coarser = Domain(
        tuple(dataclasses.replace(c, bins=(0.0, 500.0, 1000.0)) if c.name == "income" else c for c in domain.columns)
    )
    rebinned = [e.rebinned(coarser) for e in engines]
    assert_agree(rebinned, [("income", "age")])
    for e in rebinned[2:]:
        e.close()


def test_native_examples_in_file_order_across_files(opened, tmp_path, small_splits):
    """A folder of files with values outside the domain in each: the examples are pandas' first
    ones (its order of the files, then of the rows), as the Python workers find them."""
    import pyarrow.parquet as pq

    domain, table = plain_table(rows=1500, seed=2)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, name in enumerate(["b 1.parquet", "a+2.parquet", "c.parquet"]):  # file order is not write order
        pq.write_table(table.slice(500 * i, 500), folder / name, row_group_size=100)
    engines = [*three(opened, folder, domain, "drop"), python_path(opened(folder, domain, "drop"))]
    assert engines[1]._native is not None
    assert_agree(engines, [("word", "code")])
    shown = [i.examples for i in engines[1].report.issues if i.problem == "values outside the domain"]
    assert any(len(e) > 1 for e in shown)


def test_native_pass_falls_back_for_what_it_does_not_code(opened, tmp_path):
    """Text read as numbers, booleans, dictionaries and CSV go to the Python workers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "mixed.parquet"
    pq.write_table(
        pa.table({"n": pa.array(["1", "2", "x"]), "b": pa.array([True, False, True]), "t": pa.array(["a", "b", "c"])}), path
    )
    assert opened(path, Domain((Column("t", "categorical", categories=("a", "b")),)))._native == {"t": "str"}
    assert opened(path, Domain.from_sizes({"n": 3}))._native is None
    assert opened(path, Domain((Column("b", "categorical", categories=("True", "False")),)))._native is None
    assert opened(CE, Domain.load(CE_DOMAIN))._native is None


def test_native_nan_in_an_empty_state(opened, tmp_path):
    """NaN (stored as NaN, not null) and null in a float column of whole numbers that declares an
    empty state: valid, in that state, in every engine. Also a file with NaN and no null, whose
    Parquet statistics (min and max leave NaN out) once made DuckDB fold ``isnan`` to false."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dipsy.domain.missing import Missing

    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"h": pa.array([1.0, np.nan, -8.0, 2.5, 60.0, 61.0, None])}), path)
    domain = Domain((Column("h", "integer", lower=0, upper=60, missing=Missing(empty="skipped", codes=((-8, "refused"),))),))
    engines = [NumpyEngine(read(path), domain, "drop"), opened(path, domain, "drop"), python_path(opened(path, domain, "drop"))]
    engines.append(DuckDBEngine(path, domain, "drop"))
    assert engines[1]._native == {"h": "float"} and engines[1].report.invalid_rows == 2
    assert_agree(engines, [("h",)], form="dense")
    assert_same_records(engines, ["h"])
    no_null = tmp_path / "nan-no-null.parquet"
    pq.write_table(pa.table({"h": pa.array([1.0, np.nan, -8.0, 60.0])}), no_null)
    duck = DuckDBEngine(no_null, domain, "drop")
    assert duck.report.invalid_rows == 0 and duck.records(["h"]).codes["h"].tolist() == [1, 61, 62, 60]
    assert_agree([NumpyEngine(read(no_null), domain, "drop"), duck], [("h",)], form="dense")
