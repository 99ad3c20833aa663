"""Original and synthetic counts side by side, as in Hu's CE Race example (S-000).

Usage: python examples/ce/compare.py DATA RELEASE_DIR

The original counts are confidential: this is the data steward's view, never part of a release.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

import dipsy


def main(data: str, release_dir: str) -> None:
    folder = Path(release_dir)
    domain = dipsy.Domain.load(folder / "domain.yaml")
    original = pd.read_csv(data)
    sets = sorted(folder.glob("synthetic_*.*"), key=lambda p: int(p.stem.split("_")[1]))
    synthetic = [pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p) for p in sets]
    for column in domain.columns:
        if not column.is_categorical:
            continue
        labels = column.labels or tuple(map(str, column.categories))
        heads = ["original", *(f"DPsynthetic {k}" if len(sets) > 1 else "DPsynthetic" for k in range(1, len(sets) + 1))]
        table = Table(column.name, title=f"{column.name}: original and synthetic counts")
        for head in heads:
            table.add_column(head, justify="right")
        counts = [t[column.name].value_counts() for t in (original, *synthetic)]
        for category, label in zip(column.categories, labels):
            table.add_row(f"{category} {label}", *(str(int(c.get(category, 0))) for c in counts))
        table.add_row("total", *(str(int(c.sum())) for c in counts), style="bold")
        Console().print(table)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    main(sys.argv[1], sys.argv[2])
