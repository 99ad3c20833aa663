"""The request: one frozen value says what a release is; the command line and the API build the
same one, and the release records its public fields."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
import dipsy.api
import dipsy.cli
from dipsy.domain import Domain
from dipsy.errors import DataError, DipsyError
from dipsy.request import Destination, Request


class Captured(Exception):
    """Raised by :func:`capturing`'s stand-in for :func:`dipsy.api.run`."""


def capturing(seen: list[Request]):
    """A stand-in for :func:`dipsy.api.run` that notes the request it is handed and runs nothing."""

    def run(request: Request, **hooks: object) -> None:
        seen.append(request)
        raise Captured

    return run


def test_a_request_cannot_change():
    options = {"alpha": "10"}
    request = Request(CE_DATA, CE_DOMAIN, epsilon=1.0, options=options, columns=["Race"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.epsilon = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        request.options["alpha"] = "1"  # type: ignore[index]
    options["alpha"] = "1"  # the caller's dict is the caller's
    assert request.options == {"alpha": "10"}
    assert request.columns == ("Race",)


def test_a_request_refuses_what_is_wrong_on_its_face():
    with pytest.raises(DipsyError, match="data set id '  ' is empty"):
        Request(CE_DATA, CE_DOMAIN, dataset_id="  ")
    with pytest.raises(DataError, match="on_invalid is 'skip'"):
        Request(CE_DATA, CE_DOMAIN, on_invalid="skip")
    with pytest.raises(DataError, match="cannot read data of type int"):
        Request(3, CE_DOMAIN)  # type: ignore[arg-type]


def test_data_in_memory_are_neither_shown_nor_compared_by_value():
    frame = pd.DataFrame({"x": ["confidential-value"]})
    request = Request(frame, Domain.from_sizes({"x": 2}))
    assert "confidential-value" not in repr(request)
    assert request == dataclasses.replace(request)  # the same frame
    assert request != dataclasses.replace(request, data=frame.copy())


def test_the_command_line_and_the_api_build_the_same_request(monkeypatch, tmp_path):
    ledger = tmp_path / "mine.sqlite"
    out = tmp_path / "out"
    seen: list[Request] = []
    monkeypatch.setattr(dipsy.cli, "run", capturing(seen))
    monkeypatch.setattr(dipsy.api, "run", capturing(seen))
    monkeypatch.setattr(dipsy.cli, "_Recording", lambda path: None)  # no ledger file: nothing is run

    dipsy.cli.main(
        [
            "synth",
            str(CE_DATA),
            "--domain",
            str(CE_DOMAIN),
            "--method",
            "dirichlet-multinomial",
            "--epsilon",
            "2",
            "--columns",
            "Race,UrbanRural",
            "--seed",
            "7",
            "--option",
            "alpha=3",
            "--out",
            str(out),
            "--format",
            "csv",
            "--ledger",
            str(ledger),
            "--dataset-id",
            "ce",
            "--on-invalid",
            "drop",
            "--sets",
            "2",
        ]
    )
    with pytest.raises(Captured):
        dipsy.synthesize(
            str(CE_DATA),
            Domain.load(CE_DOMAIN),
            "dirichlet-multinomial",
            2.0,
            2,
            columns=["Race", "UrbanRural"],
            seed=7,
            options={"alpha": "3"},
            ledger=ledger,
            dataset_id="ce",
            on_invalid="drop",
        )
    from_cli, from_api = seen
    assert from_cli.output == Destination(out, "csv")
    assert dataclasses.replace(from_cli, output=None) == from_api
    assert from_api != dataclasses.replace(from_api, seed=8)


def test_the_release_records_the_public_request(tmp_path):
    ledger = tmp_path / "mine.sqlite"
    release = dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        "dirichlet-multinomial",
        2.0,
        columns=["Race"],
        seed=7,
        options={"alpha": 500.0},
        ledger=ledger,
        dataset_id="ce-request-test",
    )
    folder = release.save(tmp_path / "out")
    text = (folder / "release.json").read_text(encoding="utf-8")
    recorded = json.loads(text)["request"]
    assert recorded == {
        "method": "dirichlet-multinomial",
        "epsilon": 2.0,
        "delta": None,
        "rho": None,
        "sets": 1,
        "columns": ["Race"],
        "options": {"alpha": 500.0},
        "neighbouring": None,
        "release": "records",
        "seed": 7,
        "on_invalid": "error",
        "accept_noise": False,
        "rows": None,
        "stream": False,
        "engine": None,
        "recorded_in_ledger": True,
        "output": None,
    }
    # Never the confidential data's path, the ledger's, or the data set's name in it.
    for secret in (str(Path(CE_DATA).parent), "ce-request-test", str(tmp_path)):
        assert secret not in text


def test_a_request_with_an_output_is_written_there(tmp_path):
    out = tmp_path / "out"
    request = Request(CE_DATA, CE_DOMAIN, epsilon=2.0, columns=("Race",), seed=1, output=Destination(out, "csv"))
    release = dipsy.api.run(request)
    meta = json.loads((out / "release.json").read_text(encoding="utf-8"))
    assert (out / "synthetic_1.csv").exists() and meta["release_id"] == release.release_id
    assert meta["request"]["output"] == {"format": "csv", "partition_by": []}
