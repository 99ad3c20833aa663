"""dipsy's SDNist k-marginal score (dipsy.evaluation.sdnist) against SDNist 2.4's own code.

On the NIST ACS excerpt (national: 2019 file confidential, examples/acs/domain.yaml), each method
releases one seeded set at ε = 1, δ = 1e-9, scored with ``--groups PUMA`` three ways:

- dipsy: :func:`dipsy.evaluation.sdnist.sdnist_kmarginal`;
- SDNist 2.4's ``KMarginal`` on the codes dipsy counts (dipsy's binning, SDNist's scorer): the score
  and every PUMA's must equal dipsy's to rounding;
- SDNist 2.4 whole: its own binning (``sdnist.report.dataset.binning``) of the raw CSVs, then
  ``KMarginal``. Where it differs, the cause is SDNist's binning of POVPIP (module docstring of
  dipsy.evaluation.sdnist: the original's value 501 is a cell of its own there, a synthetic 501 is
  binned).

SDNist lives in its own virtual environment (build/bench/venvs/sdnist, from PyPI, made here once;
not a project dependency). Writes results.json and results.md under --out (default
build/bench/sdnist). Usage: .venv/bin/python benchmarks/sdnist_check.py [--methods privsyn,mst,aim]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
from peers import ensure_env

import dipsy
from dipsy.domain import Domain
from dipsy.evaluation import read_original
from dipsy.evaluation.sdnist import sdnist_codes, sdnist_kmarginal

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "acs"
CHILD = Path(__file__).resolve().parent / "peers" / "sdnist_score.py"
DELTA, SEED, GROUPS = 1e-9, 0, ["PUMA"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="privsyn,mst,aim")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "sdnist")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    python = ensure_env("sdnist")
    domain = Domain.load(DATA / "domain.yaml")
    private = DATA / "national2019.csv"
    original = read_original(private, domain)
    numeric = [c.name for c in domain.columns if not c.is_categorical]
    rows = []
    for method in args.methods.split(","):
        release = dipsy.synthesize(
            private,
            domain,
            method=method,
            epsilon=args.epsilon,
            delta=DELTA,
            seed=SEED,
            accept_noise=True,
            ledger=False,
        )
        synthetic = release.tables[0]
        ours = sdnist_kmarginal(original, [synthetic], domain, GROUPS, seed=SEED)
        folder = args.out.resolve() / method  # absolute: the child runs in another folder
        folder.mkdir(exist_ok=True)
        original[list(domain.names)].to_csv(folder / "original.csv", index=False)
        synthetic[list(domain.names)].to_csv(folder / "synthetic.csv", index=False)
        codes, _ = sdnist_codes(original, [synthetic], domain, GROUPS)
        for name, c in zip(("original-coded.csv", "synthetic-coded.csv"), codes):
            pd.DataFrame(c).to_csv(folder / name, index=False)
        job = {
            "original": str(folder / "original.csv"),
            "synthetic": str(folder / "synthetic.csv"),
            "numeric": numeric,
            "groups": GROUPS,
            "coded": [str(folder / "original-coded.csv"), str(folder / "synthetic-coded.csv")],
        }
        (folder / "job.json").write_text(json.dumps(job))
        # the child runs from its own folder: a file named like a standard module in the caller's would shadow it
        done = subprocess.run(
            [str(python), str(CHILD), str(folder / "job.json")], capture_output=True, text=True, cwd=CHILD.parent
        )
        if done.returncode:
            sys.exit(f"SDNist failed on {method}:\n{done.stderr[-3000:]}")
        theirs = json.loads(done.stdout.strip().splitlines()[-1])
        groups = ours["by_group"]
        ours_per_group = sdnist_kmarginal(original, [synthetic], domain, GROUPS, seed=SEED, worst=10**6)["by_group"][
            "worst_groups"
        ]
        coded = theirs["dipsy_binning"]["groups"]
        rows.append(
            {
                "method": method,
                "dipsy": ours["score"],
                "sdnist_on_dipsy_codes": theirs["dipsy_binning"]["score"],
                "sdnist": theirs["sdnist_binning"]["score"],
                "dipsy_group_mean": groups["mean"][0],
                "sdnist_group_mean": sum(theirs["sdnist_binning"]["groups"].values()) / len(theirs["sdnist_binning"]["groups"]),
                "dipsy_group_worst": groups["worst"][0],
                "sdnist_group_worst": min(theirs["sdnist_binning"]["groups"].values()),
                "baseline_40": groups["baseline_mean"],
                "max_group_difference_same_codes": max(
                    abs(g["score"] - coded[str(_code(domain, g["group"]["PUMA"]))]) for g in ours_per_group
                ),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        f"| method (ε = {args.epsilon:g}) | dipsy | SDNist 2.4 on dipsy's codes | SDNist 2.4 | per PUMA mean: dipsy / SDNist | "
        "worst PUMA: dipsy / SDNist | 40 % subsample (per PUMA) | largest PUMA difference, same codes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['dipsy']:.3f} | {r['sdnist_on_dipsy_codes']:.3f} | {r['sdnist']:.3f} | "
            f"{r['dipsy_group_mean']:.1f} / {r['sdnist_group_mean']:.1f} | {r['dipsy_group_worst']:.1f} / "
            f"{r['sdnist_group_worst']:.1f} | {r['baseline_40']:.1f} | {r['max_group_difference_same_codes']:.2g} |"
        )
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _code(domain: Domain, label: str) -> int:
    """A PUMA's code from the label the score's group names carry."""
    column = domain["PUMA"]
    names = list(column.labels or column.categories)
    return names.index(label)


if __name__ == "__main__":
    raise SystemExit(main())
