r"""Regression formulas read by a grammar that cannot call anything.

A formula is written as for statsmodels (patsy): ``"Expenditure ~ Income + C(Race)"``. patsy
evaluates each term as Python, so a formula is code (``y ~ __import__('os').system(...)`` runs a
command); a formula in a domain file, which travels between people, would then be code execution
from a data file. Here a tokenizer and a recursive-descent parser read only the terms
statisticians write, and :func:`design` builds the design matrix with NumPy, naming its columns
as patsy does (``Intercept``, ``C(Race)[T.2]``, ``np.log(Income)``, ``x:z``) so that results
keep their keys. Nothing in this module evaluates text.

The grammar (``NAME`` a Python identifier that is not a keyword; ``STRING`` quoted with ``'`` or
``"``, without backslashes)::

    formula   := factor '~' sum
    sum       := product (('+' | '-') product)*
    product   := interact ('*' interact)*            a * b = a + b + a:b
    interact  := unary (':' unary)*
    unary     := ('+' | '-') unary | '(' sum ')' | '0' | '1' | factor
    factor    := column                                 numeric, or categorical if the data hold categories
               | 'C' '(' column [',' treatment] ')'     categorical, treatment coding
               | 'I' '(' arith ')'                      arithmetic of columns and numbers
               | function '(' arith ')'
    column    := NAME | 'Q' '(' STRING ')'
    treatment := 'Treatment' '(' ['reference' '='] (['-'] NUMBER | STRING) ')'
    function  := ['np' '.'] ('log' | 'log1p' | 'exp' | 'sqrt')
    arith     := aterm (('+' | '-') aterm)*
    aterm     := apower (('*' | '/') apower)*
    apower    := ('+' | '-') apower | aatom ['**' apower]
    aatom     := NUMBER | column | function '(' arith ')' | '(' arith ')'

The intercept follows patsy: present unless removed by ``- 1``, ``+ 0`` or ``0 +``; ``+ 1`` puts
it back; ``- term`` removes a term. The response is one factor: a numeric one for OLS; for a
logit also a categorical one of two categories (the one that is not the reference is modelled).

>>> [t.name for t in parse("y ~ x * C(g) + np.log(z) - 1").terms]
['x', 'C(g)', 'x:C(g)', 'np.log(z)']
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from itertools import combinations, product
from typing import TYPE_CHECKING, NamedTuple, NoReturn

import numpy as np

from .errors import DipsyError

if TYPE_CHECKING:
    import pandas as pd

#: The functions a formula may call, written ``log(x)`` or ``np.log(x)``.
FUNCTIONS = {"log": np.log, "log1p": np.log1p, "exp": np.exp, "sqrt": np.sqrt}

_WHAT_TO_WRITE = (
    'write only column names (Q("odd name") for others), numbers, + - * / ** : ~ ( ) '
    "and the calls C(col), C(col, Treatment(reference=...)), I(arithmetic), "
    + ", ".join(f"{f}()" for f in FUNCTIONS)
    + " (also as np.log() ...)"
)


# -- parsed formulas -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A column of the data, by name."""

    name: str


@dataclass(frozen=True)
class Number:
    """A number written in arithmetic."""

    value: float


@dataclass(frozen=True)
class Negative:
    """``-operand``."""

    operand: Expression


@dataclass(frozen=True)
class Operation:
    """``left op right``, ``op`` one of ``+ - * / **``."""

    op: str
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Function:
    """``function(argument)``, ``function`` a key of :data:`FUNCTIONS`."""

    function: str
    argument: Expression


Expression = Column | Number | Negative | Operation | Function


@dataclass(frozen=True)
class Factor:
    """One factor of a term.

    ``name`` is patsy's (the factor's text with patsy's spacing); ``coding`` is ``"categorical"``
    for ``C()``, ``"numeric"`` for ``I()`` and functions, ``"guess"`` for a bare column
    (categorical when the data hold categories: text, booleans or a pandas Categorical);
    ``reference`` the category given by ``Treatment(reference=...)``, None for the first.
    """

    name: str
    expression: Expression
    coding: str
    reference: object = None


@dataclass(frozen=True, eq=False)
class Term:
    """An interaction of factors (one factor: a main effect; none: the intercept).

    Terms are equal when their factors are, in any order (``a:b`` is ``b:a``), as in patsy.
    """

    factors: tuple[Factor, ...]

    @property
    def name(self) -> str:
        return ":".join(f.name for f in self.factors) or "Intercept"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Term) and frozenset(other.factors) == frozenset(self.factors)

    def __hash__(self) -> int:
        return hash(frozenset(self.factors))


@dataclass(frozen=True)
class Formula:
    """A parsed formula: the text, the response and the terms (the intercept first, if any)."""

    text: str
    response: Factor
    terms: tuple[Term, ...]


# -- tokens --------------------------------------------------------------------------------------


class _Token(NamedTuple):
    kind: str  # "name", "number", "string", "op" or "end"
    text: str
    at: int  # offset in the formula


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[^\W\d]\w*)
  | (?P<string>"[^"\\\n]*"|'[^'\\\n]*')
  | (?P<op>\*\*|[~+\-*/:(),=.])
""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[_Token]:
    tokens, at = [], 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            char = text[at]
            if char in "\"'":
                what = "a string that does not end on the line, or holds a backslash"
            elif char in "[]{}":
                what = f"a subscript or bracket {char!r}"
            else:
                what = repr(char)
            raise DipsyError(f"cannot read the formula {text!r}: at character {at + 1}, {what}", _WHAT_TO_WRITE)
        if m.lastgroup != "space":
            assert m.lastgroup is not None, "every alternative of _TOKEN is a named group"
            tokens.append(_Token(m.lastgroup, m.group(), at))
        at = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


_SPACED = ("+", "-", "*", "/", "**")


def _spell(tokens: list[_Token]) -> str:
    """The tokens written with patsy's spacing (its ``pretty_untokenize``), which names factors.

    A space either side of a binary operator, after a comma, none after ``(``; ``+``/``-`` not
    after a name, number, string or ``)`` are unary and take no space.
    """
    out, space, after_object = [], False, False
    for t in tokens:
        if t.kind != "op":
            out.append(" " * space + t.text)
            space, after_object = False, True
            continue
        both = t.text in _SPACED and (after_object or t.text not in "+-")
        out.append(" " * (space or both) + t.text)
        space, after_object = both or t.text == ",", t.text == ")"
    return "".join(out)


# -- the parser ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    """What a piece of a formula stands for (patsy's ``IntermediateExpr``): terms, whether it adds
    the intercept or removes it, and ``literal`` "0" or "1" when it is that number alone."""

    terms: tuple[Term, ...] = ()
    intercept: bool = False
    removed: bool = False
    literal: str | None = None


def parse(text: str) -> Formula:
    """Read ``text`` by the grammar above, without evaluating any of it.

    Raises
    ------
    DipsyError
        For anything outside the grammar, naming the character where it stands and the fix.

    >>> f = parse('Q("hours-per-week") ~ age + C(sex, Treatment(reference="Male"))')
    >>> f.response.name, [t.name for t in f.terms]
    ('Q("hours-per-week")', ['Intercept', 'age', 'C(sex, Treatment(reference="Male"))'])
    """
    if not isinstance(text, str):
        raise DipsyError(f"a formula is text, not {type(text).__name__}", "write it as e.g. 'y ~ x + C(group)'")
    try:
        return _Parser(text).formula()
    except RecursionError:  # thousands of nested brackets or signs: refused, not a crash
        raise DipsyError(
            f"cannot read the formula {text[:60]!r}…: it nests too deeply", "write it with fewer nested brackets and signs"
        ) from None


class _Parser:
    """Recursive descent over the tokens, one method per rule of the grammar."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.peek()
        self.i += token.kind != "end"
        return token

    def fail(self, token: _Token, what: str, fix: str = _WHAT_TO_WRITE) -> NoReturn:
        where = "at the end" if token.kind == "end" else f"at character {token.at + 1}"
        raise DipsyError(f"cannot read the formula {self.text!r}: {where}, {what}", fix)

    def expect(self, text: str, what: str) -> None:
        token = self.take()
        if token.text != text or token.kind != "op":
            self.fail(token, f"expected {text!r} {what}, found {_shown(token)}")

    def at_op(self, *ops: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == "op" and token.text in ops

    # formula level

    def formula(self) -> Formula:
        if not any(t.text == "~" and t.kind == "op" for t in self.tokens):
            raise DipsyError(
                f"cannot read the formula {self.text!r}: it has no '~'",
                "write the response, '~', then the terms, e.g. 'y ~ x + C(group)'",
            )
        if self.at_op("~"):
            self.fail(self.peek(), "no response before '~'", "write the response first, e.g. 'y ~ x'")
        response = self.factor()
        if not self.at_op("~"):
            self.fail(
                self.peek(),
                f"{self.peek().text!r} after the response",
                "the response is one column or one function of a column, then '~'",
            )
        self.take()
        part = self.sum()
        token = self.peek()
        if token.kind != "end":
            if token.text in ("/", "**"):
                self.fail(
                    token,
                    f"{token.text!r} between terms",
                    "write arithmetic inside I(), e.g. I(x ** 2) or I(x / z); "
                    "nesting (a/b) and powers of terms ((a + b) ** 2) are not read: write their terms out (a + a:b)",
                )
            self.fail(token, f"unexpected {token.text!r}", "join terms with + : * or -, and " + _WHAT_TO_WRITE)
        terms: list[Term] = [] if part.removed else [Term(())]
        for term in part.terms:
            if term not in terms:
                terms.append(term)
        return Formula(self.text, response, tuple(terms))

    def sum(self) -> _Part:
        part = self.product()
        while self.at_op("+", "-"):
            op = self.take().text
            right = self.product()
            part = _plus(part, right) if op == "+" else _minus(part, right)
        return part

    def product(self) -> _Part:
        part = self.interact()
        while self.at_op("*"):
            star = self.take()
            right = self.interact()
            part = _Part(part.terms + right.terms + self.interaction(part, right, star).terms)
        return part

    def interact(self) -> _Part:
        part = self.unary()
        while self.at_op(":"):
            colon = self.take()
            part = self.interaction(part, self.unary(), colon)
        return part

    def interaction(self, left: _Part, right: _Part, op: _Token) -> _Part:
        if any(p.intercept or p.removed or p.literal for p in (left, right)):
            self.fail(
                op, f"0 or 1 in the interaction {op.text!r}", "0 and 1 stand alone as terms (+ 0 or - 1 removes the intercept)"
            )
        return _Part(tuple(Term(_unique(a.factors + b.factors)) for a in left.terms for b in right.terms))

    def unary(self) -> _Part:
        token = self.peek()
        if self.at_op("+"):
            self.take()
            return self.unary()
        if self.at_op("-"):
            self.take()
            part = self.unary()
            if part.literal is None:
                self.fail(
                    token,
                    "a minus sign before a term",
                    "a minus sign stands before 0 or 1 (- 1 removes the intercept), or between terms (a + b - b)",
                )
            return _Part((), intercept=True) if part.literal == "0" else _Part((), removed=True)
        if self.at_op("("):
            self.take()
            part = self.sum()
            self.expect(")", "to close the '('")
            return part
        if token.kind == "number":
            if token.text not in ("0", "1"):
                self.fail(
                    token,
                    f"the number {token.text}",
                    f"numbers stand inside I(), e.g. I({token.text} * x); as terms only 0 and 1 (the intercept)",
                )
            self.take()
            return _Part((), intercept=token.text == "1", removed=token.text == "0", literal=token.text)
        return _Part((Term((self.factor(),)),))

    def factor(self) -> Factor:
        start, token = self.i, self.peek()
        if token.kind != "name":
            self.fail(token, f"expected a term, found {_shown(token)}")
        if self.at_op("(", ahead=1) and token.text in ("C", "I"):
            self.take()
            self.take()
            if token.text == "C":
                column = self.column()
                reference = self.treatment() if self.at_op(",") else None
                self.expect(")", "to close C(")
                return Factor(_spell(self.tokens[start : self.i]), column, "categorical", reference)
            expression = self.arith()
            self.expect(")", "to close I(")
            return Factor(_spell(self.tokens[start : self.i]), expression, "numeric")
        expression = self.aatom()
        coding = "guess" if isinstance(expression, Column) else "numeric"
        return Factor(_spell(self.tokens[start : self.i]), expression, coding)

    def treatment(self) -> object:
        self.take()  # the comma
        token = self.take()
        if token.text != "Treatment" or not self.at_op("("):
            self.fail(
                token,
                "a coding other than Treatment(...)",
                "C() takes a column and optionally Treatment(reference=<category>): treatment coding, the reference left out",
            )
        self.take()
        if self.peek().kind == "name" and self.peek().text == "reference" and self.at_op("=", ahead=1):
            self.i += 2
        negative = self.at_op("-")
        self.i += negative
        value = self.take()
        if value.kind == "number":
            number = int(value.text) if value.text.isdigit() else float(value.text)
            reference: object = -number if negative else number
        elif value.kind == "string" and not negative:
            reference = value.text[1:-1]
        else:
            self.fail(
                value,
                "a reference that is not a number or a quoted category",
                'write Treatment(reference=2) or Treatment(reference="Male")',
            )
        self.expect(")", "to close Treatment(")
        return reference

    def column(self) -> Column:
        token = self.take()
        if token.kind == "name" and token.text == "Q" and self.at_op("("):
            self.take()
            name = self.take()
            if name.kind != "string":
                self.fail(name, "Q() without a quoted column name", 'write Q("column name")')
            self.expect(")", "to close Q(")
            return Column(name.text[1:-1])
        if token.kind != "name":
            self.fail(token, f"expected a column, found {_shown(token)}")
        if keyword.iskeyword(token.text):
            self.fail(token, f"the Python keyword {token.text!r}", f'name a column so called as Q("{token.text}")')
        if self.at_op("(", "."):
            self.refuse_call(token)
        return Column(token.text)

    def refuse_call(self, token: _Token) -> NoReturn:
        if self.at_op("."):
            self.fail(
                token,
                f"the attribute {token.text}.{self.peek(1).text}",
                f"only np.{', np.'.join(FUNCTIONS)} are written with a dot: " + _WHAT_TO_WRITE,
            )
        self.fail(token, f"a call of {token.text}(), which a formula cannot call", _WHAT_TO_WRITE)

    # arithmetic (inside I() and function calls)

    def arith(self) -> Expression:
        left = self.aterm()
        while self.at_op("+", "-"):
            op = self.take().text
            left = Operation(op, left, self.aterm())
        return left

    def aterm(self) -> Expression:
        left = self.apower()
        while self.at_op("*", "/"):
            op = self.take().text
            left = Operation(op, left, self.apower())
        return left

    def apower(self) -> Expression:
        if self.at_op("+", "-"):
            sign = self.take().text
            operand = self.apower()
            return Negative(operand) if sign == "-" else operand
        base = self.aatom()
        if self.at_op("**"):
            self.take()
            return Operation("**", base, self.apower())
        return base

    def aatom(self) -> Expression:
        token = self.peek()
        if token.kind == "number":
            self.take()
            return Number(float(token.text))
        if self.at_op("("):
            self.take()
            inner = self.arith()
            self.expect(")", "to close the '('")
            return inner
        dotted = token.text == "np" and self.at_op(".", ahead=1) and self.peek(2).kind == "name"
        name = self.peek(2) if dotted else token
        if token.kind == "name" and name.text in FUNCTIONS and self.at_op("(", ahead=3 if dotted else 1):
            self.i += 4 if dotted else 2
            argument = self.arith()
            self.expect(")", f"to close {name.text}(")
            return Function(name.text, argument)
        if token.kind == "name" and token.text != "Q" and self.at_op("(", ".", ahead=1):
            self.take()
            self.refuse_call(token)
        return self.column()


def _shown(token: _Token) -> str:
    return repr(token.text) if token.kind != "end" else "nothing"


def _unique(factors: tuple[Factor, ...]) -> tuple[Factor, ...]:
    return tuple(dict.fromkeys(factors))


def _plus(left: _Part, right: _Part) -> _Part:
    if right.intercept:  # "+ 1" puts the intercept back
        return _Part(left.terms + right.terms, intercept=True)
    return _Part(left.terms + right.terms, left.intercept, left.removed or right.removed)


def _minus(left: _Part, right: _Part) -> _Part:
    if right.literal == "0":
        return _Part(left.terms, intercept=True)
    if right.literal == "1":
        return _Part(left.terms, removed=True)
    terms = tuple(t for t in left.terms if t not in right.terms)
    return _Part(terms, removed=True) if right.intercept else _Part(terms, left.intercept, left.removed)


# -- the design matrix ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Coded:
    """A categorical factor on the data: a level index per row (-1: missing), its levels, its reference."""

    codes: np.ndarray
    levels: tuple
    reference: int


def design(formula: Formula | str, data: pd.DataFrame, binary: bool = False) -> tuple[pd.Series, pd.DataFrame]:
    """The response and the design matrix of ``formula`` on ``data``, as patsy builds them.

    Rows missing any factor are left out. A categorical factor is coded by treatment contrasts
    against its first level (a pandas Categorical's first category, else the smallest value) or
    the ``Treatment(reference=...)`` one; where a term's lower-order terms are absent it is coded
    with all its levels instead, by patsy's rule, and columns are ordered as patsy orders them
    (terms with no numeric factor first, then by their numeric factors, lower orders first).

    Parameters
    ----------
    formula
        The text, or a parsed :class:`Formula`.
    data
        The table whose columns the formula names.
    binary
        For a logit: the response may then be categorical with two levels, coded 1 for the
        one that is not the reference.

    Returns
    -------
    tuple of pandas.Series and pandas.DataFrame
        The response and the design matrix, on the rows kept, with patsy's column names.

    Raises
    ------
    DipsyError
        For a formula the grammar refuses, a column the data lack, arithmetic on a categorical
        column, a reference that is not a level, or a response the model cannot take.

    >>> import pandas as pd
    >>> data = pd.DataFrame({"y": [1.0, 2, 4, 3], "x": [0.0, 1, 2, 3], "g": ["a", "b", "a", "b"]})
    >>> list(design("y ~ x + C(g)", data)[1].columns)
    ['Intercept', 'C(g)[T.b]', 'x']
    """
    import pandas as pd

    formula = parse(formula) if isinstance(formula, str) else formula
    factors = _unique((formula.response,) + tuple(f for t in formula.terms for f in t.factors))
    values = {f: _evaluate(formula, f, data) for f in factors}
    missing = np.zeros(len(data), dtype=bool)
    for v in values.values():
        missing |= (v.codes < 0) if isinstance(v, _Coded) else np.isnan(v)
    keep = ~missing
    numeric = {f for f, v in values.items() if not isinstance(v, _Coded)}
    buckets: dict[frozenset, list[Term]] = {}
    for term in formula.terms:  # patsy's order: grouped by numeric factors, no numeric factor first
        buckets.setdefault(frozenset(f for f in term.factors if f in numeric), []).append(term)
    columns: dict[str, np.ndarray] = {}
    for bucket in sorted(buckets, key=bool):  # stable: the bucket without numeric factors first, the rest as they came
        used: set[frozenset] = set()
        for term in sorted(buckets[bucket], key=lambda t: len(t.factors)):
            for coding in _codings(term, numeric, used):
                columns.update(_columns(term, coding, values, keep))
    index = data.index[keep]
    return _response(formula, values[formula.response], keep, index, binary), pd.DataFrame(columns, index=index)


def _evaluate(formula: Formula, factor: Factor, data: pd.DataFrame) -> np.ndarray | _Coded:
    """A numeric factor's values (NaN: missing) or a categorical one's codes."""
    import pandas as pd

    if factor.coding == "numeric":
        with np.errstate(all="ignore"):  # log(0), x / 0: -inf and NaN (left out), as NumPy gives them
            return np.asarray(_arithmetic(formula, factor, factor.expression, data), dtype=float)
    assert isinstance(factor.expression, Column), "the parser codes only a bare column or C(column) as categorical or guess"
    series = _series(formula, data, factor.expression.name)
    categorical = (
        isinstance(series.dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(series)
        or not pd.api.types.is_numeric_dtype(series)
    )
    if factor.coding == "guess" and not categorical:
        return series.to_numpy(dtype=float, na_value=np.nan)
    if isinstance(series.dtype, pd.CategoricalDtype):
        levels, codes = tuple(series.cat.categories.tolist()), series.cat.codes.to_numpy()
    else:
        levels = (
            (False, True)
            if pd.api.types.is_bool_dtype(series)
            else tuple(sorted(series.dropna().unique().tolist(), key=_level_order))
        )
        codes = pd.Categorical(series, categories=list(levels)).codes
    reference = 0
    if factor.reference is not None:
        found = [
            k for k, v in enumerate(levels) if isinstance(v, str) == isinstance(factor.reference, str) and v == factor.reference
        ]
        if not found:
            shown = ", ".join(map(repr, levels[:10])) + (", …" if len(levels) > 10 else "")
            raise DipsyError(
                f"cannot fit {formula.text!r}: the reference {factor.reference!r} of {factor.name} is not one of "
                f"its categories ({shown})",
                "name one of those categories as the reference",
            )
        reference = found[0]
    return _Coded(np.asarray(codes), levels, reference)


def _level_order(value: object) -> tuple:
    # numbers before text, each in its own order (patsy sorts levels the same way)
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))


def _series(formula: Formula, data: pd.DataFrame, name: str) -> pd.Series:
    if name not in data.columns:
        shown = ", ".join(map(str, list(data.columns)[:12])) + (", …" if len(data.columns) > 12 else "")
        raise DipsyError(
            f"cannot fit {formula.text!r}: the data have no column {name!r}",
            f'write the formula over the columns ({shown}), quoting a name that is not an identifier as Q("name")',
        )
    return data[name]


def _arithmetic(formula: Formula, factor: Factor, e: Expression, data: pd.DataFrame) -> np.ndarray | float:
    import pandas as pd

    if isinstance(e, Number):
        return e.value
    if isinstance(e, Column):
        series = _series(formula, data, e.name)
        if isinstance(series.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(series):
            raise DipsyError(
                f"cannot fit {formula.text!r}: {factor.name} computes with {e.name!r}, which holds categories",
                f"arithmetic and functions take numeric columns; for a categorical one write C({e.name})",
            )
        return series.to_numpy(dtype=float, na_value=np.nan)
    if isinstance(e, Negative):
        return -_arithmetic(formula, factor, e.operand, data)
    if isinstance(e, Function):
        return FUNCTIONS[e.function](_arithmetic(formula, factor, e.argument, data))
    left, right = _arithmetic(formula, factor, e.left, data), _arithmetic(formula, factor, e.right, data)
    if e.op == "+":
        return np.add(left, right)
    if e.op == "-":
        return np.subtract(left, right)
    if e.op == "*":
        return np.multiply(left, right)
    if e.op == "/":
        return np.divide(left, right)
    return np.power(left, right)


def _codings(term: Term, numeric: set[Factor], used: set[frozenset]) -> list[dict[Factor, bool]]:
    """patsy's choice of coding for a term's categorical factors, so that no column is redundant.

    The term is split into subterms (every subset of its categorical factors, each coded by
    contrasts), those spanned by earlier terms of its bucket (``used``) are dropped, and a
    subterm that is one factor short of a later one is absorbed into it, that factor then coded
    with all its levels (``True``). A ``C(a)`` after the intercept is coded by contrasts, alone
    with all levels; ``C(a):C(b)`` after the intercept alone gives ``C(a)`` full and ``C(b)``
    by contrasts (patsy's ``redundancy.py``, the rule of R's ``model.matrix``).
    """
    categorical = [f for f in term.factors if f not in numeric]
    subterms = []
    for size in range(len(categorical) + 1):
        for subset in combinations(categorical, size):
            subterm = frozenset((f, False) for f in subset)
            if subterm not in used:
                subterms.append(subterm)
    used.update(subterms)
    absorbed = True
    while absorbed:  # greedily, left to right, as patsy does
        absorbed = False
        for s, short in enumerate(subterms):
            for t in range(s + 1, len(subterms)):
                long = subterms[t]
                if len(long) == len(short) + 1 and long > short:
                    ((factor, _),) = long - short
                    subterms[t] = short | {(factor, True)}
                    del subterms[s]
                    absorbed = True
                    break
            if absorbed:
                break
    return [dict(subterm) for subterm in subterms]


def _columns(term: Term, coding: dict[Factor, bool], values: dict, keep: np.ndarray) -> dict[str, np.ndarray]:
    """The columns of one subterm: products of its factors' columns, named ``a[T.x]:b``."""
    if not term.factors:
        return {"Intercept": np.ones(int(keep.sum()))}
    parts = []
    for f in term.factors:
        v = values[f]
        if not isinstance(v, _Coded):
            parts.append([(f.name, v[keep])])
        elif f in coding:
            full, codes = coding[f], v.codes[keep]
            parts.append(
                [
                    (f"{f.name}[{'' if full else 'T.'}{level}]", (codes == k).astype(float))
                    for k, level in enumerate(v.levels)
                    if full or k != v.reference
                ]
            )
    out = {}
    for reverse in product(*reversed(parts)):  # the left-most factor varies fastest, as in patsy (and R)
        combo = reverse[::-1]
        column = np.ones(int(keep.sum()))
        for _, c in combo:
            column = column * c
        out[":".join(name for name, _ in combo)] = column
    return out


def _response(formula: Formula, value: np.ndarray | _Coded, keep: np.ndarray, index: pd.Index, binary: bool) -> pd.Series:
    import pandas as pd

    name = formula.response.name
    if not isinstance(value, _Coded):
        return pd.Series(value[keep], index=index, name=name)
    if not binary:
        raise DipsyError(
            f"cannot fit {formula.text!r}: the response {name} is categorical, and a linear model needs a number",
            "fit a logit (--model logit) for a response of two categories, or respond with a numeric column",
        )
    if len(value.levels) != 2:
        shown = ", ".join(map(repr, value.levels[:10])) + (", …" if len(value.levels) > 10 else "")
        raise DipsyError(
            f"cannot fit {formula.text!r}: the response {name} has {len(value.levels)} categories ({shown}), "
            "and a logit models one category against one other",
            "respond with a column of two categories, or a 0/1 column for one category against the rest "
            "(dipsy evaluate --sensitive COLUMN=CATEGORY models one category of a column)",
        )
    modelled = 1 - value.reference
    return pd.Series((value.codes[keep] == modelled).astype(float), index=index, name=f"{name}[T.{value.levels[modelled]}]")
