"""Errors a person can act on.

Every error dipsy raises for bad input names the problem and the fix; the CLI prints it on one
line and exits with code 2 (rule 5 of the design: bad input gets a clear error and loses nothing).
"""

from __future__ import annotations


class DipsyError(Exception):
    """Base class: ``problem`` says what is wrong, ``fix`` what to do about it.

    >>> str(DipsyError("epsilon must be positive, got -1", "pass --epsilon with a number > 0"))
    'epsilon must be positive, got -1; pass --epsilon with a number > 0'
    """

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)


class DomainError(DipsyError):
    """The domain file is missing, malformed or inconsistent."""


class DataError(DipsyError):
    """The data cannot be read or does not match the domain."""


class BudgetError(DipsyError):
    """A spend would pass a privacy budget or cap; nothing was spent."""


class ReleaseError(DipsyError):
    """A release cannot be written where asked."""


class PrivacyError(DipsyError):
    """A step would release what the plan did not budget (a measurement outside the plan, a
    further set from a model, a read after the session closed); nothing was released."""


class NoiseError(DipsyError):
    """The forecast says the release would be essentially noise; nothing was read or charged."""
