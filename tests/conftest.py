"""Shared fixtures: no test touches the user's real budget ledger, nor the record of the ledgers dipsy created."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"


def address_limited(limit: int, argv: list[str]) -> list[str]:
    """``argv`` run under an address-space limit of ``limit`` bytes, set by a small Python process that
    then becomes ``argv`` (exec): no ``preexec_fn``, which would run Python code in a fork of this
    process, where JAX's threads may already run."""
    cap = (
        "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_AS, (n, n)); "
        "os.execv(sys.argv[2], sys.argv[2:])"
    )
    return [sys.executable, "-c", cap, str(limit), *argv]


def skip_without_spark(what: str) -> None:
    """Skip the calling test module, saying why, unless pyspark and a Java runtime are installed."""
    from dipsy.engine.spark_engine import require_spark
    from dipsy.errors import DataError

    try:
        require_spark()
    except DataError as e:
        pytest.skip(f"{what}: {e}", allow_module_level=True)


@pytest.fixture(scope="session")
def spark_launch():
    """Spark's JVM started without a ``preexec_fn``. PySpark passes one (to ignore Ctrl-C in the JVM),
    which runs Python code in a fork of this process; once a test has run JAX here (mbi's estimation,
    the pseudo-posterior's sampler), JAX's threads run too, and JAX warns of the fork. The JVM starts
    in its own process group instead, where a Ctrl-C at the terminal does not reach it either."""
    from pyspark import java_gateway

    popen = java_gateway.Popen

    def without_preexec(args, **kwargs):
        if kwargs.pop("preexec_fn", None) is not None:
            kwargs["process_group"] = 0
        return popen(args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(java_gateway, "Popen", without_preexec)
        yield


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, tmp_path_factory, monkeypatch):
    """The default ledger in the test's own folder, and the record of the ledgers dipsy created in a
    folder of the test's own beside it."""
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DIPSY_LEDGER", str(path))
    monkeypatch.setenv("DIPSY_CONFIG_DIR", str(tmp_path_factory.mktemp("dipsy-config")))
    return path
