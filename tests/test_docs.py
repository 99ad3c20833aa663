"""Every runnable code block of the documentation runs (docs/**/*.md and README.md).

The convention, by the fence's info string:

- ``python``: executed, in the page's order, in one namespace per page, with the working
  directory a temporary folder in which ``examples`` is the repository's ``examples/``.
- ``console``: each line that starts with ``$ `` is a command (a line ending in ``\\`` continues
  on the next); every other line is output, shown and not checked. ``dipsy ...`` runs through
  :func:`dipsy.cli.main` in the test's process (what the console script calls; a process of its
  own would spend a second importing dipsy again for each of the pages' commands), and
  ``python ...`` with this interpreter, in the same temporary folder as the page's Python blocks;
  each must exit with 0, or with the code its line names in a trailing comment ``# exit N``. ``DIPSY_LEDGER`` and ``DIPSY_CONFIG_DIR`` point into the temporary folder,
  so no block can reach the user's ledger (the commands name a ``--ledger`` of their own anyway).
- ``text``, ``json``, ``yaml``: shown, never run — output, file contents, and commands that are
  too slow for the tests or need data the repository does not hold (``make demo``, Spark, the
  benchmarks, the ACS and Adult releases); such commands are still written with ``$ ``.
- Any other info string (``sh``, ``bash``, none) fails :func:`test_every_block_follows_the_convention`,
  so that no block is skipped by accident.

Runnable blocks use the small CE example (``examples/ce/``, 994 rows), small ε and few sets, so
the whole module stays under a minute of CPU.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
RUN = {"python", "console"}
SHOWN = {"text", "json", "yaml"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+)(?P<info>[^`]*)$")
EXIT = re.compile(r"#\s*exit\s+(?P<code>\d+)\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    info: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, indented ones (in list items) included."""
    found, lines, i = [], page.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, start = len(m["indent"]), m["fence"], i
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        assert i < len(lines), f"{page.relative_to(ROOT)}:{start + 1}: unclosed code block"
        found.append(Block(page, start + 1, m["info"].strip().split(" ")[0], "\n".join(body) + "\n"))
        i += 1
    return found


def commands(block: Block) -> list[tuple[str, int]]:
    """The ``$`` commands of a console block, continuations joined, each with its expected exit code."""
    out, current = [], None
    for line in block.code.splitlines():
        if current is not None:
            current += " " + line.strip()
        elif line.startswith("$ "):
            current = line[2:].strip()
        else:
            continue  # output
        if current.endswith("\\"):
            current = current[:-1].rstrip()
            continue
        m = EXIT.search(current)
        out.append((current, int(m["code"]) if m else 0))
        current = None
    assert current is None, f"{block.where}: a command ends in a continuation"
    return out


def argv(command: str, where: str) -> list[str]:
    words = shlex.split(command, comments=True)
    if words[0] == "dipsy":
        return words
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"{where}: runnable commands are 'dipsy ...' or 'python ...', not {words[0]!r}")


def run(words: list[str], workdir: Path) -> tuple[int, str, str]:
    """Exit code, standard output and error of a command: ``dipsy`` in this process, others in their own."""
    if words[0] != "dipsy":
        done = subprocess.run(words, cwd=workdir, env=os.environ.copy(), capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout, done.stderr
    from dipsy.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(words[1:])
    return code, out.getvalue(), err.getvalue()


ALL = {page: blocks(page) for page in PAGES}
RUNNABLE = [page for page, found in ALL.items() if any(b.info in RUN for b in found)]


def test_every_block_follows_the_convention():
    wrong = [f"{b.where}: ```{b.info}" for found in ALL.values() for b in found if b.info not in RUN | SHOWN]
    assert not wrong, "code blocks must be python, console (run) or text, json, yaml (shown): " + ", ".join(wrong)
    for found in ALL.values():
        for b in found:
            if b.info == "console":
                assert commands(b), f"{b.where}: a console block without a '$ ' command"


def test_the_readme_is_a_landing_page():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_the_fidelity_page_is_generated_from_the_benchmarks_rows():
    """docs/benchmarks/fidelity.md is exactly the rendering of the rows the benchmarks recorded."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fidelity
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert list(fidelity.FOLDER.glob("*.json")), "no benchmark has recorded its rows"
    assert fidelity.PAGE.read_text(encoding="utf-8") == fidelity.render(), (
        "docs/benchmarks/fidelity.md was edited by hand: run python benchmarks/fidelity.py"
    )


def test_every_method_page_lists_its_options():
    from dipsy.methods import REGISTRY

    for name, cls in REGISTRY.items():
        page = (ROOT / "docs" / "methods" / f"{name}.md").read_text(encoding="utf-8")
        missing = [o.name for o in cls.options if f"| `{o.name}` |" not in page]
        assert not missing, f"docs/methods/{name}.md does not list the options {missing}"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DIPSY_LEDGER", str(tmp_path / "default-ledger.sqlite"))
    monkeypatch.setenv("DIPSY_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_the_page_runs(page: Path, workdir: Path):
    namespace: dict = {"__name__": "__docs__"}
    for block in ALL[page]:
        if block.info == "python":
            exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 - the documentation's own code
        elif block.info == "console":
            for command, code in commands(block):
                returncode, stdout, stderr = run(argv(command, block.where), workdir)
                assert returncode == code, (
                    f"{block.where}: `{command}` exited {returncode}, not {code}\n"
                    f"stdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-3000:]}"
                )
    assert not (workdir / "default-ledger.sqlite").exists(), f"{page.relative_to(ROOT)}: a command used the default ledger"
