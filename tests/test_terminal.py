"""dipsy.terminal: control characters from data reach the terminal escaped, never raw.

A category holding an ANSI escape sequence (ESC [ 31 m paints the terminal red; ESC [ 2 J clears
it) is shown as ``\\x1b[31m`` on standard output and on standard error, whichever command prints it.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import yaml

from dipsy.cli import _PrintableFormatter, main
from dipsy.terminal import printable

RED = "\x1b[31mred"
SHOWN = "\\x1b[31mred"

PRINTABLE = [
    ("plain text, 1.5 ~ x", "plain text, 1.5 ~ x"),
    ("Région, Größe, 東京, naïve", "Région, Größe, 東京, naïve"),  # letters of any script stay readable
    ("tab\tand\nnewline", "tab\tand\nnewline"),  # layout the output itself uses
    (RED, SHOWN),
    ("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"),
    ("\r\b\x00\x7f", "\\x0d\\x08\\x00\\x7f"),
    ("\x9b31m", "\\x9b31m"),  # C1: a one-byte CSI
    ("\u202egnp.exe", "\\u202egnp.exe"),  # a right-to-left override
    ("back\\slash", "back\\slash"),
]


@pytest.mark.parametrize("text, shown", PRINTABLE)
def test_control_characters_are_escaped_and_the_rest_kept(text, shown):
    assert printable(text) == shown


@pytest.fixture
def hostile(tmp_path):
    """A colour column with a category holding an escape sequence, and a domain that lacks it."""
    data = tmp_path / "colours.csv"
    pd.DataFrame({"colour": ["blue"] * 40 + [RED] * 3, "n": np.arange(43) % 5}).to_csv(data, index=False)
    domain = tmp_path / "domain.yaml"
    domain.write_text(
        yaml.safe_dump(
            {
                "columns": {
                    "colour": {"kind": "categorical", "categories": ["blue"]},
                    "n": {"kind": "integer", "lower": 0, "upper": 4},
                }
            }
        )
    )
    return data, domain


def run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def escaped(text: str) -> bool:
    return SHOWN in text and "\x1b" not in text


def test_domain_check_shows_the_value_escaped_on_stderr_and_stdout(capsys, hostile):
    data, domain = hostile
    code, _, err = run(capsys, "domain", "check", data, "--domain", domain)
    assert code == 2 and escaped(err) and err.count("\n") == 1
    code, out, err = run(capsys, "domain", "check", data, "--domain", domain, "--on-invalid", "drop")
    assert code == 0 and escaped(out) and "3 row(s) would be dropped" in out


def test_synth_refuses_the_value_with_it_escaped(capsys, tmp_path, hostile):
    data, domain = hostile
    code, out, err = run(capsys, "synth", data, "--domain", domain, "--epsilon", "1", "--out", tmp_path / "rel")
    assert code == 2 and escaped(err) and err.startswith("error: ") and err.count("\n") == 1 and "\x1b" not in out


def test_a_domain_category_is_shown_escaped(capsys, tmp_path, hostile):
    data, domain = hostile
    pd.DataFrame({"colour": [7, 8], "n": [0, 1]}).to_csv(data, index=False)  # numbers against text categories
    domain.write_text(
        yaml.safe_dump(
            {
                "columns": {
                    "colour": {"kind": "categorical", "categories": ["blue", RED]},
                    "n": {"kind": "integer", "lower": 0, "upper": 4},
                }
            }
        )
    )
    code, _, err = run(capsys, "domain", "check", data, "--domain", domain)
    assert code == 2 and escaped(err), err


def test_domain_discover_prints_a_discovered_category_escaped(capsys, tmp_path):
    data = tmp_path / "survey.csv"
    pd.DataFrame({"region": ["north"] * 300 + [RED] * 300}).to_csv(data, index=False)
    skeleton = tmp_path / "skeleton.yaml"
    skeleton.write_text(yaml.safe_dump({"columns": {"region": {"kind": "categorical", "categories": "TODO"}}}))
    code, out, err = run(
        capsys,
        "domain",
        "discover",
        data,
        "--domain",
        skeleton,
        "--out",
        tmp_path / "domain.yaml",
        "--epsilon",
        "2",
        "--delta",
        "1e-6",
        "--dataset-id",
        "s",
        "--seed",
        "1",
    )
    assert code == 0, err
    assert escaped(out) and "\x1b" not in err


def test_log_lines_are_escaped():
    record = logging.LogRecord("dipsy", logging.WARNING, __file__, 1, "rows left out: %s", (RED,), None)
    assert _PrintableFormatter("%(levelname)s: %(message)s").format(record) == f"WARNING: rows left out: {SHOWN}"
