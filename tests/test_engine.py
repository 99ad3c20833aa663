"""The DuckDB engine (files, out of core) and the NumPy engine (DataFrames) agree bit for bit.

Design rule 6: on the same data both engines give the same validation report (rows, invalid
rows, issues in the same order with the same examples) and the same contingency tables. Each
file is compared with ``NumpyEngine(pd.read_csv(path))`` or with the frame it was written from.
"""

from __future__ import annotations

import dataclasses
import gzip
import itertools
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dipsy.domain import Column, Domain
from dipsy.engine import Engine, NumpyEngine
from dipsy.engine.duckdb_engine import LOOKUP_FROM, NUMBER_RE, PANDAS_NA, SEARCH_FROM, DuckDBEngine
from dipsy.errors import DataError

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
ADULT = DATA / "adult.csv"
ADULT_DOMAIN = DATA / "adult-domain.json"

EXPENDITURE_EDGES = (0.0, 0.1, 250.5, 1000.0, 2500.25, 5000.3, 7500.0, 10000.0, 20000.0, 100000.0)


def ce_domain(
    income_upper: float = 1_000_000, expenditure_edges: tuple[float, ...] = EXPENDITURE_EDGES, races: int = 6
) -> Domain:
    return Domain(
        (
            Column("UrbanRural", "categorical", categories=(1, 2)),
            Column(
                "Income", "numeric", lower=0, upper=income_upper, bins=tuple(float(e) for e in np.linspace(0, income_upper, 21))
            ),
            Column("Race", "categorical", categories=tuple(range(1, races + 1))),
            Column("Expenditure", "numeric", lower=expenditure_edges[0], upper=expenditure_edges[-1], bins=expenditure_edges),
        ),
        name="ce",
    )


def subsets(names: tuple[str, ...], max_size: int = 3) -> list[tuple[str, ...]]:
    return [s for k in range(1, max_size + 1) for s in itertools.combinations(names, k)]


def outcome(engine: Engine, columns, form: str = "auto"):
    """The table, or the message of the DataError the query raised."""
    try:
        return engine.contingency(columns, form=form)
    except DataError as e:
        return str(e)


def assert_agree(a: Engine, b: Engine, queries, forms=("sparse",)) -> None:
    assert a.report == b.report
    for columns in queries:
        for form in forms:
            ta, tb = outcome(a, columns, form), outcome(b, columns, form)
            if isinstance(ta, str) or isinstance(tb, str):
                assert ta == tb, columns
            else:
                assert ta.equals(tb), columns
                assert ta.is_sparse == tb.is_sparse


# -- CE -------------------------------------------------------------------------------------------


def test_ce_csv_agrees():
    domain = ce_domain()
    a = NumpyEngine(pd.read_csv(CE_DATA), domain)
    b = DuckDBEngine(CE_DATA, domain)
    assert b.report.ok and b.report.rows == 994
    assert_agree(a, b, [None, *subsets(domain.names, 3)], forms=("sparse", "dense"))
    assert b.num_rows() == a.num_rows() == 994
    assert b.contingency(["Race"]).dense().tolist() == [816, 109, 7, 39, 6, 17]


@pytest.mark.parametrize("suffix", [".csv.gz", ".parquet", ".pq"])
def test_ce_other_formats_agree(tmp_path, suffix):
    frame = pd.read_csv(CE_DATA)
    path = tmp_path / f"ce{suffix}"
    if suffix == ".csv.gz":
        with open(CE_DATA, "rb") as src, gzip.open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        frame.to_parquet(path, index=False)
    domain = ce_domain()
    assert_agree(NumpyEngine(frame, domain), DuckDBEngine(path, domain), [None, *subsets(domain.names, 2)])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_ce_invalid_rows_dropped_alike(tmp_path, fmt):
    frame = pd.read_csv(CE_DATA)
    path = CE_DATA
    if fmt == "parquet":
        path = tmp_path / "ce.parquet"
        frame.to_parquet(path)
    domain = ce_domain(income_upper=200_000, expenditure_edges=(0.0, 0.1, 1000.0, 5000.3, 50_000.0), races=5)
    a, b = NumpyEngine(frame, domain, on_invalid="drop"), DuckDBEngine(path, domain, on_invalid="drop")
    report = b.report
    assert [(i.column, i.rows) for i in report.issues] == [("Income", 46), ("Race", 17), ("Expenditure", 11)]
    assert 0 < report.invalid_rows < report.rows
    assert_agree(a, b, [None, *subsets(domain.names, 2)], forms=("sparse", "dense"))
    assert b.num_rows() == report.valid_rows == b.contingency().total


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_invalid_data_raises_naming_column_and_rows(tmp_path, fmt):
    path = CE_DATA
    if fmt == "parquet":
        path = tmp_path / "ce.parquet"
        pd.read_csv(CE_DATA).to_parquet(path)
    domain = ce_domain(races=5)
    engine = DuckDBEngine(path, domain, on_invalid="error")
    with pytest.raises(DataError) as err:
        engine.contingency(["Race"])
    message = str(err.value)
    assert "'Race'" in message and "17 rows" in message and "(e.g. 6)" in message
    with pytest.raises(DataError) as numpy_err:
        NumpyEngine(pd.read_csv(CE_DATA), domain).contingency(["Race"])
    assert str(numpy_err.value) == message


def test_missing_column_reported_alike(tmp_path):
    domain = Domain((*ce_domain().columns, Column("Age", "integer", lower=0, upper=99)))
    a, b = NumpyEngine(pd.read_csv(CE_DATA), domain, "drop"), DuckDBEngine(CE_DATA, domain, "drop")
    assert a.report == b.report
    assert b.report.missing_columns == ("Age",) and b.report.rows == 994
    with pytest.raises(DataError, match="'Age'"):
        b.contingency(["Race"])


# -- Adult ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult():
    domain = Domain.load(ADULT_DOMAIN)
    return NumpyEngine(pd.read_csv(ADULT), domain), DuckDBEngine(ADULT, domain)


def test_adult_one_way_marginals(adult):
    a, b = adult
    assert b.report.ok and b.report.rows == 48842
    assert_agree(a, b, [(n,) for n in b.domain.names], forms=("sparse", "dense"))


@pytest.mark.parametrize(
    "columns",
    [
        ("age", "sex"),
        ("sex", "age"),
        ("income>50K", "race", "age"),
        ("income>50K", "education-num"),
        ("native-country", "capital-gain"),
        ("hours-per-week", "fnlwgt"),
        ("age", "sex", "income>50K"),
        ("race", "marital-status", "occupation"),
        ("capital-loss", "capital-gain", "native-country"),
    ],
)
def test_adult_marginals(adult, columns):
    assert_agree(*adult, [columns], forms=("sparse", "dense"))


def test_adult_full_table_sparse(adult):
    a, b = adult
    assert b.domain.cells() > 2**59  # flat indices need all 64 bits of int64
    ta, tb = a.contingency(form="sparse"), b.contingency(form="sparse")
    assert ta.equals(tb) and tb.total == 48842


def test_dense_and_sparse_forms_agree(adult):
    a, b = adult
    for engine in (a, b):
        dense = engine.contingency(["age", "race"], form="dense")
        sparse = engine.contingency(["age", "race"], form="sparse")
        assert not dense.is_sparse and sparse.is_sparse
        assert dense.equals(sparse)
        assert np.array_equal(dense.dense(), sparse.dense())
        cells, counts = sparse.sparse()
        assert np.all(np.diff(cells) > 0) and cells.dtype == np.int64 and counts.dtype == np.int64


# -- file errors ----------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    path = tmp_path / "nope.csv"
    with pytest.raises(DataError) as err:
        DuckDBEngine(path, ce_domain())
    assert "nope.csv" in err.value.problem and "does not exist" in err.value.problem and err.value.fix


def test_unsupported_extension(tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_text("x")
    with pytest.raises(DataError) as err:
        DuckDBEngine(path, ce_domain())
    assert "data.xlsx" in err.value.problem and ".parquet" in err.value.fix


@pytest.mark.parametrize(
    "name, content",
    [
        ("bad.parquet", b"not a parquet file at all"),
        ("bad.csv", b'a,b\n"unterminated,1\n2,3\n'),
        ("late.csv", b"a,b\n" + b"1,2\n" * 50_000 + b'"unterminated,1\n2,3\n'),
        ("newline.csv", b'a,b\n"x\ny",1\n2,3\n"unterminated,1\n2,3\n'),
        ("wide.csv", b"a,b\n1,2,3\n"),
        ("empty.csv", b""),
        ("bad.csv.gz", b"not gzip"),
        ("latin.csv", "a\ncaf\u00e9\n".encode("latin-1")),
    ],
)
def test_unreadable_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    domain = Domain.from_sizes({"a": 2})
    with pytest.raises(DataError) as err:
        DuckDBEngine(path, domain, on_invalid="drop").contingency(["a"])
    assert name in err.value.problem and "\n" not in err.value.problem and err.value.fix


def test_pandas_missing_markers_unchanged():
    from pandas._libs.parsers import STR_NA_VALUES

    assert set(PANDAS_NA) == set(STR_NA_VALUES)


# -- CSV as pandas reads it -----------------------------------------------------------------------

CSV_CASES = {
    "blank lines": "a,b\n1,2\n\n  \n\t\n3,x\n\n",
    "blanks or empty fields": "a,b\n ,\n  \n1,2\n,\n\t,\n",
    "one column, blank lines": "a\n1\n\n \n3\n\n",
    "one column, quoted empty": 'a\n1\n""\nNA\n3\n',
    "leading blank lines": "\n \na,b\n1,2\n",
    "markers": "a,b\nNA,1\nnull,None\n#N/A,-nan\nn/a,<NA>\n",
    "short rows": "a,b\n1\n2,3\n",
    "crlf": "a,b\r\n1,2\r\n2,3\r\n",
    "quoted newline": 'a,b\n"x\ny",1\n2,3\n',
    "quoted newline, short row": 'a,b\n"x\ny",1\n2\n1,3\n',
    "bom": "\ufeffa,b\n1,2\n",
    "duplicate names out of scope": "a,c,c\n1,2,3\n0,5,1\n",
    "header blanks": " a ,b\n1,2\n",
    "empty header name": "a,,b\n1,2,3\n",
    "no rows": "a,b\n",
    "numbers": "a,b\n 1,+1\n1e0,0001\n1.,-0\n.5,inf\n1_0,Infinity\n0x1, inf\nnan,NAN\n",
    "booleans": "a,b\nTrue,true\nFALSE,\n",
    "big integers": "a,b\n9223372036854775808,1\n99999999999999999999,-0\n",
}


@pytest.mark.parametrize("case", CSV_CASES)
@pytest.mark.parametrize(
    "columns",
    [
        (Column("a", "integer", lower=0, upper=1), Column("b", "integer", lower=0, upper=3)),
        (
            Column("a", "categorical", categories=("1", "x", "True", "0.5", "10")),
            Column("b", "categorical", categories=("1", "2", "3", "True", "0")),
        ),
        (Column("a", "categorical", categories=(1, 0.5, 3)), Column("b", "numeric", lower=-1, upper=3, bins=(-1, 0.5, 1, 3))),
    ],
    ids=["integer", "text", "number"],
)
def test_csv_read_as_pandas_reads_it(tmp_path, case, columns):
    path = tmp_path / "d.csv"
    path.write_bytes(CSV_CASES[case].encode("utf-8"))
    frame = pd.read_csv(path)
    domain = Domain(tuple(c for c in columns if c.name in frame.columns))
    a, b = NumpyEngine(frame, domain, "drop"), DuckDBEngine(path, domain, "drop")
    assert_agree(a, b, [None, *subsets(domain.names, 1)])


def test_parquet_typed_columns(tmp_path):
    frame = pd.DataFrame(
        {
            "f32": np.array([0.1, 2.0, np.nan, 0.5, 7.25], dtype="float32"),
            "nullable": pd.array([1, None, 2, 7, 0], dtype="Int64"),
            "flag": [True, None, False, True, True],
            "text": ["a", None, "b", "zz", "a"],
            "small": np.array([1, 2, 3, 9, 0], dtype="int8"),
        }
    )
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    read = pd.read_parquet(path)
    domain = Domain(
        (
            Column("f32", "categorical", categories=("0.1", "2", "0.5")),
            Column("nullable", "integer", lower=0, upper=2),
            Column("flag", "categorical", categories=("True", "False")),
            Column("text", "categorical", categories=("a", "b")),
            Column("small", "ordinal", categories=(0, 1, 2, 3)),
        )
    )
    a, b = NumpyEngine(read, domain, "drop"), DuckDBEngine(path, domain, "drop")
    assert not b.report.ok
    assert_agree(a, b, [None, *subsets(domain.names, 2)])
    assert_agree(NumpyEngine(frame, domain, "drop"), b, [None])


def test_parquet_without_pandas_metadata(tmp_path):
    """pandas reads such a file's integers with nulls as floats, decimals and dates as objects."""
    import datetime
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "i": pa.array([1, None, 9, 3, 2], pa.int32()),
            "d": pa.array(
                [decimal.Decimal(x) if x else None for x in ("1.50", "2.25", None, "7.00", "1.50")], pa.decimal128(5, 2)
            ),
            "day": pa.array(
                [
                    datetime.date(2020, 1, 1),
                    datetime.date(2021, 6, 30),
                    None,
                    datetime.date(2020, 1, 1),
                    datetime.date(2020, 1, 1),
                ]
            ),
        }
    )
    path = tmp_path / "no-meta.pq"
    pq.write_table(table, path)
    domain = Domain(
        (
            Column("i", "integer", lower=0, upper=5),
            Column("d", "categorical", categories=("1.50", "2.25")),
            Column("day", "categorical", categories=("2020-01-01",)),
        )
    )
    b = DuckDBEngine(path, domain, "drop")
    assert_agree(NumpyEngine(pd.read_parquet(path), domain, "drop"), b, [None, ("i",), ("d",)])
    assert [i.examples for i in b.report.issues if i.examples] == [("9.0",), ("7.00",), ("2021-06-30",)]
    numbers = Domain((Column("d", "numeric", lower=0, upper=5, bins=(0, 1.5, 5)),))
    assert_agree(NumpyEngine(pd.read_parquet(path), numbers, "drop"), DuckDBEngine(path, numbers, "drop"), [None])


@pytest.mark.parametrize("name", ["it's my data.csv", 'quote"d.parquet'])
def test_awkward_path(tmp_path, name):
    path = tmp_path / name
    frame = pd.read_csv(CE_DATA)
    frame.to_csv(path, index=False) if name.endswith(".csv") else frame.to_parquet(path)
    assert_agree(NumpyEngine(frame, ce_domain()), DuckDBEngine(path, ce_domain()), [("Race", "UrbanRural")])


# -- generated data -------------------------------------------------------------------------------

NAMES = ["a", "b c", 'q"x', "income>50K", "A", "x,y", "é"]
JUNK = [
    None,
    np.nan,
    "",
    " ",
    "\t",
    "abc",
    "x\ny",
    "NA",
    "null",
    "True",
    "TRUE",
    "False",
    "1_0",
    "nan",
    "NAN",
    "inf",
    "-inf",
    "Infinity",
    " inf",
    "1e400",
    "0x1",
    " 2",
    "+1",
    "1e1",
    "03",
    "2.0",
    "-0",
    -0.0,
    1e-07,
    123456789.125,
]
TEXTS = ["a", "b", "c d", "x,y", 'q"t', " lead", "1", "2.5", "True", "é", "0", "10", "1e-07", "inf", "-1"]


@st.composite
def column_with_values(draw, name: str):
    kind = draw(st.sampled_from(["text", "number", "boolean", "integer", "integer bins", "numeric bins", "numeric"]))
    if kind == "boolean":
        column = draw(
            st.sampled_from(
                [Column(name, "categorical", categories=("True", "False")), Column(name, "integer", lower=0, upper=1)]
            )
        )
        pool = [True, False]
    elif kind == "text":
        cats = tuple(draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=4, unique=True)))
        column = Column(name, "categorical", categories=cats)
        pool = [*cats, 1, 1.0, 2.5, 10.0, 0, True, "zz", " a", "A"]
    elif kind == "number":
        cats = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 0, -1, 0.5, 2.25, 10]), min_size=1, max_size=4, unique=True)))
        column = Column(name, draw(st.sampled_from(["categorical", "ordinal"])), categories=cats)
        pool = [*cats, *(str(c) for c in cats), *(float(c) for c in cats), 4, 7.5, "x"]
    elif kind == "integer":
        lower = draw(st.integers(-3, 0))
        upper = lower + draw(st.integers(1, 6))
        column = Column(name, "integer", lower=lower, upper=upper)
        pool = [*range(lower - 1, upper + 2), lower + 0.5, float(upper), str(upper), 1e20]
    elif kind == "integer bins":
        bins = draw(st.sampled_from([(0, 5, 10, 20), (0, 2.5, 7, 20), (0, 10, 20)]))
        column = Column(name, "integer", lower=0, upper=20, bins=tuple(float(e) for e in bins))
        pool = [-1, 0, 2, 2.5, 3, 5, 7, 10, 19, 20, 21, 5.0, "7"]
    elif kind == "numeric bins":
        bins = draw(st.sampled_from([(-1.5, 0.1, 0.3, 2.0, 10.0), tuple(np.linspace(-1.5, 10, 7))]))
        column = Column(name, "numeric", lower=-1.5, upper=10, bins=tuple(float(e) for e in bins))
        pool = [*bins, 0.30000000000000004, 0.1 + 1e-17, 1e-05, -2, 10.5, 3, "0.1", 1.25, 9.999]
    else:
        column = Column(name, "numeric", lower=0, upper=1)
        pool = [0, 0.5, 1, 2, -0.25]
    if not column.is_categorical and draw(st.booleans()):  # top/bottom-coding: values outside are set to the bounds
        column = dataclasses.replace(column, clip=True)
    if kind not in ("text", "boolean") and draw(st.booleans()):
        pool.extend(draw(st.lists(st.floats(-3, 12) | st.floats(), min_size=1, max_size=3)))
    values = st.sampled_from(pool) if draw(st.booleans()) else st.one_of(st.sampled_from(pool), st.sampled_from(JUNK))
    return column, values


@st.composite
def datasets(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    rows = draw(st.integers(0, 30))
    columns, data = [], {}
    for name in names:
        column, values = draw(column_with_values(name))
        columns.append(column)
        data[name] = draw(st.lists(values, min_size=rows, max_size=rows))
    if draw(st.booleans()):  # a column of the file that is not in the domain
        data["extra"] = draw(st.lists(st.sampled_from([1, "u", None]), min_size=rows, max_size=rows))
    frame = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in data.items()})
    return Domain(tuple(columns)), frame


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), on_invalid=st.sampled_from(["drop", "error"]), gz=st.booleans(), float32=st.booleans())
def test_generated_data_agree(data, on_invalid, gz, float32):
    domain, frame = data
    encodable = tuple(c.name for c in domain.columns if c.encodable)
    queries = [encodable, *subsets(encodable, 1)] if encodable else []
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / ("d.csv.gz" if gz else "d.csv")
        frame.to_csv(csv_path, index=False)
        read = pd.read_csv(csv_path)
        duck = DuckDBEngine(csv_path, domain, on_invalid)
        assert_agree(NumpyEngine(read, domain, on_invalid), duck, queries)
        duck.close()

        if float32:  # Parquet keeps the frame's types: narrow its floats
            with np.errstate(over="ignore"):
                read = read.astype({c: "float32" for c in read.columns if read[c].dtype == "float64"})
        pq_path = Path(tmp) / "d.parquet"
        read.to_parquet(pq_path, index=False)
        duck = DuckDBEngine(pq_path, domain, on_invalid)
        assert_agree(NumpyEngine(read, domain, on_invalid), duck, queries)
        duck.close()


# Text that is, or almost is, a number; \v and \f are left out (pandas reads '1e\v1' one way or
# the other depending on the rest of the column).
NUMBERISH = st.text(alphabet="0123456789.eE+-_ \tiInNfFaxX\xa0", min_size=1, max_size=7)
INTLIKE = st.from_regex(r"[ \t]?[+-]?0{0,2}[0-9]{1,3}[ \t]?", fullmatch=True)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(NUMBERISH | INTLIKE, min_size=1, max_size=20) | st.lists(INTLIKE, min_size=1, max_size=8),
    anchor=st.sampled_from([None, "1.5", "x", ""]),
)
def test_number_syntax_as_pandas_reads_it(values, anchor):
    """Which text is a number, what number, and how a number column reads as text."""
    if anchor is not None:
        values = [*values, anchor]
    domain = Domain(
        (
            Column("v", "numeric", lower=-1e300, upper=1e300, bins=(-1e300, -1.0, 0.0, 0.5, 1.0, 10.0, 100.0, 1e300)),
            Column("t", "categorical", categories=("1", "10", "0.5", "inf", "-1", "0", "5", "12")),
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "n.csv"
        pd.DataFrame({"v": values, "t": values}).to_csv(path, index=False)
        duck = DuckDBEngine(path, domain, "drop")
        assert_agree(NumpyEngine(pd.read_csv(path), domain, "drop"), duck, [("v",), ("t",), ("v", "t")])
        duck.close()


@settings(max_examples=50, deadline=None)
@given(values=st.lists(NUMBERISH | INTLIKE, min_size=1, max_size=30))
def test_number_pattern_is_pandas_syntax(values):
    """NUMBER_RE, which documents the rule the SQL applies, says what pd.to_numeric says."""
    parsed = pd.to_numeric(pd.Series([*values, "x"], dtype="str"), errors="coerce").to_numpy()[:-1]
    for text, number in zip(values, parsed):
        assert (re.fullmatch(NUMBER_RE, text) is not None) == (not np.isnan(number)), text


# -- long category lists and many bins (lookup tables, binary search) -----------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_many_categories_and_bins_agree(tmp_path, suffix):
    """Past LOOKUP_FROM categories and SEARCH_FROM bins the SQL changes form, never the codes."""
    rng = np.random.default_rng(5)
    # Several times past both thresholds, and past 256 codes (two-byte codes) in the categorical
    # columns; not thousands of bins, whose binary search costs DuckDB time growing with the edges.
    k, n = 300, 6000
    edges = np.unique(np.r_[0.0, np.sort(rng.random(100)), 1.0])
    domain = Domain(
        (
            Column("text", "categorical", categories=tuple(f"c{i}" for i in range(k))),
            Column("number", "ordinal", categories=tuple(i / 2 for i in range(k))),
            Column("float_text", "categorical", categories=tuple(str(i / 4) if i % 4 else str(i // 4) for i in range(k))),
            Column("x", "numeric", lower=0, upper=1, bins=tuple(edges)),
            Column("g", "integer", lower=-5, upper=100_000, bins=tuple(np.linspace(-5, 100_000, 101))),
        )
    )
    assert all(len(domain[c].categories) > 4 * LOOKUP_FROM for c in ("text", "number", "float_text"))
    assert all(len(domain[c].bins) - 2 > 2 * SEARCH_FROM for c in ("x", "g"))
    frame = pd.DataFrame(
        {
            "text": rng.choice([f"c{i}" for i in range(k + 40)] + ["", "NA"], n),
            "number": rng.integers(-3, 2 * k + 3, n) / 2,
            "float_text": rng.integers(-2, k + 5, n) / 4,
            "x": np.r_[rng.random(n - 6), edges[[0, 5, -1]], [1.5, -0.1, np.nan]],
            "g": rng.integers(-10, 100_010, n),
        }
    )
    path = tmp_path / f"d{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path, index=False)
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    duck = DuckDBEngine(path, domain, "drop")
    assert_agree(NumpyEngine(back, domain, "drop"), duck, [(c,) for c in domain.names] + [("text", "x"), ("number", "g")])
    duck.close()


@pytest.mark.parametrize("gz", [False, True])
def test_mixed_line_ends_read_as_pandas_reads_them(tmp_path, gz):
    """CRLF, LF and CR line ends in one file: pandas reads them, and so does the engine (from a
    private copy with one kind of line end); a line break inside quotes is kept as it is."""
    text = b'a,b\r\n1,x\n2,"y"\r\n3,z\n4,"q\r\nr"\n5,\r6,x\r\n0,"y\nx"'
    path = tmp_path / ("m.csv.gz" if gz else "m.csv")
    path.write_bytes(gzip.compress(text) if gz else text)
    domain = Domain(
        (Column("a", "integer", lower=0, upper=9), Column("b", "categorical", categories=("x", "y", "z", "q\r\nr", "y\nx")))
    )
    duck = DuckDBEngine(path, domain, "drop")
    assert_agree(NumpyEngine(pd.read_csv(path), domain, "drop"), duck, [None, ("a",), ("b",)])
    assert duck.report.rows == 7 and duck.report.invalid_rows == 1
    spill = duck._spill
    duck.close()
    assert not spill.exists()


def test_a_repeated_column_is_refused_by_both_engines(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,a,b\n1,0,1\n0,1,1\n")
    domain = Domain.from_sizes({"a": 2, "b": 2})
    with pytest.raises(DataError, match="names the column 'a' more than once"):
        DuckDBEngine(path, domain)
    assert DuckDBEngine(path, domain.project(["b"])).contingency().dense().tolist() == [0, 2]  # not in scope: fine
    with pytest.raises(DataError, match="'a' more than once"):
        NumpyEngine(pd.DataFrame([[1, 0, 1]], columns=["a", "a", "b"]), domain)


# -- clipping --------------------------------------------------------------------------------------

CLIPPED = Domain(
    (
        Column("w", "numeric", lower=0, upper=20000, bins=(0.0, 1000.0, 5000.0, 20000.0), clip=True),
        Column("a", "integer", lower=18, upper=90, clip=True),
        Column("b", "integer", lower=0, upper=100, bins=tuple(float(e) for e in range(0, 101, 2)), clip=True),  # searched bins
    )
)
CLIPPED_FRAME = pd.DataFrame(
    {
        "w": [-5, 0, 999.5, 25000, np.inf, 20000, 1e300, 7],
        "a": [10, 18, 95, 50, 90, 17, 30, 2.5],
        "b": [-1, 0, 101, 57, 100, 3, 1e20, 4],
    }
)
# The last row is invalid (2.5 is no integer: clipping never makes a wrong type valid).
CLIPPED_VALUES = {
    "w": [0.0, 0.0, 999.5, 20000.0, 20000.0, 20000.0, 20000.0],
    "a": [18.0, 18.0, 90.0, 50.0, 90.0, 18.0, 30.0],
    "b": [0.0, 0.0, 100.0, 57.0, 100.0, 3.0, 100.0],
}


def assert_clipped(engine: Engine) -> None:
    report = engine.report
    assert (report.rows, report.invalid_rows) == (8, 1)
    assert [(i.column, i.problem) for i in report.issues] == [("a", "values of the wrong type")]
    assert engine.contingency(["w"]).dense().tolist() == [3, 0, 4]
    assert engine.contingency(["a"]).dense()[[0, 12, 32, 72]].tolist() == [3, 1, 1, 2]
    assert engine.contingency(["b"]).dense()[[0, 1, 28, 49]].tolist() == [2, 1, 1, 3]
    values = engine.values(["w", "a", "b"])
    order = np.lexsort((values["b"], values["a"], values["w"]))
    expected = pd.DataFrame(CLIPPED_VALUES).sort_values(["w", "a", "b"])
    for name in ("w", "a", "b"):
        assert values[name][order].tolist() == expected[name].tolist()


def test_numpy_engine_clips_to_the_bounds():
    assert_clipped(NumpyEngine(CLIPPED_FRAME, CLIPPED, "drop"))


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_duckdb_engine_clips_to_the_bounds(tmp_path, suffix):
    path = tmp_path / f"d{suffix}"
    CLIPPED_FRAME.to_csv(path, index=False) if suffix == ".csv" else CLIPPED_FRAME.to_parquet(path, index=False)
    duck = DuckDBEngine(path, CLIPPED, "drop")
    assert_clipped(duck)
    read = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert_agree(NumpyEngine(read, CLIPPED, "drop"), duck, [("w",), ("a",), ("b",), ("w", "a", "b")])
    duck.close()


def test_without_clip_the_same_values_are_outside():
    plain = Domain(tuple(dataclasses.replace(c, clip=False) for c in CLIPPED.columns))
    report = NumpyEngine(CLIPPED_FRAME, plain, "drop").report
    assert {(i.column, i.problem, i.rows) for i in report.issues} >= {
        ("w", "values outside the domain", 4),
        ("b", "values outside the domain", 3),
    }


def test_parquet_integers_coded_in_integers_agree(tmp_path):
    """Parquet integer columns under an integer domain (the integer fast path): unsigned and
    signed types, nulls, values below, inside and far above the bounds (past 2**53)."""
    rng = np.random.default_rng(5)
    n = 2000
    frame = pd.DataFrame(
        {
            "u8": rng.integers(0, 256, n).astype("uint8"),
            "i64": np.where(rng.random(n) < 0.01, 2**60 + 1, rng.integers(-20, 40, n)).astype("int64"),
            "nullable": pd.array(np.where(rng.random(n) < 0.05, None, rng.integers(-3, 12, n)), dtype="Int64"),
        }
    )
    path = tmp_path / "ints.parquet"
    frame.to_parquet(path)
    domain = Domain(
        (
            Column("u8", "integer", lower=3, upper=250),
            Column("i64", "integer", lower=-10, upper=30),
            Column("nullable", "integer", lower=0, upper=9),
        )
    )
    a, b = NumpyEngine(pd.read_parquet(path), domain, "drop"), DuckDBEngine(path, domain, "drop")
    assert b._whole_range(domain["u8"]) and b._whole_range(domain["i64"])
    assert_agree(a, b, [None, *subsets(domain.names, 2)])
    assert a.report == b.report
    b.close()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_counting_distinct_raw_rows_first_agrees(tmp_path, suffix, monkeypatch):
    """With no invalid row and columns of few values, an engine's first table is counted by
    each distinct raw row once, coding only those: one value written several ways (' 1', '01',
    '1.0') still lands in one cell; a binned column keeps the row-by-row path."""
    rng = np.random.default_rng(8)
    n = 3000
    frame = pd.DataFrame(
        {
            "k": rng.choice([" 1", "01", "1", "2", "3.0", "+3"], n) if suffix == ".csv" else rng.integers(1, 4, n),
            "c": rng.choice(["a", "b", "x y"], n),
            "w": rng.uniform(0, 10, n),
        }
    )
    path = tmp_path / f"d{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path, index=False)
    domain = Domain(
        (
            Column("k", "integer", lower=1, upper=3),
            Column("c", "categorical", categories=("a", "b", "x y")),
            Column("w", "numeric", lower=0, upper=10, bins=(0.0, 2.5, 5.0, 10.0)),
        )
    )
    read = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    grouped = []
    original = DuckDBEngine._grouped_cell_counts
    monkeypatch.setattr(DuckDBEngine, "_grouped_cell_counts", lambda self, *a: grouped.append(a[0]) or original(self, *a))
    for query in [("k",), ("c", "k"), ("k", "w"), ("w",), None]:
        duck = DuckDBEngine(path, domain)  # a fresh engine: its first table
        assert_agree(NumpyEngine(read, domain), duck, [query], forms=("sparse", "dense"))
        duck.close()
    assert grouped == [("k",), ("c", "k")]  # the first of each engine's two forms


@pytest.mark.parametrize("bad", [None, "outside", "missing"])
def test_parquet_validated_column_by_column_agrees(tmp_path, bad, monkeypatch):
    """A Parquet file of columns with few values is validated a column at a time; a row invalid
    anywhere sends it back to the pass over whole rows, whose report is the same as NumPy's."""
    rng = np.random.default_rng(9)
    frame = pd.DataFrame({"k": rng.integers(1, 4, 500).astype("int16"), "c": rng.choice(["a", "b"], 500)})
    if bad == "outside":
        frame.loc[[3, 7], "k"] = 9
        frame.loc[7, "c"] = "z"  # invalid in both columns: counted once among invalid rows
    elif bad == "missing":
        frame["c"] = frame["c"].astype(object)
        frame.loc[11, "c"] = None
    path = tmp_path / "v.parquet"
    frame.to_parquet(path, index=False)
    domain = Domain((Column("k", "integer", lower=1, upper=3), Column("c", "categorical", categories=("a", "b"))))
    calls = []
    original = DuckDBEngine._column_by_column
    monkeypatch.setattr(DuckDBEngine, "_column_by_column", lambda self, c: calls.append(original(self, c)) or calls[-1])
    duck = DuckDBEngine(path, domain, "drop")
    assert_agree(NumpyEngine(pd.read_parquet(path), domain, "drop"), duck, [None, ("k",)])
    assert (calls[0] is None) == (bad is not None)
    assert duck.report.invalid_rows == {None: 0, "outside": 2, "missing": 1}[bad]
    duck.close()


def test_codes_that_would_spill_are_not_materialized(tmp_path, monkeypatch):
    """Once its codes table would not fit in half of DuckDB's memory, an engine counts every
    table of columns with few values from the file (distinct raw rows), with the same counts."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {"k": rng.integers(1, 4, 2000).astype("int16"), "c": rng.choice(["a", "b", "x"], 2000), "w": rng.uniform(0, 10, 2000)}
    )
    path = tmp_path / "f.parquet"
    frame.to_parquet(path, index=False)
    domain = Domain(
        (
            Column("k", "integer", lower=1, upper=3),
            Column("c", "categorical", categories=("a", "b", "x")),
            Column("w", "numeric", lower=0, upper=10, bins=(0.0, 5.0, 10.0)),
        )
    )
    duck = DuckDBEngine(path, domain)
    assert duck._codes_fit()  # 2,000 rows of 3 one-byte codes
    duck._report = dataclasses.replace(duck.report, rows=10**9, invalid_rows=0)  # as if 10⁹ rows
    assert not duck._codes_fit()
    duck._report = None
    grouped = []
    original = DuckDBEngine._grouped_cell_counts
    monkeypatch.setattr(DuckDBEngine, "_grouped_cell_counts", lambda self, *a: grouped.append(a[0]) or original(self, *a))
    monkeypatch.setattr(DuckDBEngine, "_codes_fit", lambda self: False)
    assert_agree(NumpyEngine(pd.read_parquet(path), domain), duck, [("k",), ("c", "k"), ("k", "w"), ("c",)])
    assert grouped == [("k",), ("c", "k"), ("c",)]  # the binned column's table is read from the codes table
    duck.close()


@pytest.mark.parametrize("values", [[1.0, np.nan, -8.0, 60.0], [1.0, np.nan, 2.5, 61.0], [np.nan, np.nan, 3.0, None]])
def test_a_parquet_nan_is_missing_whatever_the_file_s_statistics_say(tmp_path, values):
    """A float column whose NaN is stored as NaN (Parquet statistics leave NaN out of min and max:
    DuckDB once folded ``isnan`` to false from them, calling the NaN outside the domain or failing
    to cast it): the DuckDB engine's report, counts and codes are NumPy's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dipsy.domain.missing import Missing

    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"h": pa.array(values, type=pa.float64())}), path)  # NaN stays NaN (pandas writes null)
    domain = Domain((Column("h", "integer", lower=0, upper=60, missing=Missing(empty="skipped", codes=((-8, "refused"),))),))
    duck, numpy = DuckDBEngine(path, domain, "drop"), NumpyEngine(pd.read_parquet(path), domain, "drop")
    assert duck.report == numpy.report
    assert np.array_equal(duck.contingency(("h",), form="dense").counts, numpy.contingency(("h",), form="dense").counts)
    assert sorted(duck.records(["h"]).codes["h"].tolist()) == sorted(numpy.records(["h"]).codes["h"].tolist())
