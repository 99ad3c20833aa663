r"""The audit of one method: its measurements' losses on a worst-case pair, and one replayed release.

:func:`audit` runs the method's real release path once on D, recording every measurement
(:func:`~dipsy.audit.record.recorded`), and checks

1. **each measurement** — the privacy loss of the mechanism that ran between its laws on the
   exact answers on D and D', against the cost it states (:func:`~dipsy.audit.losses.checks`);
2. **all of them composed** — against the statement's total (:func:`~dipsy.audit.losses.composed`);
3. **that the release uses those measurements and nothing else** — the release of D' at the same
   seed, its queries answering as on D, must be identical to the release of D
   (:func:`~dipsy.audit.record.replayed`). The release is then post-processing of the
   measurements' outputs (Dwork & Roth 2014, Prop. 2.1), so 1 and 2 are where the privacy loss
   is — and where the signal is: a release of a few records blurs a measurement's loss under the
   randomness of the synthesis, which costs whole-release audits their power (a half-noise
   variant of a method whose release is records drawn from a model of noisy marginals moves a
   release-level Clopper–Pearson bound by a fraction of ε).

It is a lower bound, and a test on one pair: it can refute a claim, never prove one. Its power is
the broken variant (``broken=True``: every mechanism at half its noise or prior while the
statement keeps the original cost), which the audit must flag for every method.

>>> result = audit("laplace-sanitizer")
>>> result.flagged, result.replay.same, result.checks[0].found
(False, True, 2.0)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..release import Release
from .cases import CASES, Case
from .losses import DRAWS, Check, checks, composed
from .record import files, recorded, replayed


@dataclass(frozen=True)
class Replay:
    """The release of D' replaying D's answers, against the release of D."""

    measurements: int
    differences: tuple[str, ...]

    @property
    def same(self) -> bool:
        return not self.differences


@dataclass(frozen=True)
class Result:
    """One audit: every measurement's check, the composed check, the replay."""

    method: str
    relation: str
    claim: str
    broken: bool
    checks: tuple[Check, ...]
    composed: Check
    replay: Replay
    draws: int

    @property
    def flagged(self) -> bool:
        """A measurement's loss, or their composition, refutes what is stated."""
        return self.composed.flagged or any(c.flagged for c in self.checks)

    @property
    def testable(self) -> bool:
        """Every check could have refuted what it checks (its ceiling is above the cost)."""
        return self.composed.testable and all(c.testable for c in self.checks)

    @property
    def largest(self) -> Check:
        """The measurement whose loss is the largest share of its stated cost (of equal shares, the costliest)."""
        return max(self.checks, key=lambda c: (round(c.ratio, 9), c.stated))

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "relation": self.relation,
            "claim": self.claim,
            "broken": self.broken,
            "draws": self.draws,
            "flagged": self.flagged,
            "testable": self.testable,
            "checks": [{**c.__dict__, "flagged": c.flagged, "testable": c.testable} for c in self.checks],
            "composed": {**self.composed.__dict__, "flagged": self.composed.flagged, "testable": self.composed.testable},
            "replay": {
                "measurements": self.replay.measurements,
                "same": self.replay.same,
                "differences": list(self.replay.differences),
            },
        }


def audit(method: str | Case, broken: bool = False, draws: int = DRAWS, seed: int = 0) -> Result:
    """Audit ``method`` (a registered name, or a :class:`~dipsy.audit.cases.Case`) on its worst-case pair.

    ``draws`` is the number of runs of each sampled mechanism on each answer; ``seed`` seeds the
    release (a test release) and the draws, so a result is a fixed number.
    """
    case = CASES[method] if isinstance(method, str) else method
    with files(case) as folder:
        first, log = recorded(case, seed, Path(folder), broken)
        second, differences = replayed(case, seed, Path(folder), log, broken)
    found = [checks(r, draws, seed + 1000 * k) for k, r in enumerate(log)]
    statement = first.statement
    return Result(
        case.method,
        str(statement.relation),
        str(statement.total),
        broken,
        tuple(c for mine in found for c in mine),
        composed(log, found, statement.total),
        Replay(len(log), tuple(differences) + _differences(first, second)),
        draws,
    )


def _differences(a: Release, b: Release) -> tuple[str, ...]:
    """Where two releases differ: tables, statement, public parameters."""
    out = []
    if len(a.tables) != len(b.tables) or not all(x.equals(y) for x, y in zip(a.tables, b.tables)):
        out.append("the released tables differ")
    if a.statement.to_dict() != b.statement.to_dict():
        out.append("the statements differ")
    if json.dumps(a.parameters, sort_keys=True, default=str) != json.dumps(b.parameters, sort_keys=True, default=str):
        out.append("the release parameters differ")
    return tuple(out)


def _number(x: float) -> str:
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.4g}"


def format_table(results: list[Result]) -> str:
    """The audit table in Markdown: per method and variant, the measurement whose loss is the
    largest share of its cost, the composed loss against the statement's total, the smallest
    ceiling, whether the audit flags it, and whether the replayed release is the same."""
    rows = [
        "| method | relation | claim | variant | measurements | largest loss / its cost | all composed / claim "
        "| ceiling | flagged | release of D' from D's answers |",
        "|---|---|---|---|---|---|---|---:|---|---|",
    ]
    for r in results:
        worst, total = r.largest, r.composed
        sampled = sum(1 for c in r.checks if c.how != "exact")
        kinds = f"{len(r.checks) - sampled} exact" + (f", {sampled} sampled ({r.draws:,} draws)" if sampled else "")
        top = min([c.ceiling for c in r.checks] + [total.ceiling])
        rows.append(
            f"| {r.method} | {r.relation} | {r.claim} | {'broken (half the noise)' if r.broken else 'as released'} "
            f"| {kinds} | {worst.measure} {_number(worst.found)} / {_number(worst.stated)} "
            f"| {total.measure} {_number(total.found)} / {_number(total.stated)} | {_number(top)} "
            f"| {'yes' if r.flagged else 'no'} | {'identical' if r.replay.same else '; '.join(r.replay.differences)} |"
        )
    return "\n".join(rows)
