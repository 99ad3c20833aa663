"""Declared missing values: the states a column's value may be in instead of a value.

Survey files code missingness in several ways at once — empty cells, reserved codes such as −8
"refused" and −9 "not applicable", Stata's ``.a`` … ``.z`` — and the reasons differ (a skip
pattern is not a refusal). A column's ``missing:`` field declares them::

    missing:
      empty: not applicable          # an empty cell (what the reader reads as empty), with its label
      codes: {-8: refused, -9: not applicable, ".a": not asked}
      pooled: false                  # true: every state above is one state, "missing"

Each declared state is a state of its own (``pooled: false``, the default): an empty cell first
if ``empty`` is declared, then the codes in the order written. ``pooled: true`` makes them one
state. Without ``empty``, an empty cell stays invalid, as in a column without ``missing:``.

Matching follows the rule of categories (:mod:`dipsy.domain.codec`): a code that is a number
matches the values that read as that number (``-8``, ``-8.0`` and ``"-8"`` alike); a code that
is text matches the values whose text is the code. A code written as text that reads as a plain
decimal number (``"-8"``, as a JSON file must write every key) is that number. Codes are
matched before any other check, so a value equal to a code is never invalid, whatever ``clip:``
says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DomainError

#: The texts :func:`pandas.read_csv` reads as empty by default (``keep_default_na=True``); both
#: engines read them so (the DuckDB engine in SQL). A text code among them could never be seen.
NA_TEXTS = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)  # fmt: skip
#: The label of the one state of ``pooled: true``.
POOLED_LABEL = "missing"
_FIELDS = ("empty", "codes", "pooled")
#: A number as YAML and JSON write one in plain decimal: such text codes are numbers.
_PLAIN_NUMBER = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Missing:
    """The missing states a column declares.

    ``empty`` is the label of the empty state (None: an empty cell is invalid); ``codes`` the
    reserved codes with their labels, in the order written; ``pooled`` makes every state one.

    >>> m = Missing(empty="not applicable", codes=((-8, "refused"), (".a", "not asked")))
    >>> m.labels, m.values
    (('not applicable', 'refused', 'not asked'), (None, -8, '.a'))
    >>> Missing(empty="skipped", codes=((-8, "refused"),), pooled=True).labels
    ('missing',)
    """

    empty: str | None = None
    codes: tuple[tuple[Any, str], ...] = ()
    pooled: bool = False

    def __post_init__(self) -> None:
        where = "missing:"
        if not isinstance(self.pooled, (bool, np.bool_)):
            raise DomainError(f"{where} has pooled: {self.pooled!r}", "write pooled: true or pooled: false (unquoted)")
        if self.empty is None and not self.codes:
            raise DomainError(
                f"{where} declares nothing (no empty: and no codes:)",
                "declare the empty cell (empty: LABEL) or the reserved codes (codes: {-8: refused}), or remove missing:",
            )
        if self.empty is not None:
            _check_label(self.empty, "empty")
        if not isinstance(self.codes, tuple):
            raise DomainError(f"{where} has codes that are not a mapping", "write codes: {-8: refused, -9: not applicable}")
        seen: dict[Any, Any] = {}
        for pair in self.codes:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise DomainError(f"{where} has a code entry {pair!r}", "write codes: {-8: refused, -9: not applicable}")
            code, label = pair
            _check_code(code)
            _check_label(label, f"code {code!r}")
            key = code_key(code)
            if key in seen:
                raise DomainError(
                    f"{where} lists the code {code!r} twice (as {seen[key]!r} and {code!r}: numbers match as numbers)",
                    "give each code once",
                )
            seen[key] = code

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, spec: Any) -> Missing:
        """The declaration from its entry in a domain file (see docs/guides/domain.md)."""
        if not isinstance(spec, Mapping) or not spec:
            raise DomainError(
                "missing: declares nothing"
                if spec is None or isinstance(spec, Mapping)
                else f"missing: is {spec!r}, not a mapping",
                "declare the empty cell (empty: LABEL) or the reserved codes (codes: {-8: refused}), or remove missing:",
            )
        unknown = [str(k) for k in spec if k not in _FIELDS]
        if unknown:
            raise DomainError(f"missing: has unknown field(s) {sorted(unknown)}", f"use only {', '.join(_FIELDS)}")
        codes = spec.get("codes")
        if codes is None and "codes" in spec:
            raise DomainError(
                "missing: has codes: with nothing in it", "list the codes, e.g. codes: {-8: refused}, or remove codes:"
            )
        if codes is not None and not isinstance(codes, Mapping):
            raise DomainError(
                f"missing: has codes: {codes!r}, not a mapping of code to label",
                "write codes: {-8: refused, -9: not applicable} (each code with its label)",
            )
        if "empty" in spec and spec["empty"] is None:
            raise DomainError("missing: has empty: without a label", "write empty: LABEL (e.g. empty: not applicable)")
        return cls(
            empty=spec.get("empty"),
            codes=tuple((_code_value(k), v) for k, v in (codes or {}).items()),
            pooled=spec.get("pooled", False),
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry in a domain file: only what is set."""
        out: dict[str, Any] = {}
        if self.empty is not None:
            out["empty"] = self.empty
        if self.codes:
            out["codes"] = dict(self.codes)
        if self.pooled:
            out["pooled"] = True
        return out

    # -- the states ---------------------------------------------------------------------------

    @property
    def n_states(self) -> int:
        """Number of states, each one code after the column's value codes."""
        return 1 if self.pooled else (self.empty is not None) + len(self.codes)

    @property
    def labels(self) -> tuple[str, ...]:
        """Each state's label, in code order."""
        if self.pooled:
            return (POOLED_LABEL,)
        return ((self.empty,) if self.empty is not None else ()) + tuple(label for _, label in self.codes)

    @property
    def values(self) -> tuple[Any, ...]:
        """What each state decodes to: the code as written, or None (an empty value) for the
        empty state and for the pooled one (which stands for several codes)."""
        if self.pooled:
            return (None,)
        return ((None,) if self.empty is not None else ()) + tuple(code for code, _ in self.codes)

    @property
    def texts(self) -> tuple[str, ...]:
        """Each state as a short text (for labels and messages): its code as written, ``empty``,
        or ``missing`` for the pooled state.

        >>> Missing(empty="skipped", codes=((-8, "refused"), (".a", "not asked"))).texts
        ('empty', '-8', '.a')
        """
        if self.pooled:
            return (POOLED_LABEL,)
        return (("empty",) if self.empty is not None else ()) + tuple(_text(code) for code, _ in self.codes)

    @property
    def empty_state(self) -> int | None:
        """The state of an empty cell, or None if an empty cell is invalid."""
        return None if self.empty is None else 0

    def code_states(self) -> tuple[list[tuple[int, float]], list[tuple[int, str]]]:
        """``(numbers, texts)``: each number code and each text code with its state."""
        first = 0 if self.empty is None else 1
        numbers, texts = [], []
        for k, (code, _) in enumerate(self.codes):
            state = 0 if self.pooled else first + k
            if isinstance(code, str):
                texts.append((state, code))
            else:
                numbers.append((state, float(code)))
        return numbers, texts


def code_key(code: Any) -> Any:
    """How a code is compared: numbers as floats, text as text."""
    return code if isinstance(code, str) else float(code)


def reads_as_number(text: str) -> bool:
    """Whether Python reads ``text`` as a float (pandas reads a subset of these, inf and nan too)."""
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _code_value(key: Any) -> Any:
    """A code as read from the file: text in plain decimal (JSON's keys) is the number it writes."""
    if isinstance(key, str) and _PLAIN_NUMBER.fullmatch(key):
        number = float(key)
        return int(key) if re.fullmatch(r"[-+]?[0-9]+", key) else number
    return key


def _check_code(code: Any) -> None:
    if isinstance(code, (bool, np.bool_)):
        raise DomainError(
            f"missing: has the code {str(code).lower()}, which YAML read as a boolean (from an unquoted yes/no, on/off "
            "or true/false)",
            "quote it, e.g. codes: {'no': refused}",
        )
    if code is None:
        raise DomainError(
            "missing: has an empty code (YAML reads an unquoted ~, null or nothing as empty)",
            "declare empty cells with empty: LABEL, or quote the code",
        )
    if isinstance(code, (int, np.integer)):
        return
    if isinstance(code, (float, np.floating)):
        if not math.isfinite(code):
            raise DomainError(
                f"missing: has the code {code!r}, a number that is not finite", "use a finite number or a text code"
            )
        return
    if not isinstance(code, str):
        raise DomainError(f"missing: has the code {code!r}, a {type(code).__name__}", "write each code as a number or a text")
    if code in NA_TEXTS:
        raise DomainError(
            f"missing: has the text code {code!r}, which the readers read as an empty cell (as pandas does)",
            "declare it with empty: LABEL instead",
        )
    if reads_as_number(code):
        raise DomainError(
            f"missing: has the text code {code!r}, which reads as the number {float(code)!r} in a column of numbers and "
            "as the text otherwise, so it would match one way in one file and the other way in another",
            f"write it as a number in plain decimal (e.g. {_plain(float(code))}), unquoted",
        )


def _text(code: Any) -> str:
    return code if isinstance(code, str) else _plain(float(code))


def _plain(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and x.is_integer() else repr(x)


def _check_label(label: Any, what: str) -> None:
    if not isinstance(label, str) or not label.strip():
        raise DomainError(
            f"missing: gives {what} the label {label!r}, which is not a text"
            + (" (YAML reads unquoted yes/no, on/off, true/false as booleans)" if isinstance(label, bool) else ""),
            "give each state a label in words, quoted if YAML would read it otherwise (e.g. 'no answer')",
        )
