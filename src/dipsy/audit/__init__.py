"""The privacy audit: every registered method's measurements on a worst-case pair, and one replayed release.

It runs the release path, so it sits above the API (DESIGN rule 9: … → api → audit → cli):

- :mod:`.cases` — each method's worst-case neighbouring pair and options;
- :mod:`.record` — the release path run on D recording every measurement, and on D' replaying D's answers;
- :mod:`.losses` — each measurement's privacy loss (exact, or a Clopper–Pearson bound) against its cost;
- :mod:`.runner` — :func:`audit` and :func:`format_table`.
"""

from .cases import CASES, NOT_AUDITED, Case
from .losses import DRAWS, Check, ceiling, lower_bound
from .record import HALF
from .runner import Replay, Result, audit, format_table

__all__ = [
    "CASES",
    "DRAWS",
    "HALF",
    "NOT_AUDITED",
    "Case",
    "Check",
    "Replay",
    "Result",
    "audit",
    "ceiling",
    "format_table",
    "lower_bound",
]
