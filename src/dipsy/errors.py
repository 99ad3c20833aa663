"""Errors a person can act on.

Every error dipsy raises for bad input names the problem and the fix; the CLI prints it on one
line and exits with code 2 (rule 5 of the design: bad input gets a clear error and loses nothing).
The fixes are written as the command line spells them (``--on-invalid drop``); the Python API's
functions (:func:`speaks_python`) reword them as its parameters (``on_invalid="drop"``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar


class DipsyError(Exception):
    """Base class: ``problem`` says what is wrong, ``fix`` what to do about it.

    >>> str(DipsyError("epsilon must be positive, got -1", "pass --epsilon with a number > 0"))
    'epsilon must be positive, got -1; pass --epsilon with a number > 0'
    """

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)

    def reword(self, rewrite: Callable[[str], str]) -> None:
        """Rewrite the problem and the fix in place (the error keeps its type and traceback)."""
        self.problem, self.fix = rewrite(self.problem), rewrite(self.fix)
        self.args = (f"{self.problem}; {self.fix}" if self.fix else self.problem,)


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


# -- the Python API's spelling of the fixes ------------------------------------------------------

#: True while the command line runs (:func:`on_command_line`): its errors keep the flags' spelling.
_COMMAND_LINE = contextvars.ContextVar("dipsy_command_line", default=False)

#: Flags whose value is one of a few words, given to the API as a string.
_WORDS = {
    "on-invalid": ("drop", "error"),
    "release": ("records", "table"),
    "neighbouring": ("substitute", "add-remove"),
    "engine": ("numpy", "duckdb", "spark"),
    "model": ("ols", "logit"),
}
#: Flags that are a keyword argument of the same name (hyphens as underscores); switches are True.
_PARAMETERS = (
    "epsilon", "delta", "rho", "columns", "sets", "seed", "ledger", "dataset-id", "budget-cap", "rows",
    "engine", "neighbouring", "on-invalid", "release", "formula", "sensitive", "groups", "group-k", "model",
    "categories", "bins", "log", "grid",
)  # fmt: skip
_SWITCHES = ("accept-noise", "raise-cap", "stream")
_F = TypeVar("_F", bound=Callable[..., Any])


@contextlib.contextmanager
def on_command_line() -> Iterator[None]:
    """Errors raised inside keep the command line's spelling (the CLI's own calls into the API)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def in_python_terms(text: str) -> str:
    """A fix written for the command line, with the flags the Python API takes as its keyword
    arguments: ``--option k=v`` as ``options={"k": v}``, ``--on-invalid drop`` as
    ``on_invalid="drop"``, ``--epsilon`` as ``epsilon=``, ``--accept-noise`` as ``accept_noise=True``.
    Flags the API has no parameter for (``--out``, ``--format``) are left as they are.

    >>> in_python_terms("fix the data, or pass --on-invalid drop")
    'fix the data, or pass on_invalid="drop"'
    >>> in_python_terms("pass --option structure=PATH or --option grid=5, and --epsilon with a number > 0")
    'pass options={"structure": PATH} or options={"grid": 5}, and epsilon= with a number > 0'
    >>> in_python_terms("pass --accept-noise (accept_noise=True) to release it anyway")
    'pass accept_noise=True to release it anyway'
    >>> in_python_terms("give it --budget-cap local=ε, or --epsilon 1")
    'give it budget_cap="local=ε", or epsilon=1'
    """

    def option(m: re.Match[str]) -> str:
        value = m.group(2)
        if not value:
            value = "..."
        elif not (re.fullmatch(r"[-+0-9.e]+|[A-Z][A-Z_.]*(\.[a-z]+)?|true|false", value)):
            value = f'"{value}"'
        return f'options={{"{m.group(1)}": {value}}}'

    text = re.sub(r"--option (\w+)=([^\s,;)\"']*)", option, text)
    for flag, words in _WORDS.items():
        name = flag.replace("-", "_")
        text = re.sub(rf"--{flag} ({'|'.join(map(re.escape, words))})\b", rf'{name}="\1"', text)
    text = re.sub(r"--budget-cap (local=[^\s,;)]*)", r'budget_cap="\1"', text)
    names = "|".join(map(re.escape, _PARAMETERS))
    text = re.sub(rf"--({names}) ([0-9][0-9.e+-]*)(?![\w-])", lambda m: f"{m.group(1).replace('-', '_')}={m.group(2)}", text)
    for flag in _SWITCHES:
        text = re.sub(rf"--{flag}\b(?!-)", f"{flag.replace('-', '_')}=True", text)
    for flag in _PARAMETERS:
        text = re.sub(rf"--{flag}\b(?!-)", f"{flag.replace('-', '_')}=", text)
    return re.sub(r"(\S+) \(\1\)", r"\1", text)  # "accept_noise=True (accept_noise=True)": said once


def speaks_python(function: _F) -> _F:
    """The API function ``function``, its errors reworded by :func:`in_python_terms` unless the
    command line called it."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except DipsyError as e:
            if not _COMMAND_LINE.get():
                e.reword(in_python_terms)
            raise

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature
