r"""The release path, run for the audit: once on D recording every measurement, once on D' replaying D's answers.

Both runs are :func:`dipsy.api.run` — validation, plan, session, fit, draw, statement —
with its ``tamper`` hook, which :class:`~dipsy.privacy.session.Session` applies to every
measurement just before it runs (after the charge), and nothing else changed:

- :func:`recorded` runs on D with each measurement's mechanism wrapped in a recorder that hands
  the answer to the mechanism unchanged and draws exactly as it does (the same randomness, in the
  same order: a seeded recorded release is the seeded release), and notes the exact answer on D
  and, at that same moment of the run, the exact answer of the same query on D' (an engine over
  D'): an adaptive method's query depends on the model fitted so far, which later steps change.
- :func:`replayed` runs on D' with the same seed while each query answers what it answered on D.
  If the release is a function of the measurements' outputs (and of public inputs and the seed)
  only, the two releases are identical; a release that read the data in any other way (n, a
  value, a row) would differ.

``broken`` runs every mechanism at half its noise (:meth:`~dipsy.privacy.measurement.Mechanism.weakened`)
while the charge and the statement keep the original cost: the audit's power test.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..api import run
from ..engine import engine_for
from ..privacy.measurement import Measurement, Mechanism, Query
from ..privacy.rng import Randomness
from ..release import Release
from ..request import Request
from .cases import Case

#: The broken variant's factor on every noise scale (or prior strength).
HALF = 0.5


@dataclass(frozen=True, eq=False)
class Recorded:
    """One measurement of a recorded run."""

    #: As planned and charged: its cost is the one the statement states.
    measurement: Measurement
    #: The mechanism that drew the output (the weakened one in a broken run).
    ran: Mechanism
    #: The exact answer on D, and the exact answer of the same query on D', read at the same moment.
    answer: Any
    neighbour: Any


class _Recorder(Mechanism):
    """``ran``, noting each answer (and the neighbour's) before it randomises: the same draws."""

    def __init__(self, measurement: Measurement, ran: Mechanism, other: Any, log: list[Recorded]) -> None:
        self.measurement, self.ran, self.other, self.log = measurement, ran, other, log

    @property
    def cost(self):
        return self.ran.cost

    def randomise(self, answer: Any, rand: Randomness) -> Any:
        self.log.append(Recorded(self.measurement, self.ran, answer, self.measurement.query.answer(self.other)))
        return self.ran.randomise(answer, rand)

    def describe(self) -> dict[str, Any]:
        return self.ran.describe()


@dataclass(frozen=True)
class _Given(Query):
    """``query``, answering ``given`` (D's exact answer) whatever the engine holds."""

    query: Query
    given: Any = field(compare=False)

    def answer(self, engine: Any) -> Any:
        return self.given

    def describe(self) -> str:
        return self.query.describe()


def release(case: Case, data: Any, seed: int, folder: Path, tamper: Callable[[Measurement], Measurement]) -> Release:
    """``case``'s release of ``data`` through the real release path (what ``dipsy synth`` runs), with ``tamper``."""
    kwargs = dict(case.kwargs)
    options = {k: str(folder / v) if v in case.files else v for k, v in kwargs.pop("options", {}).items()}
    quiet = logging.getLogger("dipsy")
    level, quiet.level = quiet.level, logging.ERROR  # tiny data make the marginal methods warn on every run
    try:
        request = Request(
            data,
            case.domain,
            case.method,
            kwargs.get("epsilon"),
            kwargs.get("delta"),
            kwargs.get("rho"),
            options=options,
            release=kwargs.get("release", "records"),
            neighbouring=kwargs.get("neighbouring"),
            seed=seed,
            accept_noise=True,
        )  # the audit tests the guarantee, not the utility
        return run(request, tamper=tamper)
    finally:
        quiet.setLevel(level)


def _ran(m: Measurement, broken: bool) -> Mechanism:
    return m.mechanism.weakened(HALF) if broken else m.mechanism


def recorded(case: Case, seed: int, folder: Path, broken: bool = False) -> tuple[Release, list[Recorded]]:
    """``case``'s release of D, and every measurement that ran in it with its answers on D and D'."""
    other = engine_for(case.neighbour, case.domain.project(None))
    other.ensure_valid()
    log: list[Recorded] = []
    try:
        out = release(case, case.data, seed, folder, lambda m: replace(m, mechanism=_Recorder(m, _ran(m, broken), other, log)))
    finally:
        getattr(other, "close", lambda: None)()
    return out, log


def replayed(case: Case, seed: int, folder: Path, log: list[Recorded], broken: bool = False) -> tuple[Release, list[str]]:
    """``case``'s release of D' at ``seed`` with every query answering as on D (``log``), and where
    the measurements that ran differ from D's (none, if the release path builds its measurements
    from public inputs and earlier outputs only)."""
    differences: list[str] = []
    done = iter(log)

    def given(m: Measurement) -> Measurement:
        before = next(done, None)
        if before is None or m.describe() != before.measurement.describe():
            differences.append(
                f"measurement {len(differences) + 1}: {m.label!r} on D', "
                f"{before.measurement.label if before else 'nothing'!r} on D"
            )
            return replace(m, mechanism=_ran(m, broken))
        return replace(m, query=_Given(m.query, before.answer), mechanism=_ran(m, broken))

    out = release(case, case.neighbour, seed, folder, given)
    left = sum(1 for _ in done)
    if left:
        differences.append(f"{left} measurement(s) ran on D and not on D'")
    return out, differences


def files(case: Case) -> tempfile.TemporaryDirectory:
    """A temporary folder holding ``case``'s public input files."""
    tmp = tempfile.TemporaryDirectory()
    for name, frame in case.files.items():
        frame.to_csv(Path(tmp.name) / name, index=False)
    return tmp
