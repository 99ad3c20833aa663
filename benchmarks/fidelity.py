"""The fidelity table: each source's claims beside dipsy's numbers, as the benchmarks measured them.

A reproduction benchmark (bowen_liu.py, rdt.py, pseudo_posterior.py, dpsyn's, …) ends by calling
:func:`record` with its rows: the claim, the paper's value, dipsy's value, whether they agree and
by which rule. :func:`record` writes them to ``docs/benchmarks/fidelity/<source>.json`` (one file per
source, replaced whole by the benchmark that owns it) and re-renders ``docs/benchmarks/fidelity.md``
from every such file, so no sentence of the table is typed by hand; tests/test_docs.py checks that
the page is the rendering of the files.

Run alone (``python benchmarks/fidelity.py``) it only re-renders the page.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "benchmarks" / "fidelity"
PAGE = ROOT / "docs" / "benchmarks" / "fidelity.md"
VERDICTS = ("agrees", "differs", "partly", "not reproduced")

HEAD = """# Fidelity to the sources

Each row is one claim of a source, the value the source prints, the value dipsy measures with its
own code paths, and whether they agree by the rule the row names. The table is generated: each
reproduction benchmark writes its rows (`docs/benchmarks/fidelity/<source>.json`) and this page is
rendered from them, so it says no more than the numbers. Where dipsy departs from a paper on
purpose, the row's note says what, why, and how to get the paper's behaviour where dipsy offers it.
"""


@dataclass(frozen=True)
class Row:
    """One claim of a source beside dipsy's measurement.

    Attributes
    ----------
    claim
        What the source says, in a line (with its table, figure or equation number).
    paper
        The source's value as printed (text: "0.95", "α = 6.742953", "holds").
    dipsy
        dipsy's value, with its uncertainty where it is a simulation ("0.834 ± 0.004").
    verdict
        One of ``agrees``, ``differs``, ``partly``, ``not reproduced``.
    rule
        How the verdict was decided ("within 3 SE", "exact to 6 digits", "sign of the paired
        difference, 95 % interval excludes 0").
    note
        A departure, a reconstruction, or why it differs; empty when there is nothing to say.
    reproduce
        The command that measures ``dipsy``.
    """

    claim: str
    paper: str
    dipsy: str
    verdict: str
    rule: str
    note: str = ""
    reproduce: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


def record(source: str, title: str, rows: list[Row], folder: Path = FOLDER, page: Path = PAGE) -> None:
    """Replace ``source``'s rows (e.g. ``"S-003"``, with the paper's short title) and re-render the page."""
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"source": source, "title": title, "rows": [asdict(r) for r in rows]}, indent=1, ensure_ascii=False)
    (folder / f"{source}.json").write_text(text + "\n", encoding="utf-8")
    page.write_text(render(folder), encoding="utf-8")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render(folder: Path = FOLDER) -> str:
    """The page: a table per source, in the order of their names, from ``folder``'s JSON files."""
    out = [HEAD]
    names = [f.name for f in fields(Row)]
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = [Row(**{k: r.get(k, "") for k in names}) for r in data["rows"]]
        counts = {v: sum(r.verdict == v for r in rows) for v in VERDICTS}
        summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        out.append(f"\n## {data['source']}: {data['title']}\n\n{len(rows)} claims: {summary}.\n")
        out.append("| claim | paper | dipsy | verdict | rule | note |\n|---|---|---|---|---|---|")
        for r in rows:
            out.append(
                f"| {_cell(r.claim)} | {_cell(r.paper)} | {_cell(r.dipsy)} | {r.verdict} | {_cell(r.rule)} | {_cell(r.note)} |"
            )
        commands = sorted({r.reproduce for r in rows if r.reproduce})
        if commands:
            out.append("\nReproduce:\n\n```text\n" + "\n".join(f"$ {c}" for c in commands) + "\n```")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
