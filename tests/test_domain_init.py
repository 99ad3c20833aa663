"""``dipsy domain init``: a skeleton from the data's metadata only, every value TODO; ``--from-public``."""

from __future__ import annotations

import hashlib
import re

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from dipsy.authoring import init_domain
from dipsy.cli import main
from dipsy.domain import Domain
from dipsy.errors import DataError, DomainError

# Values no skeleton could hold by chance: a skeleton that holds one read it from the data.
SECRETS = {
    "Sex": ["Qzx-female", "Qzx-male", "yes"],
    "Wage": [73519.25, 98765.4321, 31337.5],
    "Age": [4242, 17, 93],
    "Region": ["Vlq-North", "Vlq-South", "Vlq-East"],
    "Smoker": [True, False, True],
}
SECRET_TEXTS = ["Qzx", "Vlq", "73519", "98765", "31337", "4242", "93"]


def secret_frame() -> pd.DataFrame:
    return pd.DataFrame(SECRETS)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def placeholders(text: str) -> dict[str, list[str]]:
    """Column → its fields that are TODO, read from the skeleton (comments left out)."""
    spec = yaml.safe_load(text)
    return {
        name: [f for f, v in fields.items() if v == "TODO"]
        for name, fields in spec["columns"].items()
        if any(v == "TODO" for v in fields.values())
    }


def assert_no_secret(text: str) -> None:
    for secret in SECRET_TEXTS:
        assert secret not in text, secret


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_the_skeleton_holds_no_value_of_the_data(tmp_path, suffix):
    path = tmp_path / f"wages{suffix}"
    frame = secret_frame()
    frame.to_parquet(path, index=False) if suffix == ".parquet" else frame.to_csv(path, index=False)
    skeleton = init_domain(path)
    assert skeleton.columns == tuple(SECRETS)
    assert_no_secret(skeleton.text)
    todo = placeholders(skeleton.text)
    if suffix == ".parquet":  # the schema's declared types give the kinds; the values stay TODO
        assert todo == {
            "Sex": ["categories"],
            "Wage": ["lower", "upper", "bins"],
            "Age": ["lower", "upper"],
            "Region": ["categories"],
        }
        spec = yaml.safe_load(skeleton.text)["columns"]
        assert spec["Smoker"]["categories"] == ["False", "True"]  # the boolean type's values, not the data's
        assert [spec[c]["kind"] for c in SECRETS] == ["categorical", "numeric", "integer", "categorical", "categorical"]
    else:  # a CSV's types would be read off its values: every kind is TODO too
        assert all(fields == ["kind", "categories", "lower", "upper", "bins"] for fields in todo.values()) and len(todo) == 5
    assert skeleton.todos == sum(len(f) for f in todo.values())


def test_a_csv_is_read_no_further_than_its_header(tmp_path):
    """Below the header, bytes that are not UTF-8 and not CSV: reading any value would fail."""
    path = tmp_path / "data.csv"
    path.write_bytes(b"\n\nSex,Wage,,Age\n" + bytes(range(128, 256)) * 50 + b'\n"unterminated')
    skeleton = init_domain(path)
    assert skeleton.columns == ("Sex", "Wage", "Unnamed: 2", "Age")  # as pandas and the engines name them


def test_a_parquet_file_is_read_no_further_than_its_schema(tmp_path, monkeypatch):
    path = tmp_path / "data.parquet"
    secret_frame().to_parquet(path)  # with a stored index, which is no column
    for name in ("read_table", "ParquetFile"):
        monkeypatch.setattr(pq, name, lambda *a, **k: pytest.fail("read beyond the schema"))
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: pytest.fail("read the data"))
    assert init_domain(path).columns == tuple(SECRETS)


def test_the_skeleton_is_refused_naming_each_todo_until_filled(tmp_path):
    path = tmp_path / "wages.parquet"
    secret_frame().to_parquet(path, index=False)
    target = tmp_path / "domain.yaml"
    target.write_text(init_domain(path).text)
    with pytest.raises(DomainError) as e:
        Domain.load(target)
    message = str(e.value)
    assert "7 TODO placeholders" in message
    assert "Sex (categories); Wage (lower, upper, bins); Age (lower, upper); Region (categories)" in message
    # Filled from public knowledge, it loads, and the data match it.
    spec = yaml.safe_load(target.read_text())
    public = {
        "Sex": {"categories": ["Qzx-female", "Qzx-male", "yes"]},
        "Region": {"categories": ["Vlq-North", "Vlq-South", "Vlq-East"]},
        "Wage": {"lower": 0, "upper": 100000, "bins": [0, 1000, 10000, 100000]},
        "Age": {"lower": 0, "upper": 5000},
    }
    for name, values in public.items():
        spec["columns"][name].update(values)
    target.write_text(yaml.safe_dump(spec, sort_keys=False))
    domain = Domain.load(target)
    assert domain["Wage"].bins == (0, 1000, 10000, 100000) and domain["Sex"].categories[-1] == "yes"
    from dipsy.engine import engine_for

    engine = engine_for(path, domain)
    assert engine.ensure_valid().ok
    engine.close()


def test_from_public_fills_categories_and_bounds_and_records_the_file(tmp_path):
    data, public = tmp_path / "wages.csv", tmp_path / "release-2019.csv"
    secret_frame().to_csv(data, index=False)
    pd.DataFrame(
        {
            "Sex": ["F", "M", "no", "F"],
            "Wage": [0.0, 150000.5, 20.25, 7.0],
            "Age": [16, 99, 40, 41],
            "Smoker": [True, False, True, True],
        }
    ).to_csv(public, index=False)
    skeleton = init_domain(data, public)
    assert_no_secret(skeleton.text)
    spec = yaml.safe_load(skeleton.text)
    columns = spec["columns"]
    assert columns["Sex"] == {"kind": "categorical", "categories": ["F", "M", "no"], "role": "sensitive"}  # 'no' quoted
    assert (columns["Wage"]["kind"], columns["Wage"]["lower"], columns["Wage"]["upper"]) == ("numeric", 0.0, 150000.5)
    assert (columns["Age"]["kind"], columns["Age"]["lower"], columns["Age"]["upper"]) == ("integer", 16, 99)
    assert columns["Smoker"]["categories"] == ["False", "True"]
    assert placeholders(skeleton.text) == {"Wage": ["bins"], "Region": ["kind", "categories", "lower", "upper", "bins"]}
    assert skeleton.text.split("'Region':\n")[1].startswith("    # not in the public file\n")
    digest = hashlib.sha256(public.read_bytes()).hexdigest()
    assert (
        spec["description"]
        == f"categories and bounds from the public file release-2019.csv (SHA-256 {digest}), by dipsy domain init"
    )
    assert str(tmp_path) not in spec["description"]  # the name, never the operator's path


def test_from_public_leaves_what_the_public_file_cannot_tell(tmp_path):
    data, public = tmp_path / "d.parquet", tmp_path / "p.csv"
    pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [1.5, 2.5]}).to_parquet(data, index=False)
    pd.DataFrame({"a": [3.5, 4.0], "b": [None, None], "c": ["u", "v"]}).to_csv(public, index=False)
    todo = placeholders(init_domain(data, public).text)
    assert todo == {"a": ["lower", "upper"], "b": ["categories"], "c": ["lower", "upper", "bins"]}


def test_unreadable_inputs_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        init_domain(tmp_path / "missing.csv")
    (tmp_path / "d.txt").write_text("a\n1\n")
    with pytest.raises(DataError, match="neither CSV nor Parquet"):
        init_domain(tmp_path / "d.txt")
    (tmp_path / "empty.csv").write_text("\n \n")
    with pytest.raises(DataError, match="no header row"):
        init_domain(tmp_path / "empty.csv")
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    (tmp_path / "p.csv").write_text("x,y\n1,2\n")
    with pytest.raises(DataError, match="none of the data's columns"):
        init_domain(tmp_path / "d.csv", tmp_path / "p.csv")
    with pytest.raises(DataError, match="public file .*neither CSV nor Parquet"):
        init_domain(tmp_path / "d.csv", tmp_path / "d.txt")


def test_cli_writes_the_skeleton_and_refuses_to_overwrite(capsys, tmp_path):
    data = tmp_path / "wages.csv"
    secret_frame().to_csv(data, index=False)
    out = tmp_path / "new" / "folder" / "domain.yaml"
    code, text, err = run(capsys, "domain", "init", data, "--out", out)
    assert code == 0, err
    assert "5 columns" in text and "25 TODO placeholder(s)" in text
    assert_no_secret(out.read_text())
    out.write_text("columns: {}  # the steward's work\n")
    code, _, err = run(capsys, "domain", "init", data, "--out", out)
    assert code == 2 and "already exists" in err and "--overwrite" in err
    assert out.read_text() == "columns: {}  # the steward's work\n"
    code, _, err = run(capsys, "domain", "init", data, "--out", out, "--overwrite")
    assert code == 0 and "TODO" in out.read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["domain.yaml"]  # no temporary file left


@pytest.mark.parametrize(
    "argv, message",
    [
        (lambda t: ["domain", "init", t / "missing.csv", "--out", t / "a" / "b" / "domain.yaml"], "does not exist"),
        (lambda t: ["domain", "init", t / "d.csv", "--out", t / "a" / "domain.json"], "does not end in .yaml"),
        (lambda t: ["domain", "init", t / "d.csv", "--out", t], "is a folder"),
        (
            lambda t: ["domain", "init", t / "d.csv", "--from-public", t / "nope.csv", "--out", t / "a" / "domain.yaml"],
            "public file",
        ),
    ],
)
def test_cli_refusals_leave_nothing_behind(capsys, tmp_path, argv, message):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, _, err = run(capsys, *argv(tmp_path))
    assert code == 2 and message in err and err.startswith("error: ") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_check_says_what_roles_and_clipping_do(capsys, tmp_path):
    (tmp_path / "d.csv").write_text("Region,Wage\n1,120\n2,900000\n")
    (tmp_path / "d.yaml").write_text(
        "columns:\n  Region: {kind: categorical, categories: [1, 2], role: public}\n"
        "  Wage: {kind: numeric, lower: 0, upper: 500000, bins: 4, clip: true}\n"
    )
    code, text, err = run(capsys, "domain", "check", tmp_path / "d.csv", "--domain", tmp_path / "d.yaml")
    assert code == 0, err
    assert "all 2 rows match" in text  # 900000 is clipped, not invalid
    assert re.search(
        r"declares Region public: pseudo-posterior and rdt may release a column declared public as it is "
        r"\(and refuse to repeat any other\); no other method releases a column as it is",
        text,
    )
    assert "Wage: values outside [0, 500000] set to the nearest bound (top/bottom-coding declared in the domain)" in text
