"""SAS, Stata and SPSS files: read through a private Parquet copy, a domain skeleton from their
metadata, releases written back in their formats with the domain's labels.

The files are made here with pyreadstat from the CE teaching sample (``examples/ce/CEdata.csv``),
with variable labels, value labels and (SPSS) declared missing codes. pyreadstat cannot write a
``.sas7bdat`` file, so SAS data files are tested only as unreadable input (their lettered missing
values, ``.A`` … ``.Z`` and ``._``, take the code path of Stata's ``.a`` … ``.z``, tested here
with .dta files); SAS transport (``.xpt``) files are tested throughout, with names of at most 8
characters as version 5 needs.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
import yaml
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.authoring import init_domain
from dipsy.cli import main
from dipsy.domain import Column, Domain
from dipsy.domain.missing import Missing
from dipsy.domain.validation import OUTSIDE, WRONG_TYPE
from dipsy.engine import NumpyEngine, engine_for
from dipsy.engine.agency import ParquetCopy, Variable
from dipsy.engine.duckdb_engine import DuckDBEngine
from dipsy.engine.files import file_format
from dipsy.errors import DataError, ReleaseError
from dipsy.privacy import Ledger
from dipsy.release import Output, check_storable, estimate_bytes
from dipsy.release_sets import write_set

CE = Domain.load(CE_DOMAIN)
#: The CE columns as a SAS transport (version 5) file names them: at most 8 characters.
XPT_NAMES = {"UrbanRural": "URBRUR", "Income": "INCOME", "Race": "RACE", "Expenditure": "EXPEND"}
#: Variable labels (at most 40 characters, as SAS transport version 5 keeps them).
DESCRIPTIONS = {
    "UrbanRural": "Urban/rural status",
    "Income": "Income before taxes, past 12 months",
    "Race": "Race of the reference person",
    "Expenditure": "Total expenditure in the last quarter",
}
RACE = {1: "White", 2: "Black", 3: "Native American", 4: "Asian", 5: "Pacific Islander", 6: "Multi-race"}
RACE_MISSING = {-8: "refused", -9: "not applicable"}  # SPSS: declared missing, labelled
URBAN = {1: "Urban", 2: "Rural"}
READ = {"sav": pyreadstat.read_sav, "zsav": pyreadstat.read_sav, "dta": pyreadstat.read_dta, "xpt": pyreadstat.read_xport}
# What the engines read (dipsy.engine.agency): codes, not labels; SPSS's declared missing codes as the numbers they are.
READ_AS_DIPSY = {"sav": {"user_missing": True}, "zsav": {"user_missing": True}, "dta": {}, "xpt": {}}


def names(fmt: str) -> dict[str, str]:
    """The CE column names in a file of format ``fmt``."""
    return XPT_NAMES if fmt == "xpt" else {n: n for n in XPT_NAMES}


def write_ce(folder: Path, fmt: str) -> Path:
    """The CE sample as a ``fmt`` file with variable labels and (dta, sav) value labels."""
    rename = names(fmt)
    frame = pd.read_csv(CE_DATA).rename(columns=rename)
    labels = {rename[n]: d for n, d in DESCRIPTIONS.items()}
    path = folder / f"ce.{fmt}"
    if fmt == "xpt":
        pyreadstat.write_xport(frame, str(path), column_labels=labels, file_format_version=5)
        return path
    values = {"UrbanRural": URBAN, "Race": {**RACE_MISSING, **RACE}}
    if fmt == "dta":
        pyreadstat.write_dta(frame, str(path), column_labels=labels, variable_value_labels=values)
    else:
        pyreadstat.write_sav(
            frame,
            str(path),
            column_labels=labels,
            variable_value_labels=values,
            missing_ranges={"Race": [-8, -9]},
            compress=fmt == "zsav",
        )
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("agency")
    return {fmt: write_ce(folder, fmt) for fmt in ("sav", "zsav", "dta", "xpt")}


@pytest.fixture(autouse=True)
def own_temp(tmp_path, monkeypatch) -> Path:
    """A temporary folder of the test's own, so that a copy left behind is this test's."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def copies(folder: Path) -> list[Path]:
    return sorted(folder.glob("dipsy-agency-*"))


def ce_domain(fmt: str) -> Domain:
    """The CE example's domain with the file's names (bounds and bins as examples/ce/domain.yaml declares them)."""
    rename = names(fmt)
    return Domain(tuple(Column.from_dict(rename[c.name], c.to_dict()) for c in CE.columns), name="ce")


def filled(text: str, fmt: str) -> dict:
    """A skeleton with its TODOs filled from the CE example's domain (the bounds and bins of the
    numeric columns; in a SAS file, which has no value labels, Race's and UrbanRural's categories
    too), each column keeping the description the skeleton took from the file."""
    spec = yaml.safe_load(text)
    for name, column in ce_domain(fmt).to_dict()["columns"].items():
        entry = spec["columns"][name]
        if "TODO" in entry.values():
            spec["columns"][name] = {**column, "description": entry["description"]}
    return spec


# -- formats ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, fmt", [("a.sas7bdat", "sas7bdat"), ("a.XPT", "xpt"), ("a.dta", "dta"), ("a.sav", "sav"), ("a.zsav", "sav")]
)
def test_agency_extensions_are_their_own_formats(name, fmt):
    assert file_format(Path(name), agency=True) == fmt
    with pytest.raises(DataError) as err:  # an engine opened on its own reads CSV and Parquet only
        file_format(Path(name))
    assert "Parquet copy" in err.value.problem and "engine_for" in err.value.fix


def test_an_unknown_extension_names_the_agency_extensions_too():
    with pytest.raises(DataError, match="neither CSV nor Parquet") as err:
        file_format(Path("a.xlsx"), agency=True)
    assert ".sav" in err.value.fix and ".dta" in err.value.fix


# -- reading: the engines agree --------------------------------------------------------------------


def assert_agree(a, b, domain: Domain) -> None:
    assert a.report == b.report
    for columns in [None, *[[n] for n in domain.names], [domain.names[0], domain.names[2]]]:
        assert a.contingency(columns).equals(b.contingency(columns)), columns


@pytest.mark.parametrize("fmt", ["sav", "zsav", "dta", "xpt"])
def test_engines_agree_with_the_original_read_by_pyreadstat(files, fmt, own_temp):
    path, domain = files[fmt], ce_domain(fmt)
    original, _ = READ[fmt](str(path), **READ_AS_DIPSY[fmt])
    expected = NumpyEngine(original, domain)
    duck = engine_for(path, domain)
    assert copies(own_temp) and (copies(own_temp)[0].stat().st_mode & 0o777) == 0o700  # private while it is read
    in_memory = engine_for(path, domain, engine="numpy")
    assert_agree(expected, duck, domain)
    assert_agree(expected, in_memory, domain)
    assert duck.contingency([names(fmt)["Race"]]).dense().tolist() == [816, 109, 7, 39, 6, 17]
    income = names(fmt)["Income"]
    assert np.array_equal(np.sort(duck.values([income])[income]), np.sort(expected.values([income])[income]))
    # a rebinned engine (other bins, the same rows) shares the copy and leaves it to its parent
    coarse = Domain(
        tuple(Column.from_dict(c.name, {**c.to_dict(), "bins": 2}) if c.kind == "numeric" else c for c in domain.columns)
    )
    rebinned = duck.rebinned(coarse)
    assert rebinned.contingency().equals(NumpyEngine(original, coarse).contingency())
    rebinned.close()
    assert copies(own_temp)
    duck.close()
    assert copies(own_temp) == []


def test_rows_outside_the_domain_are_reported_and_dropped_alike(files):
    path = files["dta"]
    narrow = Domain(
        tuple(Column("Race", "categorical", categories=(1, 2, 3, 4, 5)) if c.name == "Race" else c for c in CE.columns)
    )
    original, _ = pyreadstat.read_dta(str(path))
    expected = NumpyEngine(original, narrow, on_invalid="drop")
    engine = engine_for(path, narrow, on_invalid="drop")
    assert [(i.column, i.rows) for i in engine.report.issues] == [("Race", 17)]
    assert_agree(expected, engine, narrow)
    engine.close()
    with pytest.raises(DataError, match="Race"):
        engine_for(path, narrow).ensure_valid()


def test_declared_missing_codes_are_read_as_the_numbers_they_are(tmp_path):
    path = tmp_path / "m.sav"
    frame = pd.DataFrame({"q": [1.0, 2.0, -8.0, -9.0, 1.0]})
    pyreadstat.write_sav(
        frame, str(path), variable_value_labels={"q": {1: "yes", 2: "no", **RACE_MISSING}}, missing_ranges={"q": [-8, -9]}
    )
    copy = ParquetCopy(path)
    assert pd.read_parquet(copy.path)["q"].tolist() == [1.0, 2.0, -8.0, -9.0, 1.0]  # the codes, not labels, not NaN
    copy.remove()


def test_types_stay_the_same_from_chunk_to_chunk(tmp_path, monkeypatch):
    """Chunks of two rows: a Stata integer column whose missing value comes in a later chunk stays
    an integer column, and a date column with no value in the first chunk takes the type of its first date."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    import dipsy.engine.agency as agency

    monkeypatch.setattr(agency, "CHUNK_CELLS", 6)  # three columns: two rows a chunk
    path = tmp_path / "t.dta"
    frame = pd.DataFrame(
        {
            "n": pd.array([1, 2, None, 4, 5], dtype="Int32"),
            "d": [None, None, dt.date(2020, 1, 2), None, dt.date(2021, 3, 4)],
            "s": ["a", "b", "", "d", "e"],
        }
    )
    pyreadstat.write_dta(frame, str(path))
    copy = ParquetCopy(path)
    back = pq.read_table(copy.path)
    copy.remove()
    assert back.schema.field("n").type == pa.int64() and back.schema.field("d").type == pa.date32()
    assert back.column("n").to_pylist() == [1, 2, None, 4, 5]
    assert back.column("d").to_pylist() == [None, None, dt.date(2020, 1, 2), None, dt.date(2021, 3, 4)]
    assert back.column("s").to_pylist() == ["a", "b", "", "d", "e"]


# -- Stata's (and SAS's) lettered missing values ------------------------------------------------------

#: A question with answers 1 and 2, Stata's lettered missing values .a (3 rows) and .b (2 rows) and
#: the system missing value (1 row); its first letter comes in the second chunk of three rows.
Q = [1.0, 2.0, 2.0, "a", "b", np.nan, "a", 1.0, "a", 2.0, "b", 1.0]
#: Numbers with letters, some outside [0, 10] and one a fraction.
N = [3.0, 12.0, "a", -4.0, 2.5, np.nan, 7.0, "b", 0.0, 10.0, "a", 5.0]
Q_LABELS = {1: "yes", 2: "no", "a": "refused", "b": "not asked"}
LETTERS = Missing(empty="system missing (.)", codes=((".a", "refused"), (".b", "not asked")))


def lettered_file(path: Path, repeat: int = 1) -> Path:
    """A Stata file of Q (value-labelled, its letters too), N and a column x of numbers 1, 2, 3."""
    rows = len(Q) * repeat
    frame = pd.DataFrame(
        {
            "q": pd.Series(Q * repeat, dtype=object),
            "n": pd.Series(N * repeat, dtype=object),
            "x": [float(1 + i % 3) for i in range(rows)],
        }
    )
    pyreadstat.write_dta(
        frame, str(path), variable_value_labels={"q": Q_LABELS}, missing_user_values={"q": ["a", "b"], "n": ["a", "b"]}
    )
    return path


@pytest.mark.parametrize("clip", [False, True])
def test_lettered_missing_values_are_states_of_their_own(tmp_path, monkeypatch, clip):
    """Each letter is its own state, in the copy and in both engines (pooled, .a and .b would be
    counted as the one empty state); the numbers of a column that holds letters, text in the copy,
    are checked against the bounds as a CSV column's are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import dipsy.engine.agency as agency

    monkeypatch.setattr(agency, "CHUNK_CELLS", 9)  # three columns: three rows a chunk, the first without a letter
    path = lettered_file(tmp_path / "q.dta")
    copy = ParquetCopy(path)
    back = pq.read_table(copy.path)
    copy.remove()
    assert back.schema.field("q").type == pa.string() and back.schema.field("x").type == pa.float64()
    assert back.column("q").to_pylist() == ["1", "2", "2", ".a", ".b", None, ".a", "1", ".a", "2", ".b", "1"]
    assert back.column("n").to_pylist() == ["3", "12", ".a", "-4", "2.5", None, "7", ".b", "0", "10", ".a", "5"]
    domain = Domain(
        (
            Column("q", "categorical", categories=(1, 2), labels=("yes", "no"), missing=LETTERS),
            Column("n", "integer", lower=0, upper=10, clip=clip, missing=LETTERS),
            Column("x", "categorical", categories=(1, 2, 3)),
        )
    )
    numpy = engine_for(path, domain, on_invalid="drop", engine="numpy")
    duck = engine_for(path, domain, on_invalid="drop")
    assert_agree(numpy, duck, domain)
    issues = {(i.column, i.problem): i.rows for i in duck.report.issues}
    assert issues == ({("n", WRONG_TYPE): 1} if clip else {("n", WRONG_TYPE): 1, ("n", OUTSIDE): 2})  # 2.5; 12 and -4
    q = duck.contingency(["q"]).dense().tolist()
    assert q == ([3, 3, 1, 3, 1] if clip else [3, 2, 1, 2, 1])  # 1, 2, then the states: empty, .a, .b
    if clip:  # -4 and 12 top- and bottom-coded to 0 and 10
        assert duck.contingency(["n"]).dense().tolist() == [2, 0, 0, 1, 0, 1, 0, 1, 0, 0, 2, 1, 2, 1]
    duck.close()


def test_a_release_in_stata_keeps_the_lettered_missing_values(tmp_path, own_temp):
    """data.dta with .a and .b → a domain from its metadata → a release written as .dta: Stata reads
    its letters as letters again, with their labels, where the synthetic set holds the states."""
    path = lettered_file(tmp_path / "data.dta", repeat=25)
    spec = yaml.safe_load(init_domain(path).text)["columns"]
    domain = Domain.load({"columns": {"q": spec["q"]}})
    assert domain["q"].missing == LETTERS
    release = dipsy.synthesize(path, domain, method="perturbed-histogram", epsilon=100.0, seed=5, columns=["q"])
    table = release.tables[0]
    assert {".a", ".b"} <= set(table["q"].dropna())  # ε = 100: about 75 and 50 of 300 rows
    out = release.save(tmp_path / "rel", format="dta")
    back, meta = pyreadstat.read_dta(str(out / "synthetic_1.dta"), user_missing=True)
    assert meta.readstat_variable_types["q"] == "double"  # numbers, not text
    assert meta.variable_value_labels["q"] == Q_LABELS
    assert sorted(meta.missing_user_values["q"]) == ["a", "b"]
    expected = [None if v is None else v[1:] if isinstance(v, str) else float(v) for v in table["q"]]
    assert [None if v != v else v for v in back["q"]] == expected  # NaN: the system missing value, the empty state
    assert copies(own_temp) == []


def test_a_letter_in_a_date_column_reads_as_missing(tmp_path):
    """No kind holds a date, so a date column's letters need no state: they read as missing, and
    the column stays a column of dates."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.dta"
    days = pd.Series([dt.date(2020, 1, 2), "a", None, dt.date(2021, 3, 4)], dtype=object)
    pyreadstat.write_dta(pd.DataFrame({"d": days}), str(path), missing_user_values={"d": ["a"]})
    copy = ParquetCopy(path)
    back = pq.read_table(copy.path)
    copy.remove()
    assert back.schema.field("d").type == pa.date32()
    assert back.column("d").to_pylist() == [dt.date(2020, 1, 2), None, None, dt.date(2021, 3, 4)]


def test_a_public_file_gives_bounds_without_its_letters(tmp_path):
    """--from-public reads the numbers of a column with letters as numbers, its letters as missing:
    a letter is a state, never a category or a bound."""
    data, public = lettered_file(tmp_path / "data.dta"), lettered_file(tmp_path / "public.dta", repeat=2)
    spec = yaml.safe_load(init_domain(data, public=public).text)["columns"]
    assert spec["n"]["kind"] == "numeric" and (spec["n"]["lower"], spec["n"]["upper"]) == (-4.0, 12.0)


@pytest.mark.parametrize(
    "fmt, words", [("sav", "SPSS (.sav) has no lettered"), ("xpt", "SAS transport"), ("parquet", "one type")]
)
def test_lettered_missing_values_only_stata_writes_are_refused_elsewhere(fmt, words):
    domain = Domain((Column("q", "categorical", categories=(1, 2), labels=("yes", "no"), missing=LETTERS),))
    check_storable(domain, "dta")
    check_storable(domain, "csv")
    with pytest.raises(ReleaseError) as err:
        check_storable(domain, fmt)
    assert "cannot store its missing states" in err.value.problem
    assert words in err.value.fix and "--format dta" in err.value.fix and "-1 for .a" in err.value.fix
    sas = Domain((Column("q", "integer", lower=0, upper=9, missing=Missing(codes=((".A", "refused"),))),))
    with pytest.raises(ReleaseError) as err:  # SAS's letters are not Stata's: its numbers would be written as text
        check_storable(sas, "dta")
    assert ".a to .z, and .A is none" in err.value.fix


# -- bad input -------------------------------------------------------------------------------------


def bad_files(folder: Path, files: dict[str, Path]) -> dict[str, Path]:
    data = files["sav"].read_bytes()
    made = {
        "truncated.sav": data[: len(data) // 2],
        "text.dta": b"UrbanRural,Income\n1,2\n",
        "empty.sav": b"",
        "empty.xpt": b"",
        "text.sas7bdat": b"not a SAS file",
    }
    for name, content in made.items():
        (folder / name).write_bytes(content)
    return {name: folder / name for name in made}


@pytest.mark.parametrize("name", ["truncated.sav", "text.dta", "empty.sav", "empty.xpt", "text.sas7bdat"])
@pytest.mark.parametrize("backend", [None, "numpy"])
def test_an_unreadable_file_is_a_data_error_and_leaves_no_copy(files, tmp_path, own_temp, name, backend):
    path = bad_files(tmp_path, files)[name]
    with pytest.raises(DataError) as err:
        engine_for(path, CE, engine=backend)
    assert name in err.value.problem and "truncated nor encrypted" in err.value.fix
    assert copies(own_temp) == []


def test_a_full_device_is_named_as_such_and_leaves_no_copy(files, own_temp, monkeypatch):
    import pyarrow.parquet as pq

    def full(self, table, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    with pytest.raises(DataError) as err:
        engine_for(files["sav"], CE)
    assert "cannot write the private Parquet copy" in err.value.problem and "free space" in err.value.fix
    assert copies(own_temp) == []


def test_the_command_line_exits_2_on_an_unreadable_file(files, tmp_path, own_temp, capsys):
    path = bad_files(tmp_path, files)["truncated.sav"]
    code = main(["domain", "check", str(path), "--domain", str(CE_DOMAIN)])
    assert code == 2 and "cannot read the SPSS (.sav) file" in capsys.readouterr().err
    assert copies(own_temp) == []


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        engine_for(tmp_path / "nope.dta", CE)


# -- domain init -----------------------------------------------------------------------------------


def test_init_takes_the_codebook_from_the_metadata(files, tmp_path):
    skeleton = init_domain(files["sav"])
    text = skeleton.text
    assert "metadata as public" in text and "read no value of the data" in text
    spec = yaml.safe_load(text)["columns"]
    assert spec["Race"]["kind"] == "categorical"
    assert spec["Race"]["categories"] == [1, 2, 3, 4, 5, 6]  # the declared missing codes are states, not categories
    assert spec["Race"]["labels"] == list(RACE.values())
    assert spec["Race"]["missing"] == {"codes": {-9: "not applicable", -8: "refused"}}
    assert spec["UrbanRural"]["categories"] == [1, 2] and spec["UrbanRural"]["labels"] == ["Urban", "Rural"]
    assert {name: c["description"] for name, c in spec.items()} == DESCRIPTIONS
    assert spec["Income"]["kind"] == "numeric" and spec["Income"]["lower"] == "TODO"  # no value labels: bounds are the steward's
    assert skeleton.todos == 6  # lower, upper and bins of the two numeric columns
    assert "98600" not in text  # the first record's income
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(filled(text, "sav"), sort_keys=False))
    race = Domain.load(path)["Race"]
    assert race.labels == tuple(RACE.values()) and race.missing is not None and race.n_codes == 6 + 2


def test_init_reads_no_value(files, tmp_path):
    """Half a file: its records are cut off, its metadata whole; init writes the same skeleton."""
    data = files["sav"].read_bytes()
    cut = tmp_path / "ce.sav"
    cut.write_bytes(data[: len(data) // 2])
    assert init_domain(cut).text == init_domain(files["sav"]).text


def test_init_of_stata_and_sas_files(files, tmp_path):
    stata = yaml.safe_load(init_domain(files["dta"]).text)["columns"]
    assert stata["Race"]["labels"][2:] == list(RACE.values()) and stata["Income"]["description"] == DESCRIPTIONS["Income"]
    sas = yaml.safe_load(init_domain(files["xpt"]).text)["columns"]
    assert sas["RACE"]["kind"] == "numeric" and "labels" not in sas["RACE"]  # SAS keeps value labels in a catalog
    assert sas["RACE"]["description"] == DESCRIPTIONS["Race"]
    # Stata's lettered missing values: labelled, never among the values
    path = tmp_path / "m.dta"
    frame = pd.DataFrame({"q": pd.Series([1.0, 2.0, "a"], dtype=object)})
    pyreadstat.write_dta(
        frame, str(path), variable_value_labels={"q": {1: "yes", 2: "no", "a": "refused"}}, missing_user_values={"q": ["a"]}
    )
    text = init_domain(path).text
    q = yaml.safe_load(text)["columns"]["q"]
    assert q["categories"] == [1, 2] and q["missing"] == {"empty": "system missing (.)", "codes": {".a": "refused"}}
    ranged = tmp_path / "r.sav"  # an SPSS missing range cannot be listed code by code: named for the steward
    pyreadstat.write_sav(pd.DataFrame({"x": [1.0, 97.0]}), str(ranged), missing_ranges={"x": [{"lo": 90.0, "hi": 99.0}]})
    text = init_domain(ranged).text
    assert "missing range(s) 90 to 99" in text and "missing" not in yaml.safe_load(text)["columns"]["x"]


def test_init_of_dates_leaves_the_kind_to_the_steward(tmp_path):
    import datetime as dt

    path = tmp_path / "d.sav"
    pyreadstat.write_sav(pd.DataFrame({"born": [dt.date(1990, 1, 1)], "n": [1.0]}), str(path))
    spec = yaml.safe_load(init_domain(path).text)["columns"]
    assert spec["born"]["kind"] == "TODO" and spec["n"]["kind"] == "numeric"


def test_init_refuses_numbers_labelled_on_a_text_column(files, monkeypatch):
    import dipsy.authoring as authoring

    odd = [Variable("code", "string", "A8", "", {1: "one", "2": "two"})]
    monkeypatch.setattr(authoring, "file_metadata", lambda path: odd)
    with pytest.raises(DataError) as err:
        init_domain(files["sav"])
    assert "'code' holds text" in err.value.problem and "1" in err.value.problem and err.value.fix


def test_a_label_set_that_is_no_category_list_is_refused(files, monkeypatch):
    import dipsy.authoring as authoring

    codes = {float(i): f"code {i}" for i in range(3)}
    monkeypatch.setattr("dipsy.domain.columns.MAX_CODES", 2)  # three labelled codes: more than a column may have
    monkeypatch.setattr(authoring, "file_metadata", lambda path: [Variable("x", "double", "F8.0", "", codes)])
    with pytest.raises(DataError, match="value labels of column 'x' cannot be its categories"):
        init_domain(files["sav"])


def test_two_codes_may_share_a_label(tmp_path):
    path = tmp_path / "s.sav"
    pyreadstat.write_sav(pd.DataFrame({"x": [1.0]}), str(path), variable_value_labels={"x": {1: "other", 2: "other"}})
    assert yaml.safe_load(init_domain(path).text)["columns"]["x"]["labels"] == ["other", "other"]


# -- releases in the agencies' formats --------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["sav", "dta", "xpt"])
def test_a_release_round_trips_with_its_labels(files, tmp_path, fmt, own_temp):
    source = files[fmt]
    domain_path = tmp_path / "domain.yaml"
    domain_path.write_text(yaml.safe_dump(filled(init_domain(source).text, fmt), sort_keys=False))
    # all four columns at a small ε: noisy, and what is checked here is how the records are written
    release = dipsy.synthesize(source, domain_path, method="dirichlet-multinomial", epsilon=1.0, seed=7, accept_noise=True)
    assert copies(own_temp) == []  # the engine is closed, its copy gone
    out = release.save(tmp_path / "rel", format=fmt)
    assert sorted(p.name for p in out.iterdir()) == ["domain.yaml", "release.json", f"synthetic_1.{fmt}"]
    back, meta = READ[fmt](str(out / f"synthetic_1.{fmt}"), **READ_AS_DIPSY[fmt])
    table = release.tables[0]
    assert list(back.columns) == list(table.columns)
    for name in table.columns:
        assert np.array_equal(back[name].to_numpy(dtype=float), table[name].to_numpy(dtype=float)), name
    rename = names(fmt)
    assert meta.column_names_to_labels == {rename[n]: d for n, d in DESCRIPTIONS.items()}
    if fmt == "xpt":
        assert meta.variable_value_labels == {}  # a transport file holds no value labels
    else:
        assert meta.variable_value_labels == {"UrbanRural": URBAN, "Race": {**RACE_MISSING, **RACE}}
    if fmt == "sav":  # the missing states the domain took from the file are declared missing again
        assert meta.missing_ranges == {"Race": [{"lo": -9.0, "hi": -9.0}, {"lo": -8.0, "hi": -8.0}]}
        assert meta.variable_measure == {"UrbanRural": "nominal", "Income": "scale", "Race": "nominal", "Expenditure": "scale"}
    size = (out / f"synthetic_1.{fmt}").stat().st_size
    assert size <= estimate_bytes(release.domain, "records", 1, len(table), fmt)
    release.save(out, format=fmt, overwrite=True)  # a release in these formats is one --overwrite may replace


def test_the_ledger_names_the_original_file(files, tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    dipsy.synthesize(files["dta"], ce_domain("dta").project(["Race"]), epsilon=1.0, ledger=ledger)
    assert [s["dataset_id"] for s in Ledger(ledger).spends()] == [hashlib.sha256(files["dta"].read_bytes()).hexdigest()]


def labelled(*columns: Column) -> Domain:
    return Domain(columns)


@pytest.mark.parametrize(
    "fmt, domain, words",
    [
        ("xpt", CE, "'UrbanRural': SAS transport (.xpt) cannot store it"),  # 10 characters: version 5 takes 8
        ("xpt", labelled(Column("X", "integer", lower=0, upper=9, description="d" * 41)), "description comes back as"),
        ("xpt", labelled(Column("X", "numeric", lower=0, upper=1e80)), "the bound 1e+80 comes back as inf"),
        ("dta", labelled(Column("X", "categorical", categories=("a", "b"), labels=("A", "B"))), "Stata's value labels"),
        ("dta", labelled(Column("X", "categorical", categories=(1.5, 2), labels=("A", "B"))), "1.5 is not one"),
        ("dta", labelled(Column("x" * 33, "integer", lower=0, upper=9)), "Stata (.dta) cannot store it"),
        ("dta", labelled(Column("in", "integer", lower=0, upper=9)), "reserved word"),
        (
            "sav",
            labelled(Column("X", "categorical", categories=(1, 2), labels=("v" * 121, "w"))),
            "value labels do not come back",
        ),
        ("sav", labelled(Column("x" * 65, "integer", lower=0, upper=9)), "SPSS (.sav) cannot store it"),
    ],
)
def test_what_a_format_cannot_store_is_refused(fmt, domain, words):
    with pytest.raises(ReleaseError) as err:
        check_storable(domain, fmt)
    assert words in str(err.value) and err.value.fix


@pytest.mark.parametrize("fmt", ["dta", "sav", "xpt"])
def test_what_a_format_stores_passes(fmt):
    check_storable(labelled(Column("X", "categorical", categories=(1, 2), labels=("A", "B"), description="ok")), fmt)
    check_storable(labelled(Column("S", "categorical", categories=("a", "b"))), fmt)  # text without labels


def test_a_release_a_format_cannot_store_is_refused_before_the_charge(files, tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    output = Output(tmp_path / "rel", "xpt")
    with pytest.raises(ReleaseError):
        dipsy.synthesize(
            CE_DATA, CE_DOMAIN, columns=["UrbanRural"], epsilon=1.0, ledger=ledger, on_release=output, check_output=output.check
        )
    assert Ledger(ledger).spends() == [] and not (tmp_path / "rel").exists()


def test_streamed_and_partitioned_sets_are_not_written_in_these_formats(tmp_path):
    with pytest.raises(ReleaseError, match="part files"):
        write_set([pd.DataFrame({"Race": [1]})], tmp_path / "s", "dta", CE.project(["Race"]))
    with pytest.raises(ReleaseError, match="partition"):
        check_storable(CE, "sav", ("UrbanRural",))
    ledger = tmp_path / "ledger.sqlite"
    from dipsy.api import run
    from dipsy.request import Destination, Request

    request = Request(CE_DATA, CE_DOMAIN, epsilon=1.0, stream=True, output=Destination(tmp_path / "rel", "dta"), ledger=ledger)
    with pytest.raises(ReleaseError, match="streamed"):
        run(request)
    assert Ledger(ledger).spends() == []


def test_an_engine_over_a_converted_file_reads_what_duckdb_reads_of_the_copy(files):
    """The copy is an ordinary Parquet file: DuckDB over it directly gives the engine's answers."""
    domain = ce_domain("sav")
    copy = ParquetCopy(files["sav"])
    direct = DuckDBEngine(copy.path, domain)
    engine = engine_for(files["sav"], domain)
    assert_agree(direct, engine, domain)
    direct.close(), engine.close(), copy.remove()


def test_a_public_file_that_is_the_data_in_an_agency_format_is_caught(files, tmp_path, own_temp):
    """The data re-saved as Stata or SPSS, given as public input (or the other way round), holds the
    same rows: caught through the private copies, which are removed after."""
    from dipsy.engine.copies import copy_of

    rows = len(pd.read_csv(CE_DATA))
    for fmt in ("dta", "sav"):
        assert copy_of(files[fmt], CE_DATA, rows) == "it holds the same rows", fmt
        assert copy_of(CE_DATA, files[fmt], rows) == "it holds the same rows", fmt
    half = tmp_path / "half.dta"
    pyreadstat.write_dta(pd.read_csv(CE_DATA).head(rows // 2), str(half))
    other = tmp_path / "other.dta"  # as many rows, other values: not a copy
    pyreadstat.write_dta(pd.read_csv(CE_DATA).assign(Income=lambda f: f["Income"] + 1), str(other))
    assert copy_of(half, CE_DATA, rows) is None and copy_of(other, CE_DATA, rows) is None
    assert copies(own_temp) == []


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_evaluate_reads_the_original_and_the_release_in_the_agency_format(files, tmp_path, fmt, own_temp):
    """The original as the agency file and the release written in its format: evaluate reads both as
    the engines read them (codes; SPSS's declared missing codes as the states they are)."""
    domain_path = tmp_path / "domain.yaml"
    domain_path.write_text(yaml.safe_dump(filled(init_domain(files[fmt]).text, fmt), sort_keys=False))
    release = dipsy.synthesize(files[fmt], domain_path, columns=["Race", "UrbanRural"], epsilon=50.0, seed=3)
    out = release.save(tmp_path / "rel", format=fmt)
    metrics = dipsy.evaluate(files[fmt], out)
    parquet = dipsy.evaluate(files[fmt], release)  # the same records, in memory
    assert metrics["marginals"] == parquet["marginals"]
    if fmt == "sav":  # Race's declared missing codes are states: their shares are compared
        assert set(metrics["missing"]) == {"Race"} and metrics["missing"]["Race"]["original"] == pytest.approx(
            parquet["missing"]["Race"]["original"]
        )
    assert copies(own_temp) == []
