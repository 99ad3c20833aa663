"""Missing values declared in the domain (a column's ``missing:``): empty cells, reserved codes
such as −8 "refused", Stata's ``.a``, each a state of its own or pooled.

Checked here: the declaration and its refusals; the codes (states after the value codes, in the
order declared) from the NumPy codec and the DuckDB engine's SQL, exactly alike (tables and the
validation report), and Spark's, which runs the codec; decoding and the round trip; the methods
that synthesize states end to end and those that refuse them; the evaluation's numbers without
states and its shares of each state.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dipsy
from dipsy.domain import Column, Domain, encode_column, encode_frame
from dipsy.domain.codec import decode_column, decoded_dtype, states
from dipsy.domain.missing import Missing
from dipsy.domain.validation import MISSING, OUTSIDE, WRONG_TYPE
from dipsy.engine import NumpyEngine
from dipsy.engine.duckdb_engine import DuckDBEngine
from dipsy.errors import DataError, DipsyError, DomainError, ReleaseError
from dipsy.methods import get
from dipsy.privacy.budget import ApproxDP, LocalDP, PureDP

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"

WAGP = {
    "kind": "integer",
    "lower": 0,
    "upper": 500000,
    "bins": [0, 1, 10000, 30000, 60000, 500000],
    "missing": {"empty": "not applicable", "codes": {-8: "refused", -9: "not applicable", ".a": "not asked"}},
}


def column(name: str, spec: dict) -> Column:
    return Column.from_dict(name, spec)


# -- the declaration ------------------------------------------------------------------------------


def test_the_declaration_is_read_sized_and_written_back(tmp_path):
    wagp = column("WAGP", WAGP)
    assert wagp.missing == Missing("not applicable", ((-8, "refused"), (-9, "not applicable"), (".a", "not asked")))
    assert (wagp.value_size, wagp.n_states, wagp.size, wagp.n_codes) == (5, 4, 9, 9)
    assert wagp.missing.labels == ("not applicable", "refused", "not applicable", "not asked")
    pooled = column("WAGP", {**WAGP, "missing": {**WAGP["missing"], "pooled": True}})
    assert (pooled.size, pooled.missing.labels, pooled.missing.values) == (6, ("missing",), (None,))
    domain = Domain((wagp, Column("Race", "categorical", categories=(1, 2), missing=Missing(codes=((-9, "n/a"),)))))
    assert domain.shape() == (9, 3)
    for name in ("d.yaml", "d.json"):  # JSON writes every code as text: "-8" reads back as the number
        domain.save(tmp_path / name)
        assert Domain.load(tmp_path / name) == domain
    assert "missing" in yaml.safe_load((tmp_path / "d.yaml").read_text())["columns"]["WAGP"]
    assert len(domain.sha256()) == 64  # codes of mixed types (-8 and '.a') are fingerprinted


def test_a_domain_without_missing_keeps_its_form_and_fingerprint():
    plain = Domain.load(CE_DOMAIN)
    assert all("missing" not in spec for spec in plain.to_dict()["columns"].values())
    declared = Domain.from_dict(
        {
            **plain.to_dict(),
            "columns": {
                **plain.to_dict()["columns"],
                "Race": {**plain.to_dict()["columns"]["Race"], "missing": {"codes": {-9: "n/a"}}},
            },
        }
    )
    assert declared["Race"].size == 7 and declared.sha256() != plain.sha256()
    assert Domain.from_dict(plain.to_dict()).sha256() == plain.sha256()


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"kind": "categorical", "categories": [1, 2, -8], "missing": {"codes": {-8: "refused"}}}, "both as a category"),
        ({"kind": "categorical", "categories": ["a", "-8"], "missing": {"codes": {-8: "refused"}}}, "both as a category"),
        ({"kind": "categorical", "categories": ["a", ".a"], "missing": {"codes": {".a": "not asked"}}}, "both as a category"),
        ({"kind": "integer", "lower": -10, "upper": 10, "missing": {"codes": {-8: "refused"}}}, "inside its bounds"),
        ({"kind": "numeric", "lower": 0, "upper": 1, "missing": {"codes": {0.5: "refused"}}}, "inside its bounds"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {-8: "refused", "-8": "again"}}}, "twice"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {-8: 5}}}, "not a text"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {-8: True}}}, "not a text"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"empty": ""}}, "not a text"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"empty": None}}, "without a label"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {}}, "declares nothing"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": None}, "declares nothing"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"pooled": True}}, "declares nothing"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": None}}, "nothing in it"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": [-8]}}, "not a mapping"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": "-8"}, "not a mapping"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {-8: "r"}, "reason": "x"}}, "unknown field"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {-8: "r"}, "pooled": "yes"}}, "pooled"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {True: "refused"}}}, "boolean"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {None: "refused"}}}, "empty code"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {"NA": "refused"}}}, "empty cell"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {"08": "refused"}}}, "reads as the number"),
        ({"kind": "integer", "lower": 0, "upper": 9, "missing": {"codes": {float("nan"): "refused"}}}, "not finite"),
    ],
)
def test_declarations_that_would_be_ambiguous_are_refused(spec, words):
    with pytest.raises(DomainError) as err:
        column("x", spec)
    assert words in str(err.value) and "'x'" in str(err.value) and err.value.fix


def test_the_same_number_twice_is_refused():
    with pytest.raises(DomainError, match="twice"):
        Missing(codes=((-8, "refused"), (-8.0, "again")))


@pytest.mark.parametrize(
    "codes, words", [("{no: refused}", "the missing code no (line 6)"), ("{-8: a, -8.0: b}", "(line 6) again")]
)
def test_yaml_codes_read_otherwise_than_written_are_refused_with_their_line(tmp_path, codes, words):
    path = tmp_path / "d.yaml"
    path.write_text(f"columns:\n  x:\n    kind: categorical\n    categories: [a]\n    missing:\n      codes: {codes}\n")
    with pytest.raises(DomainError) as err:
        Domain.load(path)
    assert words in str(err.value)


def test_yaml_booleans_as_codes_are_refused_with_their_line(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("columns:\n  x:\n    kind: categorical\n    categories: [a]\n    missing:\n      codes: {no: refused}\n")
    with pytest.raises(DomainError) as err:
        Domain.load(path)
    assert "the missing code no (line 6)" in str(err.value) and "boolean" in str(err.value)


def test_codes_match_numbers_as_numbers_and_text_as_text():
    m = Missing(empty="skipped", codes=((-8, "refused"), (".a", "not asked")))
    integer = Column("x", "integer", lower=0, upper=9, missing=m)
    values = pd.Series([-8, -8.0, "-8", " -8", "-8.0", ".a", " .a", ".A", None, 3], dtype=object)
    assert states(values, integer).tolist() == [1, 1, 1, 1, 1, 2, -1, -1, 0, -1]
    text = Column("t", "categorical", categories=("a", "b"), missing=m)
    assert encode_column(values, text).codes.tolist() == [3, 3, 3, 3, 3, 4, -1, -1, 2, -1]


# -- encoding: both engines alike -----------------------------------------------------------------

SURVEY_CSV = """\
WAGP,RACE,TEXT,CLIPPED,POOLED,AMOUNT
5,1,a,3,1,0.5
,2,b,-8,,
-8,NA,.a,-3,-8,0.1
.a,-9,-8,20,2,0.2
-9,4,c,-9,-9,7
 20000,-8.0,a,.a,NA,x
-9.0,,.b,NaN,.a,-9
"""


def survey_domain() -> Domain:
    return Domain(
        (
            column("WAGP", WAGP),
            Column("RACE", "categorical", categories=(1, 2, 3), missing=Missing(codes=((-8, "refused"), (-9, "not asked")))),
            Column("TEXT", "categorical", categories=("a", "b"), missing=Missing(codes=((".a", "not asked"), (-8, "refused")))),
            Column("CLIPPED", "integer", lower=0, upper=10, clip=True, missing=Missing(codes=((-8, "refused"),))),
            Column(
                "POOLED", "ordinal", categories=(1, 2), missing=Missing("skipped", ((-8, "refused"), (-9, "n/a")), pooled=True)
            ),
            Column("AMOUNT", "numeric", lower=0, upper=1, missing=Missing(empty="skipped", codes=((-9, "n/a"),))),
        )
    )


@pytest.fixture
def survey(tmp_path) -> Path:
    path = tmp_path / "survey.csv"
    path.write_text(SURVEY_CSV)
    return path


def test_states_are_codes_after_the_values_and_valid(survey):
    domain = survey_domain()
    encoded, report = encode_frame(pd.read_csv(survey), domain)
    # WAGP: bins 0..4, then empty 5, -8 6, -9 7, .a 8
    assert encoded["WAGP"].codes.tolist() == [1, 5, 6, 8, 7, 2, 7]
    assert encoded["RACE"].codes.tolist() == [0, 1, -1, 4, -1, 3, -1]  # NA and the empty cell: no empty state
    assert encoded["TEXT"].codes.tolist() == [0, 1, 2, 3, -1, 0, -1]
    # a code below lower is its state, whatever clip says; -9 (no code) is clipped to 0; '.a' is no number
    assert encoded["CLIPPED"].codes.tolist() == [3, 11, 0, 10, 0, -1, -1]
    assert encoded["POOLED"].codes.tolist() == [0, 2, 2, 1, 2, 2, -1]  # '.a' is no code of it: of the wrong type
    issues = {(i.column, i.problem): i.rows for i in report.issues}
    assert issues == {
        ("RACE", MISSING): 2,
        ("RACE", OUTSIDE): 1,
        ("TEXT", OUTSIDE): 2,
        ("CLIPPED", MISSING): 1,
        ("CLIPPED", WRONG_TYPE): 1,
        ("POOLED", WRONG_TYPE): 1,
        ("AMOUNT", WRONG_TYPE): 1,
        ("AMOUNT", OUTSIDE): 1,
    }
    assert ("WAGP", MISSING) not in issues  # its empty cell is the empty state, not a missing value


def assert_agree(a, b, queries) -> None:
    """The engines count the same tables, and read the same record codes (``Engine.codes``, dpsyn's
    public records: missing states as cells), which are the cells the tables count."""
    assert a.report == b.report
    for names in queries:
        ta, tb = a.contingency(names), b.contingency(names)
        assert ta.equals(tb), names
    names = queries[0]
    rows = []
    for engine in (a, b):
        codes = engine.codes(names)
        stacked = np.stack([codes[n] for n in names], axis=1)
        rows.append(stacked[np.lexsort(stacked.T[::-1])])  # the backends' row orders differ
    assert np.array_equal(rows[0], rows[1])
    table = a.contingency(names, form="dense")
    counted = np.bincount(np.ravel_multi_index(tuple(rows[0].T), table.shape), minlength=table.size)
    assert counted.tolist() == table.dense().ravel().tolist()
    assert sorted_records(a) == sorted_records(b)


def sorted_records(engine) -> list[tuple]:
    """Every column of ``engine.records``, one tuple per row (NaN as −inf), in sorted order; each row
    in a state has no number, and a state's code is its cell code past the values."""
    domain = engine.domain
    r = engine.records(domain.names)
    for name, state in r.states.items():
        assert np.all(np.isnan(r.numbers[name]) == (state >= 0)), name
        if name in r.codes:
            size = domain[name].value_size
            assert np.array_equal(np.where(state >= 0, size + state, r.codes[name]), r.codes[name]), name
    parts = [*(r.codes[n] for n in sorted(r.codes)), *(r.states[n] for n in sorted(r.states))]
    parts += [r.numbers[n] for n in sorted(r.numbers)]
    rows = zip(*(p.tolist() for p in parts)) if parts else iter(())
    return sorted(tuple(-math.inf if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows)


ENCODABLE = ("WAGP", "RACE", "TEXT", "CLIPPED", "POOLED")
QUERIES = [ENCODABLE, *[(n,) for n in ENCODABLE], ("WAGP", "TEXT")]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_numpy_and_duckdb_agree_exactly(survey, tmp_path, fmt):
    domain = survey_domain()
    frame = pd.read_csv(survey)
    path = survey
    if fmt == "parquet":  # nulls where pandas read empty cells
        path = tmp_path / "survey.parquet"
        frame.to_parquet(path, index=False)
    a, b = NumpyEngine(frame, domain, "drop"), DuckDBEngine(path, domain, "drop")
    assert b.report.invalid_rows == 4 and b.num_rows() == 3
    assert_agree(a, b, QUERIES)
    assert b.contingency(["WAGP"]).dense().tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 1]  # rows 1, 2 and 4 of the file
    b.close()


def test_parquet_typed_columns_with_nulls_agree(tmp_path):
    frame = pd.DataFrame(
        {
            "n": pd.array([1, None, -8, 3, None], dtype="Int64"),
            "f": [0.5, np.nan, -9.0, 0.25, 1.0],
            "s": pd.array(["a", None, ".a", "-8", "b"], dtype=object),
        }
    )
    path = tmp_path / "typed.parquet"
    frame.to_parquet(path, index=False)
    domain = Domain(
        (
            Column("n", "integer", lower=0, upper=5, missing=Missing("skipped", ((-8, "refused"),))),
            Column("f", "numeric", lower=0, upper=1, bins=(0, 0.5, 1), missing=Missing("skipped", ((-9, "n/a"),))),
            Column("s", "categorical", categories=("a", "b"), missing=Missing("skipped", ((".a", "x"), (-8, "r")))),
        )
    )
    a, b = NumpyEngine(pd.read_parquet(path), domain), DuckDBEngine(path, domain)
    assert b.report.ok and a.report.ok
    assert_agree(a, b, [("n",), ("f",), ("s",), ("n", "f", "s")])
    assert b.contingency(["n"]).dense().tolist() == [0, 1, 0, 1, 0, 0, 2, 1]
    assert b.contingency(["s"]).dense().tolist() == [1, 1, 1, 1, 1]
    b.close()


def test_empty_cells_of_an_empty_state_still_type_a_csv_column(tmp_path):
    """pandas reads '1.0', '' and '2' as floats (the empty cell is NaN), so '1.0' is the text
    category '1'; DuckDB must count the empty cells as missing when it infers that type, though
    they are valid (the empty state)."""
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1.0,x\n,y\n2,z\n")
    domain = Domain((Column("a", "categorical", categories=("1", "2"), missing=Missing("skipped")),))
    a, b = NumpyEngine(pd.read_csv(path), domain), DuckDBEngine(path, domain)
    assert b.report.ok and b.contingency(["a"]).dense().tolist() == [1, 1, 1]
    assert_agree(a, b, [("a",)])
    b.close()


def test_the_fast_paths_of_duckdb_agree(tmp_path, monkeypatch):
    """Parquet integers read in integers, and rows grouped before coding, still match the states."""
    frame = pd.DataFrame({"n": [1, -8, 3, 3, -9, -8], "c": [1, 2, -9, 2, 1, 1]})
    path = tmp_path / "ints.parquet"
    frame.to_parquet(path, index=False)
    domain = Domain(
        (
            Column("n", "integer", lower=0, upper=5, missing=Missing(codes=((-8, "refused"), (-9, "n/a")))),
            Column("c", "categorical", categories=(1, 2), missing=Missing(codes=((-9, "n/a"),))),
        )
    )
    a, b = NumpyEngine(frame, domain), DuckDBEngine(path, domain)
    assert_agree(a, b, [("n",), ("n", "c"), ("c",)])
    assert b.contingency(["n"]).dense().tolist() == [0, 1, 0, 2, 0, 0, 2, 1]
    b.close()


def test_the_values_of_a_column_of_numbers_with_states_are_refused(survey):
    domain = survey_domain().project(["WAGP", "AMOUNT", "RACE"])
    for engine in (NumpyEngine(pd.read_csv(survey), domain, "drop"), DuckDBEngine(survey, domain, "drop")):
        assert engine.values(["RACE"])["RACE"].tolist() == [0, 1, 4]  # codes: -9 is code 4 (after 1, 2, 3, -8)
        with pytest.raises(DataError, match="declares missing values"):
            engine.values(["AMOUNT"])
        records = engine.records(["WAGP", "AMOUNT", "RACE"])  # its numbers beside its states, read at once
        order = np.argsort(records.numbers["WAGP"] + 10**6 * records.states["WAGP"])
        assert records.numbers["WAGP"][order].tolist()[0] == 5 and np.isnan(records.numbers["WAGP"][order][1:]).all()
        assert sorted(records.states["WAGP"].tolist()) == [-1, 0, 3]  # 5; empty; .a (rows 1, 2 and 4 of the file)
        assert sorted(records.states["AMOUNT"].tolist()) == [-1, -1, 0]
        assert set(records.codes) == {"WAGP", "RACE"} and records.rows == 3


# Hypothesis: generated columns and values, with codes and empty cells, agree in both engines.
POOL = [0, 1, 2, 5, 9, 10, 2.5, -1, -8, -8.0, "-8", -9, ".a", ".b", "a", "b", "x", None, "", "NA", True]


@st.composite
def declared_data(draw):
    columns, data = [], {}
    rows = draw(st.integers(0, 25))
    for name in draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=1, max_size=3, unique=True)):
        codes = tuple(draw(st.lists(st.sampled_from([(-8, "refused"), (-9, "n/a"), (".a", "not asked")]), unique=True)))
        empty = draw(st.sampled_from([None, "skipped"]))
        if not codes and empty is None:
            empty = "skipped"
        missing = Missing(empty, codes, draw(st.booleans()))
        kind = draw(st.sampled_from(["text", "number", "integer", "integer bins", "numeric bins", "numeric"]))
        if kind == "text":
            col = Column(name, "categorical", categories=("a", "b", "1"), missing=missing)
        elif kind == "number":
            col = Column(name, "ordinal", categories=(0, 1, 2.5), missing=missing)
        elif kind == "integer":
            col = Column(name, "integer", lower=0, upper=5, clip=draw(st.booleans()), missing=missing)
        elif kind == "integer bins":
            col = Column(name, "integer", lower=0, upper=10, bins=(0, 2, 10), clip=draw(st.booleans()), missing=missing)
        elif kind == "numeric bins":
            col = Column(name, "numeric", lower=0, upper=10, bins=(0, 2.5, 10), missing=missing)
        else:
            col = Column(name, "numeric", lower=0, upper=10, missing=missing)
        columns.append(col)
        data[name] = draw(st.lists(st.sampled_from(POOL), min_size=rows, max_size=rows))
    return Domain(tuple(columns)), pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in data.items()})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=declared_data(), on_invalid=st.sampled_from(["drop", "error"]))
@example(  # a number column whose only code is text, read as floats: no value can be in a state (found by Hypothesis)
    data=(
        Domain((Column("p", "numeric", lower=0, upper=10, bins=(0, 2.5, 10), missing=Missing(codes=((".a", "not asked"),))),)),
        pd.DataFrame({"p": pd.Series([-8.0], dtype=object)}),
    ),
    on_invalid="drop",
)
def test_generated_declarations_agree(data, on_invalid):
    domain, frame = data
    encodable = tuple(c.name for c in domain.columns if c.encodable)
    queries = [encodable, *[(n,) for n in encodable]] if encodable else []
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "d.csv"
        frame.to_csv(csv_path, index=False)
        read = pd.read_csv(csv_path)
        for path in (csv_path, Path(tmp) / "d.parquet"):
            if path.suffix == ".parquet":
                read.to_parquet(path, index=False)
            a, b = NumpyEngine(read, domain, on_invalid), DuckDBEngine(path, domain, on_invalid)
            assert a.report == b.report
            if a.report.ok or on_invalid == "drop":
                assert sorted_records(a) == sorted_records(b)
            for names in queries:
                try:
                    want = a.contingency(names)
                except DataError as e:
                    with pytest.raises(DataError) as err:
                        b.contingency(names)
                    assert str(err.value) == str(e)
                    continue
                assert b.contingency(names).equals(want), names
            b.close()


# -- decoding -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "col, dtype",
    [
        (column("WAGP", WAGP), object),  # '.a' among numbers
        (column("WAGP", {**WAGP, "missing": {"empty": "n/a", "codes": {-8: "r"}}}), float),  # empty: NaN
        (column("WAGP", {**WAGP, "missing": {"codes": {-8: "r"}}}), np.int64),
        (Column("r", "categorical", categories=(1, 2), missing=Missing(codes=((-8, "r"),))), np.int64),
        (Column("r", "categorical", categories=(1, 2), missing=Missing("s", ((-8, "r"),), pooled=True)), float),
        (Column("t", "categorical", categories=("a", "b"), missing=Missing("s", ((-8, "r"), (".a", "x")))), object),
        (Column("x", "numeric", lower=0, upper=1, bins=(0, 0.5, 1), missing=Missing(codes=((-9, "r"),))), float),
    ],
)
def test_decode_then_encode_gives_the_codes_back(col, dtype):
    codes = np.arange(col.n_codes).repeat(3)
    decoded = decode_column(codes, col, np.random.default_rng(0))
    assert decoded.dtype == np.dtype(dtype) == decoded_dtype(col)
    # the type of a decoded column follows its declaration, whichever codes a set holds (chunks agree)
    assert decode_column(codes[:3], col, np.random.default_rng(0)).dtype == decoded.dtype
    assert encode_column(pd.Series(decoded), col).codes.tolist() == codes.tolist()
    for frame in ("csv", "parquet"):
        if frame == "parquet" and dtype is object and not col.is_categorical:
            continue  # numbers and '.a' in one column: Parquet cannot hold them (check_storable refuses it)
        buffer = tempfile.SpooledTemporaryFile()
        table = pd.DataFrame({col.name: decoded})
        if frame == "csv":
            table.to_csv(buffer, index=False)
            buffer.seek(0)
            back = pd.read_csv(buffer)
        else:
            table.to_parquet(buffer, index=False)
            buffer.seek(0)
            back = pd.read_parquet(buffer)
        assert encode_column(back[col.name], col).codes.tolist() == codes.tolist(), frame


def test_states_decode_to_their_codes_as_written():
    wagp = column("WAGP", WAGP)
    assert decode_column(np.array([5, 6, 7, 8]), wagp, np.random.default_rng(0)).tolist() == [None, -8, -9, ".a"]
    text = Column("t", "categorical", categories=("a",), missing=Missing("s", ((-8, "r"),)))
    assert decode_column(np.array([0, 1, 2]), text, np.random.default_rng(0)).tolist() == ["a", None, "-8"]


# -- through the methods --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ce_with_states(tmp_path_factory):
    """The CE sample with some incomes refused (−8) or empty and some races not asked (−9)."""
    folder = tmp_path_factory.mktemp("ce-missing")
    frame = pd.read_csv(CE_DATA)
    rng = np.random.default_rng(1)
    income, race = frame["Income"].astype(object), frame["Race"].astype(object)
    income[rng.random(len(frame)) < 0.15] = -8
    income[rng.random(len(frame)) < 0.10] = None
    race[rng.random(len(frame)) < 0.20] = -9
    frame["Income"], frame["Race"] = income, race
    frame.to_csv(folder / "ce.csv", index=False)
    spec = yaml.safe_load(CE_DOMAIN.read_text())
    spec["columns"]["Income"]["missing"] = {"empty": "not applicable", "codes": {-8: "refused"}}
    spec["columns"]["Race"]["missing"] = {"codes": {-9: "not asked"}}
    (folder / "domain.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


def shares(frame: pd.DataFrame) -> dict[str, float]:
    income = pd.to_numeric(frame["Income"], errors="coerce")
    return {
        "refused": float((income == -8).mean()),
        "empty": float(income.isna().mean()),
        "not asked": float((frame["Race"] == -9).mean()),
    }


@pytest.mark.parametrize(
    "method, budget, columns",
    [("dirichlet-multinomial", {"epsilon": 1000.0}, ["Income", "Race", "UrbanRural"]), ("privsyn", {"rho": 100.0}, None)],
)
def test_methods_release_states_at_their_rates(ce_with_states, tmp_path, method, budget, columns):
    data, domain = ce_with_states / "ce.csv", Domain.load(ce_with_states / "domain.yaml")
    release = dipsy.synthesize(data, domain, method, seed=3, columns=columns, **budget)
    synthetic, original = release.tables[0], pd.read_csv(data)
    n = len(original)
    for state, p in shares(original).items():
        # the share in a posterior-predictive (or near noiseless marginal) draw: sd about sqrt(2 p (1 - p) / n)
        assert abs(shares(synthetic)[state] - p) < 5 * math.sqrt(2 * p * (1 - p) / n), state
    income = pd.to_numeric(synthetic["Income"], errors="coerce")
    values = income[income.notna() & (income != -8)]
    assert len(values) and values.between(0, 1_000_000).all()  # a value is a value of the domain
    assert set(synthetic["Race"]) <= {1, 2, 3, 4, 5, 6, -9}
    encoded, report = encode_frame(synthetic, release.domain)
    assert report.ok
    release.save(tmp_path / "out")
    written = Domain.load(tmp_path / "out" / "domain.yaml")
    assert written["Income"].missing == domain["Income"].missing and written["Race"].missing == domain["Race"].missing


def test_a_table_release_names_the_states(ce_with_states):
    domain = Domain.load(ce_with_states / "domain.yaml")
    release = dipsy.synthesize(
        ce_with_states / "ce.csv", domain, "laplace-sanitizer", epsilon=10.0, seed=1, columns=["Race"], release="table"
    )
    cells = release.metadata()["cells"]["columns"]["Race"]
    assert cells[-1] == "missing: not asked (-9)" and len(cells) == 7


def test_the_perturbed_histogram_cuts_a_column_without_bins_and_keeps_its_states(tmp_path):
    frame = pd.DataFrame({"x": [0.1, 0.2, -9, None, 0.9, -9] * 100})
    domain = Domain((Column("x", "numeric", lower=0, upper=1, missing=Missing("skipped", ((-9, "n/a"),))),))
    release = dipsy.synthesize(frame, domain, "perturbed-histogram", epsilon=1000.0, seed=2, options={"bins": 4})
    x = pd.to_numeric(release.tables[0]["x"], errors="coerce")
    n = len(frame)
    for share, p in (((x == -9).mean(), 1 / 3), (x.isna().mean(), 1 / 6)):  # ε = 1000: a multinomial draw of n
        assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / n)
    values = x[x.notna() & (x != -9)]
    assert values.between(0, 1).all() and (values != values.round()).any()  # drawn inside the bins of bins=4


def test_rdt_splits_on_numeric_states_repeats_them_and_synthesizes_a_sensitive_column_s(tmp_path):
    """rdt over public numeric columns with states (an integer without bins, a binned one) and a
    sensitive column with a state: the public columns are repeated as they are, states and all, and
    a random structure splits a column with states by its codes (each state a child), so a label
    that follows a public state follows it in the release."""
    rng = np.random.default_rng(4)
    n = 3000
    age = np.where(rng.random(n) < 0.1, -8, rng.integers(0, 10, n))
    pay = np.where(rng.random(n) < 0.3, np.nan, rng.uniform(0, 100, n))
    s = np.where(np.isnan(pay), -9, (age >= 5).astype(int))
    frame = pd.DataFrame({"age": age, "pay": pay, "s": s})
    domain = Domain(
        (
            Column("age", "integer", lower=0, upper=9, missing=Missing(codes=((-8, "refused"),)), role="public"),
            Column("pay", "numeric", lower=0, upper=100, bins=(0, 50, 100), missing=Missing("not asked"), role="public"),
            Column("s", "integer", lower=0, upper=1, missing=Missing(codes=((-9, "n/a"),))),
        )
    )
    options = {"sensitive": "s", "structure": "random", "depth": 2, "trees": 3, "weights": "pay:1000,age:1", "structure_seed": 2}
    out = dipsy.synthesize(frame, domain, "rdt", epsilon=200.0, seed=1, options=options).tables[0]
    assert out["age"].tolist() == frame["age"].tolist()
    assert np.array_equal(out["pay"].to_numpy(float), frame["pay"].to_numpy(float), equal_nan=True)
    assert ((out["s"] == -9) == frame["pay"].isna()).mean() > 0.97


def refused(method: str, domain: Domain, n: int = 100, **kwargs) -> str:
    """The message of the DipsyError ``method`` raises when it plans over ``domain`` (nothing is read)."""

    with pytest.raises(DipsyError) as err:
        get(method)(kwargs.pop("budget", PureDP(1.0)), **kwargs).plan(n, domain)
    return str(err.value)


def test_methods_that_read_numbers_refuse_a_column_with_states(tmp_path):
    income = Column("Income", "numeric", lower=0, upper=100, bins=(0, 50, 100), missing=Missing(codes=((-8, "refused"),)))
    race = Column("Race", "categorical", categories=(1, 2), missing=Missing(codes=((-9, "n/a"),)))
    plain = Column("Age", "categorical", categories=(1, 2), role="public")
    assert "smoothed histogram does not yet synthesize missing states" in refused("smoothed-histogram", Domain((income,)))
    assert "smoothed histogram" in refused("smoothed-histogram", Domain((race,)))
    assert "does not yet synthesize missing states" in refused("exponential-ecdf", Domain((income,)), n=5)
    assert "model=normal" in refused("modips", Domain((income,)), options={"model": "normal"})
    assert "model=mixed" in refused("modips", Domain((race, income)), options={"model": "mixed"})
    unbinned = Column("Income", "numeric", lower=0, upper=100, missing=Missing(codes=((-8, "refused"),)), role="public")
    y = Column("y", "categorical", categories=(1, 2))
    assert "give the column bins" in refused("rdt", Domain((unbinned, y)), options={"structure": "random", "sensitive": "y"})
    message = refused("pseudo-posterior", Domain((plain, race)), budget=LocalDP(1.0), options={"response": "Race"})
    assert "models no missing response" in message
    # and those that count codes take them
    get("modips")(PureDP(1.0), options={"model": "multinomial"}).plan(100, Domain((race,)))
    get("perturbed-histogram")(PureDP(1.0)).plan(100, Domain((income, race)))
    (tmp_path / "public.csv").write_text("Income,Race\n1,1\n-8,-9\n")
    public = {"public": str(tmp_path / "public.csv")}
    get("dpsyn")(ApproxDP(1.0, 1e-6), options=public).plan(100, Domain((income, race)))  # its public records as codes


def test_a_release_format_that_cannot_hold_a_state_is_refused_before_the_charge():
    from dipsy.release import check_storable

    domain = Domain((column("WAGP", WAGP),))  # numbers and '.a'
    with pytest.raises(ReleaseError, match="cannot store its missing states"):
        check_storable(domain, "parquet")
    check_storable(domain, "csv")
    check_storable(Domain((column("WAGP", {**WAGP, "missing": {"empty": "n/a", "codes": {-8: "r"}}}),)), "parquet")
    with pytest.raises(ReleaseError, match="partition column"):
        check_storable(
            Domain(
                (Column("r", "categorical", categories=(1, 2), missing=Missing("s")), Column("a", "categorical", categories=(1,)))
            ),
            "csv",
            ("r",),
        )


def test_discovered_bins_and_categories_leave_the_states_out():
    from dipsy.discovery_run import _without_codes
    from dipsy.methods.discovery import quantile_edges

    # the noisy histogram of a column with two states has two counts past its grid
    assert quantile_edges(np.array([5, -2, 5, 0, 5, 5, 900, 900]), (0, 1, 2, 3, 4, 5, 6), 2) == (0, 4, 6)
    assert _without_codes([1, 2, -8, ".a", "b"], {"missing": {"codes": {"-8": "r", ".a": "x"}}}) == [1, 2, "b"]


# -- evaluation -----------------------------------------------------------------------------------


def test_evaluate_leaves_states_out_of_the_numbers_and_compares_their_shares(ce_with_states, tmp_path, capsys):
    from dipsy.evaluation.report import write_report

    data = ce_with_states / "ce.csv"
    release = dipsy.synthesize(data, ce_with_states / "domain.yaml", "dirichlet-multinomial", epsilon=1000.0, seed=4)
    metrics = dipsy.evaluate(data, release, formula="Expenditure ~ Income")
    original = pd.read_csv(data)
    income = pd.to_numeric(original["Income"], errors="coerce")
    assert metrics["numeric"]["Income"]["mean_original"] == pytest.approx(income[income >= 0].mean())
    assert metrics["numeric"]["Income"]["n_original"] == int((income >= 0).sum())
    assert metrics["inference"]["coefficients"][1]["original"]["estimate"] > 0  # -8 incomes left out, not read as numbers
    part = metrics["missing"]["Income"]
    assert part["states"] == [{"label": "not applicable", "code": None}, {"label": "refused", "code": -8}]
    assert part["original"] == pytest.approx([income.isna().mean(), (income == -8).mean()])
    assert len(part["synthetic"]) == 1 and part["max_abs_diff"][0] < 0.1
    assert metrics["missing"]["Race"]["original"] == pytest.approx([(original["Race"] == -9).mean()])
    assert "UrbanRural" not in metrics["missing"]
    # the page without the marginals' heat maps (half the render's time): the states' shares are a part of
    # that section drawn from metrics["missing"] alone; the numeric figures, drawn from the columns with
    # states, stay
    shown = {k: v for k, v in metrics.items() if k != "marginals"}
    page = write_report(shown, original, release.tables, release.domain, tmp_path / "report.html").read_text()
    assert "Missing values" in page and "Income: share of rows in each missing state" in page and "refused" in page
    assert "Income: share of rows in a missing state, by " in page
    from dipsy.cli import main

    release.save(tmp_path / "release")
    assert main(["evaluate", str(data), str(tmp_path / "release")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("rows in a missing state"))
    share = 100 * (income.isna().mean() + (income == -8).mean())
    assert f"Income {share:.1f}% (sets " in line and "Race " in line


def test_missingness_is_shown_against_the_column_a_rule_ties_it_to():
    """'N' exactly under 15 in the original; a set that puts 'N' anywhere (20 %) shows the gap by age,
    which the column's overall share would hide."""
    from dipsy.evaluation import missing_shares

    domain = Domain.from_dict(
        {
            "columns": {
                "AGE": {"kind": "integer", "lower": 0, "upper": 99, "bins": [0, 15, 40, 99]},
                "INC": {
                    "kind": "integer",
                    "lower": 0,
                    "upper": 1000,
                    "bins": [0, 500, 1000],
                    "missing": {"codes": {"N": "under 15"}},
                },
                "SEX": {"kind": "categorical", "categories": ["1", "2"]},
            },
            "rules": [{"name": "no income under 15", "if": {"AGE": {"below": 15}}, "then": {"INC": ["N"]}}],
        }
    )
    rng = np.random.default_rng(0)
    age = rng.integers(0, 99, 2000)
    original = pd.DataFrame({"AGE": age, "INC": np.where(age < 15, "N", "100"), "SEX": rng.choice(["1", "2"], 2000)})
    shuffled = original.assign(INC=rng.permutation(original["INC"].to_numpy()))
    by = missing_shares(original, [shuffled], domain)["INC"]["by"]
    assert list(by) == ["AGE"]  # the rule's column, not SEX
    assert by["AGE"]["levels"] == ["0–14", "15–39", "40–99"]
    assert by["AGE"]["original"] == [1.0, 0.0, 0.0]
    assert by["AGE"]["max_abs_diff"][0] > 0.7  # about 0.85 of the young lost their 'N'
    # without the rule, the column whose levels the share varies most across: AGE again, not SEX
    plain = Domain(domain.columns)
    assert list(missing_shares(original, [shuffled], plain)["INC"]["by"]) == ["AGE"]


def test_clipped_originals_keep_their_states():
    from dipsy.evaluation import read_original

    domain = Domain((Column("x", "integer", lower=0, upper=9, clip=True, missing=Missing(codes=((-8, "refused"),))),))
    kept = read_original(pd.DataFrame({"x": [-8, -3, 20, 4]}), domain)
    assert kept["x"].tolist() == [-8, 0, 9, 4]
