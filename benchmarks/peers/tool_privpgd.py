"""PrivPGD (Donhauser, Abad et al. 2024): particle gradient descent with a sliced-Wasserstein loss.

The authors' repository is not on PyPI: ``--privpgd DIR`` names a checkout of it (outside the
project), which the peer environment installs with the repository's own pins. The run follows the
repository's ``examples/privpgd.py`` with its defaults (``AdvancedSlicedInference``: 100,000
particles, 1,000 epochs, lr 0.1, 10 projections, batches of 5 marginals, 80 % gradient masking;
the projection step's 1,750 iterations) but for two things:

- the measurements are the repository's ``KWay`` mechanism over every 2-way marginal, as in the
  example: PrivPGD's engine refuses any other mechanism (``experiment.py``: "AdvancedSlicedInference
  must be used with KWay mechanism only"), so it is not run over AIM's measurements;
- the privacy unit is one row added or removed (``bounded=False``: sensitivity 1, and the row count
  is estimated from the noisy marginals), like every other peer here; the example's default is
  ``bounded=True`` (one row replaced, sensitivity √2, the true row count taken as public).

The domain is the public one: ``Dataset.load`` takes the domain file's sizes, so nothing about the
domain is read from the rows. (ε, δ) becomes the Gaussian's σ by the repository's own calibration
(``gaussian_mech``: autodp's RDP accountant for one Gaussian), times √91 for the 91 pairs. Its noise is NumPy's global
generator and its particles and projections torch's, both seeded with the run's seed. The model's
100,000 equally weighted particles are the records it yields (``synthetic_data`` ignores a row
count); n of them, drawn without replacement, are written, as for every other tool.
"""

from __future__ import annotations

from child import versions as _versions

NOTES = {
    "privpgd": "examples/privpgd.py defaults, KWay over all 2-way marginals, add/remove unit (bounded=False), "
    "n of the 100,000 particles drawn without replacement"
}


def synthesize(job: dict):
    import logging

    import numpy as np
    import torch
    from inference.dataset import Dataset  # the repository's package, installed from the checkout
    from inference.privpgd.inference import AdvancedSlicedInference
    from mechanisms.kway import KWay
    from mechanisms.utils_mechanisms import generate_all_kway_workload

    logging.basicConfig(level=logging.INFO)  # as the example does: its progress (epochs, losses) goes to stderr
    torch.manual_seed(job["seed"])
    data = Dataset.load(job["data"], job["domain"])
    workload = generate_all_kway_workload(data=data, degree=2)
    engine = AdvancedSlicedInference(domain=data.domain, hp={})  # the example's defaults are the engine's
    mechanism = KWay(epsilon=float(job["epsilon"]), delta=float(job["delta"]), degree=2, bounded=False)
    synth, _ = mechanism.run(data=data, workload=workload, engine=engine)
    frame = synth.df
    keep = np.random.default_rng(job["seed"]).choice(len(frame), size=min(job["rows"], len(frame)), replace=False)
    return frame.iloc[np.sort(keep)]


def write_csv(frame, path) -> None:
    frame.to_csv(path, index=False)


def versions() -> dict[str, str]:
    return _versions("privpgd", "torch", "numpy", "autodp", "pandas")
