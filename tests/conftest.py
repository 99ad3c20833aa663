"""Shared fixtures: no test touches the user's real budget ledger."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"


def skip_without_spark(what: str) -> None:
    """Skip the calling test module, saying why, unless pyspark and a Java runtime are installed."""
    pytest.importorskip("pyspark", reason=f"{what} need pyspark (pip install 'dipsy[spark]')")
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home, "bin", "java")) if home else shutil.which("java")
    try:
        ok = bool(java) and subprocess.run([java, "-version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        pytest.skip(f"{what} need a Java 17+ runtime (apt install openjdk-17-jre-headless)", allow_module_level=True)


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DIPSY_LEDGER", str(path))
    return path
