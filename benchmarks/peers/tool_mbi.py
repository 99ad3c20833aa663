"""mbi's own AIM: ``mechanisms/aim.py`` of the authors' private-pgm repository, run as they ship it.

The repository is not on PyPI: ``--private-pgm DIR`` names a checkout of it (outside the project),
whose ``mbi`` the peer environment installs and whose ``mechanisms/`` this module imports. The
run follows the script's own ``__main__`` except for the workload, which is every 3-way marginal
at weight 1 (the paper's and dipsy's default; the script's command line defaults to 2-way):
``AIM(ε, δ, max_model_size=80, max_iters=1000).run(data, workload)``. (ε, δ) becomes ρ by the
repository's own ``cdp_rho``; the privacy unit is one row (add/remove). Records are what ``run``
returns (its model's ``synthetic_data``).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from child import versions as _versions

NOTES = {"aim": "private-pgm's mechanisms/aim.py as shipped, 3-way workload"}


def synthesize(job: dict):
    checkout = Path(job["private_pgm"])
    sys.path.insert(0, str(checkout / "mechanisms"))
    from aim import AIM  # the repository's module
    from mbi import Dataset

    data = Dataset.load(job["data"], job["domain"])
    workload = [(cl, 1.0) for cl in itertools.combinations(data.domain, 3)]
    _, synth = AIM(job["epsilon"], job["delta"], max_model_size=80, max_iters=1000).run(
        data, workload, num_synth_rows=job["rows"]
    )
    return synth.df


def write_csv(frame, path) -> None:
    frame.to_csv(path, index=False)


def versions() -> dict[str, str]:
    return _versions("mbi", "jax", "numpy")
