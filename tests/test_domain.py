"""Domain files, columns, the codec and its checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dipsy.domain import Column, Domain, decode, encode_column, encode_frame
from dipsy.engine import NumpyEngine
from dipsy.errors import DataError, DomainError

CE = Path(__file__).resolve().parents[1] / "examples" / "ce"


def test_ce_domain_loads_with_its_shape_and_round_trips_through_yaml(tmp_path):
    d = Domain.load(CE / "domain.yaml")
    assert d.names == ("UrbanRural", "Income", "Race", "Expenditure")
    assert d.shape() == (2, 10, 6, 8)
    assert d["Race"].labels[0] == "White" and d["UrbanRural"].role == "public"
    d.save(tmp_path / "d.yaml")
    d.save(tmp_path / "d.json")
    assert Domain.load(tmp_path / "d.yaml") == d == Domain.load(tmp_path / "d.json")
    assert Domain.load(tmp_path / "d.yaml").sha256() == d.sha256()


def test_sizes_json_is_read_as_integer_codes(tmp_path):
    (tmp_path / "d.json").write_text('{"age": 85, "sex": 2}')
    d = Domain.load(tmp_path / "d.json")
    assert d.shape() == (85, 2) and d["age"].kind == "integer" and d["age"].upper == 84


def test_bin_count_gives_equal_widths_and_integer_bins_hold_whole_numbers():
    c = Column.from_dict("age", {"kind": "integer", "lower": 0, "upper": 84, "bins": 5})
    low, high = c.integer_bin_ranges()
    assert low.tolist() == [0, 17, 34, 51, 68] and high.tolist() == [16, 33, 50, 67, 84]
    n = Column.from_dict("x", {"kind": "numeric", "lower": 0, "upper": 1, "bins": 4})
    assert n.bins == (0.0, 0.25, 0.5, 0.75, 1.0)


BAD_COLUMNS = [
    ({"kind": "text"}, "kind 'text'"),
    ({"categories": [1, 2]}, "no kind"),
    ({"kind": "categorical"}, "no categories"),
    ({"kind": "categorical", "categories": [1, 1.0]}, "twice"),
    ({"kind": "categorical", "categories": [1, 2], "labels": ["a"]}, "1 labels for 2"),
    ({"kind": "categorical", "categories": [1], "lower": 0}, "bounds or bins"),
    ({"kind": "numeric", "lower": 0}, "needs numeric public bounds"),
    ({"kind": "numeric", "lower": 5, "upper": 1}, "lower < upper"),
    ({"kind": "integer", "lower": 0.5, "upper": 3}, "non-integer bounds"),
    ({"kind": "numeric", "lower": 0, "upper": 1, "bins": [0, 0.7, 0.5, 1]}, "rise strictly"),
    ({"kind": "numeric", "lower": 0, "upper": 1, "bins": [0.1, 1]}, "rise strictly"),
    ({"kind": "integer", "lower": 0, "upper": 2, "bins": [0, 0.3, 0.6, 2]}, "holds no whole number"),
    ({"kind": "numeric", "lower": 0, "upper": 1, "bins": 0}, "0 bins"),
    ({"kind": "numeric", "lower": 0, "upper": 1, "role": "secret"}, "role 'secret'"),
    ({"kind": "numeric", "lower": 0, "upper": 1, "size": 3}, "unknown field"),
]


@pytest.mark.parametrize("spec, message", BAD_COLUMNS)
def test_bad_columns_are_refused_with_the_column_named(spec, message):
    with pytest.raises(DomainError, match=message) as e:
        Column.from_dict("col", spec)
    assert "'col'" in str(e.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("columns: [a, b", "malformed"),
        ("- a\n- b\n", "not a mapping"),
        ("name: x\n", "no 'columns:'"),
        ("columns: {}\n", "no columns"),
        ("columns:\n  a: {kind: numeric, lower: 0, upper: 1}\nextra: 1\n", "unknown field"),
    ],
)
def test_bad_domain_files_are_refused(tmp_path, text, message):
    (tmp_path / "d.yaml").write_text(text)
    with pytest.raises(DomainError, match=message):
        Domain.load(tmp_path / "d.yaml")


def test_missing_domain_file_names_the_path():
    with pytest.raises(DomainError, match="does not exist"):
        Domain.load("/nonexistent/domain.yaml")


def test_numeric_column_without_bins_has_no_cells():
    d = Domain((Column("x", "numeric", lower=0, upper=1),))
    with pytest.raises(DomainError, match="numeric without bins"):
        d.shape()


def test_validation_names_column_values_and_rows():
    d = Domain.load(CE / "domain.yaml")
    frame = pd.DataFrame(
        {
            "UrbanRural": [1, 2, 3, 3, None],
            "Income": [1.0, -5.0, 2e6, 10.0, 20.0],
            "Race": [1, 2, 6, 7, 1],
            "Expenditure": [1.0, 2.0, 3.0, "abc", 5.0],
        }
    )
    _, report = encode_frame(frame, d)
    assert (report.rows, report.invalid_rows) == (5, 4)
    text = report.summary()
    for piece in (
        "'UrbanRural': 2 rows with values outside the domain (e.g. 3.0)",
        "'UrbanRural': 1 row with missing",
        "'Income': 2 rows with values outside the domain (e.g. -5.0, 2000000.0)",
        "'Race': 1 row",
        "'Expenditure': 1 row with values of the wrong type (e.g. abc)",
    ):
        assert piece in text
    with pytest.raises(DataError, match="--on-invalid drop"):
        report.raise_if_invalid()


def test_numbers_match_numeric_categories_in_any_spelling():
    c = Column("r", "categorical", categories=(1, 2))
    assert encode_column(pd.Series(["1", "2.0", 1.0, 2, "x"]), c).codes.tolist() == [0, 1, 0, 1, -1]
    s = Column("s", "categorical", categories=("1", "b"))
    assert encode_column(pd.Series([1.0, None, 3.0]), s).codes.tolist() == [0, -1, -1]


# -- round trips -------------------------------------------------------------------------------


@st.composite
def columns(draw):
    kind = draw(st.sampled_from(["categorical", "ordinal", "integer", "numeric"]))
    if kind in ("categorical", "ordinal"):
        cats = draw(
            st.one_of(
                st.lists(st.integers(-50, 50), min_size=1, max_size=8, unique=True),
                st.lists(st.text("abcxyz ", min_size=1, max_size=4), min_size=1, max_size=8, unique=True),
            )
        )
        return Column("c", kind, categories=tuple(cats))
    lower = draw(st.integers(-1000, 1000))
    upper = lower + draw(st.integers(1, 500))
    bins = draw(st.one_of(st.none(), st.integers(1, 12))) if kind == "integer" else draw(st.integers(1, 12))
    if kind == "integer" and bins is not None:
        bins = min(bins, upper - lower + 1)
    return Column.from_dict(
        "c",
        {"kind": kind, "lower": lower, "upper": upper, "bins": bins} if bins else {"kind": kind, "lower": lower, "upper": upper},
    )


@settings(max_examples=150, deadline=None)
@given(column=columns(), data=st.data())
def test_codes_decode_to_values_that_encode_to_the_same_codes(column, data):
    codes = np.array(data.draw(st.lists(st.integers(0, column.size - 1), min_size=1, max_size=40)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    values = decode({"c": codes}, Domain((column,)), rng)["c"]
    encoded = encode_column(values, column)
    assert not encoded.invalid.any()
    assert encoded.codes.tolist() == codes.tolist()


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_exact_kinds_decode_back_to_the_same_values(data):
    column = data.draw(columns().filter(lambda c: c.kind != "numeric" and (c.is_categorical or c.bins is None)))
    values = pd.Series(data.draw(st.lists(st.sampled_from(range(column.size)), min_size=1, max_size=30)))
    values = decode({"c": values.to_numpy()}, Domain((column,)), np.random.default_rng(0))["c"]
    again = decode({"c": encode_column(values, column).codes}, Domain((column,)), np.random.default_rng(1))["c"]
    assert again.tolist() == values.tolist()


def test_categories_that_read_as_the_same_text_are_refused():
    with pytest.raises(DomainError, match="twice"):
        Column("c", "categorical", categories=(1, "1"))


def test_huge_whole_floats_are_matched_as_text_without_overflow():
    c = Column("s", "categorical", categories=("1", "x", 2.0))
    assert c.category_texts == ("1", "x", "2")
    with np.errstate(all="raise"):
        assert encode_column(pd.Series([1e20, 1.0, 2.0]), c).codes.tolist() == [-1, 0, 2]


# -- YAML's surprises, TODO placeholders ----------------------------------------------------------

YAML_PITFALLS = [
    (
        "unquoted yes/no",
        "  Smoker: {kind: categorical, categories: [yes, no]}\n",
        ["column 'Smoker'", "the category yes (line 2)", "boolean true", "quote it: 'yes'"],
    ),
    (
        "unquoted Off",
        "  Light:\n    kind: categorical\n    categories: ['dim', Off]\n",
        ["column 'Light'", "the category Off (line 4)", "boolean false", "quote it: 'Off'"],
    ),
    ("a label", "  Smoker: {kind: categorical, categories: [1, 2], labels: [on, off]}\n", ["the label on", "quote it: 'on'"]),
    ("a column name", "  no: {kind: categorical, categories: [a, b]}\n", ["the column name no (line 2)", "quote it: 'no'"]),
    (
        "octal",
        "  Code: {kind: categorical, categories: [01, 02, 010]}\n",
        ["the category 010", "the number 8", "quote it ('010')"],
    ),
    ("sexagesimal", "  Code: {kind: categorical, categories: [1:30]}\n", ["the category 1:30", "the number 90"]),
    (
        "07 a number, 08 text",
        "  Code: {kind: categorical, categories: [06, 07, 08, 09]}\n",
        ["column 'Code' lists 06 (line 2) as the number 6 but 08 (line 2) as the text '08'", "quote every category"],
    ),
    ("empty", "  Code: {kind: categorical, categories: [a, ~]}\n", ["the category ~", "empty"]),
]


@pytest.mark.parametrize("case, columns, pieces", YAML_PITFALLS, ids=[c[0] for c in YAML_PITFALLS])
def test_yaml_surprises_are_refused_quoting_the_text_as_written(tmp_path, case, columns, pieces):
    (tmp_path / "d.yaml").write_text("columns:\n" + columns)
    with pytest.raises(DomainError) as e:
        Domain.load(tmp_path / "d.yaml")
    assert all(p in str(e.value) for p in pieces), str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "categories, read",
    [
        ("['yes', 'no']", ("yes", "no")),
        ("[01, 02, 07]", (1, 2, 7)),  # leading zeros that read as the same numbers: matched as numbers, as meant
        ("['07', '08']", ("07", "08")),
        ("[1, 2, x3, 1.5]", (1, 2, "x3", 1.5)),
    ],
)
def test_what_yaml_reads_as_written_loads(tmp_path, categories, read):
    (tmp_path / "d.yaml").write_text(f"columns:\n  c: {{kind: categorical, categories: {categories}}}\n")
    assert Domain.load(tmp_path / "d.yaml")["c"].categories == read


def test_todo_placeholders_are_refused_each_named():
    spec = {
        "columns": {
            "Sex": {"kind": "categorical", "categories": "TODO"},
            "Wage": {"kind": "numeric", "lower": 0, "upper": "TODO", "bins": [0, "TODO", 10]},
            "Ok": {"kind": "categorical", "categories": ["TODO", "done"]},
        }
    }  # a category may be called TODO
    with pytest.raises(DomainError, match=r"3 TODO placeholders to fill: Sex \(categories\); Wage \(upper, bins\); declare"):
        Domain.from_dict(spec)


# -- numbers against text, at check time -------------------------------------------------------------


@pytest.mark.parametrize(
    "categories, values, pieces",
    [
        (
            (1, 2),
            ["M", "F", "M"],
            ["values of the wrong type (e.g. M, F)", "lists its categories as numbers (1, 2) and these values are text"],
        ),
        (("01", "02"), [1, 2, 1], ["outside the domain (e.g. 1, 2)", "lists '01', '02' as text", "these values are numbers"]),
        (("Male", "Female"), [1, 2], ["outside the domain (e.g. 1, 2)", "categories are text ('Male', 'Female')", "labels:"]),
    ],
)
def test_numbers_against_text_are_explained_with_both_forms(categories, values, pieces):
    domain = Domain((Column("Sex", "categorical", categories=categories),))
    report = NumpyEngine(pd.DataFrame({"Sex": values}), domain).report
    assert all(p in report.summary() for p in pieces), report.summary()
    with pytest.raises(DataError) as e:
        report.raise_if_invalid()
    assert "column 'Sex'" in str(e.value)


def test_other_mismatches_get_no_hint():
    domain = Domain((Column("Sex", "categorical", categories=("F", "M")), Column("n", "categorical", categories=(1, 2))))
    report = NumpyEngine(pd.DataFrame({"Sex": ["F", "X"], "n": [1, 3]}), domain).report
    assert [i.hint for i in report.issues] == ["", ""]


# -- clipping (top- and bottom-coding) -------------------------------------------------------------


def test_clip_is_declared_on_integer_and_numeric_columns_only():
    c = Column.from_dict("Wage", {"kind": "numeric", "lower": 0, "upper": 20000, "bins": 4, "clip": True})
    assert c.clip and c.to_dict()["clip"] is True
    assert "clip" not in Column("Wage", "numeric", lower=0, upper=1).to_dict()  # a domain without clipping keeps its fingerprint
    with pytest.raises(DomainError, match="'Race' is categorical and has clip: true"):
        Column.from_dict("Race", {"kind": "categorical", "categories": [1, 2], "clip": True})
    with pytest.raises(DomainError, match="clip: 'yes'"):
        Column.from_dict("Wage", {"kind": "numeric", "lower": 0, "upper": 1, "clip": "yes"})


def test_clip_sets_values_outside_to_the_nearest_bound_and_keeps_the_other_checks():
    c = Column("Age", "integer", lower=18, upper=90, bins=(18, 30, 65, 90), clip=True)
    e = encode_column(pd.Series([10, 18, 95, 50.0, float("inf"), 2.5, None, "x"]), c)
    assert e.codes.tolist() == [0, 0, 2, 1, 2, -1, -1, -1]
    assert e.outside.sum() == 0 and e.wrong_type.tolist()[5:] == [True, False, True] and e.missing[6]
    plain = encode_column(pd.Series([10, 95]), Column("Age", "integer", lower=18, upper=90))
    assert plain.outside.tolist() == [True, True]


def test_the_release_states_clipping_from_the_domain_alone():
    import dipsy

    domain = Domain(
        (
            Column("Wage", "numeric", lower=0, upper=20000, bins=(0, 1000, 5000, 20000), clip=True),
            Column("Sex", "categorical", categories=("F", "M")),
        )
    )
    line = "Wage: values outside [0, 20000] set to the nearest bound (top/bottom-coding declared in the domain)"
    assert domain.transformations() == (line,)
    frame = pd.DataFrame({"Wage": [500.0, 250000.0, -3.0, 7000.0] * 100, "Sex": ["F", "M", "F", "M"] * 100})
    for seed in (None, 3):
        meta = dipsy.synthesize(frame, domain, epsilon=5.0, seed=seed).metadata()
        claim = meta["privacy"] if seed is None else meta["privacy"]["if_unseeded"]
        assert claim["transformations"] == [line]
        assert list(claim).index("transformations") == list(claim).index("public") + 1
    other = Domain((Column("Sex", "categorical", categories=("F", "M")),))
    meta = dipsy.synthesize(frame[["Sex"]], other, epsilon=5.0).metadata()
    assert "transformations" not in meta["privacy"]
