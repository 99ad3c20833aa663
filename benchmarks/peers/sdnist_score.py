"""SDNist 2.4's own k-marginal score, run in its virtual environment by benchmarks/sdnist_check.py.

``python sdnist_score.py JOB.json`` reads the job (``original``, ``synthetic``: CSV paths read as
text, as SDNist compares its values to the strings ``'N'`` and ``'501'``; ``numeric``: the columns
SDNist bins; ``groups``; ``coded``: pairs of CSV paths already coded by dipsy) and prints JSON: for
the raw files, SDNist's binning (``percentile_rank_target``, ``percentile_rank_synthetic``,
``add_bin_for_NA`` of ``sdnist.report.dataset.binning``) then its ``KMarginal``; for the coded
files, ``KMarginal`` alone. Each result is ``{"score", "groups": {group: score}}``.
"""

from __future__ import annotations

import json
import sys

import pandas as pd
import sdnist.report.dataset  # noqa: F401 - imported first: sdnist.metrics.kmarginal imports it back
from sdnist.metrics.kmarginal import KMarginal
from sdnist.report.dataset.binning import add_bin_for_NA, percentile_rank_synthetic, percentile_rank_target


def score(target: pd.DataFrame, synthetic: pd.DataFrame, groups: list[str]) -> dict:
    k = KMarginal(target, synthetic, groups)
    k.compute_score()
    return {"score": float(k.score), "groups": {str(g): float(v) for g, v in k.scores.items()}}


def main() -> None:
    job = json.loads(open(sys.argv[1]).read())
    numeric, groups = job["numeric"], job["groups"]
    target = pd.read_csv(job["original"], dtype=str, keep_default_na=False)
    synthetic = pd.read_csv(job["synthetic"], dtype=str, keep_default_na=False)[target.columns]
    binned_t = add_bin_for_NA(percentile_rank_target(target, numeric), target, numeric)
    binned_s = add_bin_for_NA(percentile_rank_synthetic(synthetic, target, binned_t, numeric), synthetic, numeric)
    out = {"sdnist_binning": score(binned_t, binned_s, groups)}
    t, s = (pd.read_csv(p) for p in job["coded"])
    out["dipsy_binning"] = score(t, s, groups)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
