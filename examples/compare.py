"""Original and released counts side by side, as in Hu's CE Race example (S-000).

Usage: python examples/compare.py DATA RELEASE_DIR

For a record release, the counts of each categorical column in the original data and in every
synthetic set; for a table release over one column, the original and released count of each cell.
The original counts are confidential: this is the data steward's view, never part of a release.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

import dipsy


def read(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def main(data: str, release_dir: str) -> None:
    folder = Path(release_dir)
    meta = json.loads((folder / "release.json").read_text())
    domain = dipsy.Domain.load(folder / "domain.yaml")
    original = pd.read_csv(data)
    stem = "table" if meta.get("release") == "table" else "synthetic"
    files = sorted(folder.glob(f"{stem}_*.*"), key=lambda p: int(p.stem.split("_")[1]))
    released = [read(p) for p in files]
    heads = ["original", *(f"DPsynthetic {k}" if len(files) > 1 else "DPsynthetic" for k in range(1, len(files) + 1))]
    for column in domain.columns:
        if not column.is_categorical or (stem == "table" and len(domain) > 1):
            continue
        labels = column.labels or tuple(map(str, column.categories))
        table = Table(column.name, title=f"{column.name}: original and {'released' if stem == 'table' else 'synthetic'} counts")
        for head in heads:
            table.add_column(head, justify="right")
        counts = [original[column.name].value_counts()]
        counts += [t.set_index(column.name)["count"] if stem == "table" else t[column.name].value_counts() for t in released]
        for category, label in zip(column.categories, labels):
            name = f"{category} {label}" if column.labels else str(category)
            table.add_row(name, *(str(int(c.get(category, 0))) for c in counts))
        table.add_row("total", *(str(int(c.sum())) for c in counts), style="bold")
        Console().print(table)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1], sys.argv[2])
