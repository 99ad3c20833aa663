r"""Noise samplers: exact integer noise for released counts, float noise for real-valued statistics.

Why exact
---------
Mironov (2012, "On significance of the least significant bits for differential privacy") showed
that Laplace noise drawn with floating-point arithmetic leaks the noiseless value through the
low-order bits of the noisy output: some outputs can only arise from some inputs, and a privacy
loss the accountant never sees follows. The discrete samplers here avoid the problem at its root.
They use only integer arithmetic on exactly uniform random integers from
:meth:`dipsy.privacy.rng.Randomness.below`, and every probability they realise is an exact rational,
so each draw follows its stated distribution exactly (given a perfect uniform source; in seeded
mode the source is NumPy's PCG64, which is for testing, not for production releases).

Released counts must use :func:`discrete_laplace` or :func:`discrete_gaussian`; :func:`laplace` and
:func:`gaussian` are for real-valued statistics only and carry Mironov's caveat.

Algorithms and proofs of exactness (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
Differential Privacy", NeurIPS; arXiv:2004.00010 — "CKS" below)
--------------------------------------------------------------------------------------------

*Bernoulli(exp(-γ)), CKS Algorithm 1* (:func:`bernoulli_exp`). For ``γ ∈ [0, 1]``: set ``K = 1``;
draw ``A ~ Bernoulli(γ/K)``; while ``A = 1`` increase ``K`` and redraw; return ``1`` iff ``K`` is
odd. The loop passes ``K = k`` with probability ``γ^k/k!``, so
``P[K = k] = γ^(k-1)/(k-1)! - γ^k/k!`` and
``P[K odd] = Σ_{j≥0} (-γ)^j/j! = exp(-γ)``. For ``γ > 1``:
``exp(-γ) = exp(-1)^⌊γ⌋ · exp(-(γ - ⌊γ⌋))``, so the output is the AND of ``⌊γ⌋`` independent
Bernoulli(exp(-1)) draws and one Bernoulli(exp(-(γ - ⌊γ⌋))) draw, stopping at the first 0. With
``γ = n/d`` rational, ``Bernoulli(n/(dK))`` is ``[U < n]`` for ``U`` uniform on ``{0, …, dK-1}``;
when ``dK`` would pass ``2**64`` it is the AND of independent ``Bernoulli(n/d)`` and
``Bernoulli(1/K)`` (probabilities multiply), so no bound ever passes 64 bits there.

*Discrete Laplace, CKS Algorithm 2* (:func:`discrete_laplace`), scale ``t/s`` in lowest terms.
Draw ``U`` uniform on ``{0, …, t-1}`` and keep it with probability ``exp(-U/t)`` (Alg. 1), so a kept
``U`` has ``P ∝ exp(-u/t)``; draw ``V`` = the number of successes of Bernoulli(exp(-1)) before the
first failure, ``P[V = v] = (1 - e^-1) e^-v``. Then ``X = U + tV`` has
``P[X = x] ∝ exp(-(x mod t)/t) exp(-⌊x/t⌋) = exp(-x/t)`` on ``{0, 1, …}``, and ``Y = ⌊X/s⌋`` has
``P[Y = y] = Σ_{x=ys}^{ys+s-1} P[X = x] ∝ exp(-ys/t)``, geometric with ratio ``exp(-1/scale)``.
A fair sign ``B`` is drawn and ``(B = 1, Y = 0)`` is rejected, so ``0`` is not counted twice; the
output ``(1 - 2B) Y`` then has ``P[z] ∝ exp(-|z|/scale)`` on all of ℤ, i.e.
``P[z] = (1 - e^(-1/scale))/(1 + e^(-1/scale)) · exp(-|z|/scale)``.

*Discrete Gaussian, CKS Algorithm 3* (:func:`discrete_gaussian`), ``σ² = n/d``. With any integer
``t > 0`` (here ``t = ⌊σ⌋ + 1``, CKS's efficient choice), draw ``Y`` discrete Laplace with scale
``t`` and accept it with probability ``exp(-(|Y| - σ²/t)²/(2σ²))``, which is at most 1. A
candidate ``y`` is output with probability proportional to
``exp(-|y|/t) · exp(-(|y| - σ²/t)²/(2σ²)) = exp(-y²/(2σ²)) · exp(-σ²/(2t²))``, and the second
factor does not depend on ``y``: the output is exactly ``N_ℤ(0, σ²)``,
``P[x] ∝ exp(-x²/(2σ²))``. In integers, with ``a = ||Y| d t - n|`` the exponent is ``a²/D`` with
``D = 2 n d t²``.

Privacy facts the methods cite
------------------------------
- Discrete Laplace with scale ``Δ/ε`` added to an integer-valued query of L1 sensitivity ``Δ``
  (coordinate-wise, independent noise) is ε-DP: the noise pmfs at ``z`` and ``z + k`` differ by at
  most the factor ``exp(|k| ε/Δ)``, and the shifts add up to at most ``Δ`` (Ghosh, Roughgarden &
  Sundararajan 2009, the geometric mechanism; CKS 2020).
- Discrete Gaussian with variance parameter ``σ²`` added to an integer-valued query of L2
  sensitivity ``Δ`` is ``Δ²/(2σ²)``-zCDP (CKS 2020, Theorem 4 for one query, and its multivariate
  corollary for independent noise on each coordinate of a vector of counts) — the same ρ as the
  continuous Gaussian mechanism.

Vectorisation and economy
-------------------------
Every sampler works on whole arrays: each loop is over *rounds* (of rejection, of Algorithm 1's
``K``, of the ⌊γ⌋ Bernoulli(exp(-1)) trials), each round acting on the still-pending elements,
whose number falls geometrically (Alg. 1 continues past ``K = k`` with probability at most
``1/k!``; each Bernoulli(exp(-1)) trial stops an element with probability ``1 - e^-1``). So a
call does ``O(log size)`` rounds and ``O(size)`` expected work. Three exact economies:

- a coin needs a few random bits, not 64: uniform integers below small bounds are cut as fields
  from 63-bit words of :meth:`Randomness.below` and made exactly uniform by rejection
  (:func:`_uniform`);
- Bernoulli(exp(-1)), the most used coin, settles Algorithm 1's first ten rounds with one draw
  (``K > k`` iff ``U < 10!/k!`` for ``U`` uniform on ``[0, 10!)``; :func:`_exp_minus_one`);
- the discrete Gaussian merges its rejection loop with the discrete Laplace's: each round gives
  every pending element one independent attempt (proposal, then acceptance coin).

Size limits and fallbacks
-------------------------
Fast paths keep every intermediate in ``uint64`` where it provably fits:

- :func:`bernoulli_exp`: ``num`` and ``den`` below ``2**64`` (``⌊γ⌋`` and ``γ - ⌊γ⌋`` by one
  integer division; ``dK`` is split as above when it would pass ``2**64 - 1``).
- :func:`discrete_laplace`: ``t`` and ``s`` below ``2**64``, and ``U + tV`` computed in ``uint64``
  while ``V <= (2**64 - t)/t``.
- :func:`discrete_gaussian`: ``D = 2 n d t² < 2**64`` (for an integer σ², about σ² < 3·10⁹) and
  ``|Y| d t < 2**64``. The test ``a²/D ≥ k + 1`` is made as ``a ≥ ⌈√((k+1)D)⌉`` (an integer square
  root per round, in Python), so ``a²`` is never formed except for ``a² - kD``, which lies in
  ``[0, D)`` and is therefore exact in wrapping ``uint64`` arithmetic.

Beyond these sizes (huge numerators or denominators, e.g. σ² read from a float with 16 or 17
significant digits, such as ``0.1234567891234567``, or σ² ≳ 3·10⁹) the same algorithms run on
NumPy object arrays of Python integers, exact at any size but slower (measured: 3-5 times for
the discrete Gaussian, about 20 times for a discrete Laplace whose ``t`` passes 64 bits); uniform
integers below a bound ``≥ 2**64`` are then built from several 63-bit words with rejection
(:func:`_below_big`). Outputs are ``int64``: scales above ``2**56`` (σ² above ``2**112``) are
refused, and a draw that would not fit ``int64`` (probability about ``exp(-128)`` at worst) raises
``OverflowError`` instead of wrapping.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np

from ..errors import DipsyError
from .budget import positive
from .rng import Randomness

__all__ = [
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_gaussian_pmf",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "gaussian",
    "laplace",
    "to_fraction",
]

_MAX = 2**64 - 1  # largest uint64
_INT64_MAX = 2**63 - 1
_WORD_BITS = 63  # Randomness.below takes bounds < 2**64, so one exact draw gives 63 uniform bits
_SPARE_BITS = 8  # extra bits per small uniform draw: a draw is rejected with probability < 2**-8
_MAX_SCALE = Fraction(2**56)  # keeps P[|draw| > 2**63 - 1] near exp(-128) at worst

Size = int | tuple[int, ...]


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------


def to_fraction(x: Any, name: str = "value") -> Fraction:
    """The exact positive rational a user meant by ``x``.

    A float is read as its shortest decimal ``repr`` (what the user typed: ``0.1`` is 1/10, not
    the binary double 3602879701896397/36028797018963968); a string as written (``"1/3"``,
    ``"0.25"``, ``"1e-3"``); an ``int`` or any rational (``Fraction``) as is.

    Raises :class:`~dipsy.errors.DipsyError` for nan, infinities, values ``<= 0``, booleans and
    other types.

    >>> to_fraction(0.1) == Fraction(1, 10)
    True
    >>> to_fraction("1/3"), to_fraction(2)
    (Fraction(1, 3), Fraction(2, 1))
    """
    value: Fraction | None = None
    if isinstance(x, (bool, np.bool_)):
        value = None
    elif isinstance(x, (int, np.integer)):
        value = Fraction(int(x))
    elif isinstance(x, Rational):
        value = Fraction(int(x.numerator), int(x.denominator))
    elif isinstance(x, (float, np.floating)):
        if math.isfinite(float(x)):
            value = Fraction(repr(float(x)))  # repr of np.float64 is "np.float64(...)": go via float
    elif isinstance(x, str):
        try:
            value = Fraction(x.strip())  # refuses "nan", "inf" and junk with ValueError
        except (ValueError, ZeroDivisionError):
            value = None
    if value is None or value <= 0:
        raise DipsyError(
            f"{name} must be a finite number > 0, got {x!r}",
            f"give {name} as a positive number or fraction, e.g. 0.5 or '1/3'",
        )
    return value


def _shape(size: Size) -> tuple[int, ...]:
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size) if isinstance(size, (tuple, list)) else (size,)
    if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0 for n in shape):
        raise ValueError(f"size must be a whole number >= 0 or a tuple of them, got {size!r}")
    return tuple(int(n) for n in shape)


def _exact_integers(x: Any, name: str) -> np.ndarray:
    """``x`` as a ``uint64`` array when every value fits, else an object array of Python ints."""
    a = np.asarray(x)
    if a.dtype.kind == "u":
        return a.astype(np.uint64)
    if a.dtype.kind == "i":
        if np.any(a < 0):
            raise ValueError(f"{name} must be non-negative integers")
        return a.astype(np.uint64)
    if a.dtype != object:
        raise TypeError(f"{name} must be integers (exact arithmetic only), got dtype {a.dtype}")
    # object input (the big-integer fallback): Python ints of any size, checked one by one
    flat = a.reshape(-1)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in flat):
        raise TypeError(f"{name} must be integers (exact arithmetic only)")
    flat = np.array([int(v) for v in flat], dtype=object).reshape(-1)
    if flat.size and flat.min() < 0:
        raise ValueError(f"{name} must be non-negative integers")
    out = flat.astype(np.uint64) if (not flat.size or flat.max() <= _MAX) else flat
    return out.reshape(a.shape)


# --------------------------------------------------------------------------------------------
# Uniform integers and Bernoulli coins
# --------------------------------------------------------------------------------------------


def _below_big(bound: np.ndarray, rand: Randomness) -> np.ndarray:
    """Exact uniform integers in ``[0, bound)`` for an object array of Python ints of any size.

    Fallback for bounds that need not fit 64 bits. A candidate is ``w = Σ_i w_i 2^(63 i)`` from
    ``k`` independent 63-bit words, uniform on ``[0, 2^(63k))``; it is kept when
    ``w < L = 2^(63k) - (2^(63k) mod b)``, and then ``w mod b`` is exactly uniform on ``[0, b)``
    (``L`` is a multiple of ``b``). ``k`` is chosen so that ``2^(63k) >= 2^63 b``, so a candidate is
    rejected with probability below ``2**-63``.
    """
    flat = bound.reshape(-1)
    out = np.empty(flat.size, dtype=object)
    if flat.size == 0:
        return out.reshape(bound.shape)
    words = -(-int(flat.max()).bit_length() // _WORD_BITS) + 1
    span = 1 << (_WORD_BITS * words)
    limit = span - span % flat
    pending = np.arange(flat.size)
    while pending.size:
        w = np.zeros(pending.size, dtype=object)
        for _ in range(words):  # a loop over words, not over elements
            w = w * (1 << _WORD_BITS) + rand.below(1 << _WORD_BITS, size=pending.size).astype(object)
        keep = (w < limit[pending]).astype(bool)
        out[pending[keep]] = w[keep] % flat[pending[keep]]
        pending = pending[~keep]
    return out.reshape(bound.shape)


def _chunks(m: int, bits: int, rand: Randomness) -> np.ndarray:
    """``m`` independent uniform integers in ``[0, 2**bits)``, cut from 63-bit words.

    A draw of :meth:`Randomness.below` with bound ``2**63`` is 63 independent fair bits, so
    disjoint ``bits``-wide fields of it are independent and uniform. Most coins here need a few
    bits, not 64: cutting words into fields spends the secure source (and NumPy's stream) several
    times less than one ``below`` per coin.
    """
    per = _WORD_BITS // bits
    words = rand.below(1 << _WORD_BITS, size=-(-m // per))
    if per == 1:
        return words & np.uint64((1 << bits) - 1)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    return ((words[:, None] >> shifts) & np.uint64((1 << bits) - 1)).reshape(-1)[:m]


def _mod(v: np.ndarray, b: np.ndarray | np.uint64) -> np.ndarray:
    """``v mod b`` for uint64, as ``v - (v // b) b`` (NumPy divides by a scalar much faster than it
    takes a remainder)."""
    return v - (v // b) * b


def _uniform(bound: np.ndarray | int, m: int, rand: Randomness) -> np.ndarray:
    """``m`` exact uniform integers in ``[0, bound)``; ``bound`` an int or a uint64 array of ``m``.

    A power-of-two scalar bound takes exactly its bits. Otherwise a field of
    ``w = bitlength(bound - 1) + 8`` bits ``v`` is kept when ``v < 2**w - (2**w mod bound)`` (a
    multiple of ``bound``), and ``v mod bound`` is then exactly uniform; a field is rejected with
    probability below ``2**-8`` and redrawn (each position independently, until kept). Bounds of
    more than 55 bits take one full :meth:`Randomness.below` each.
    """
    scalar = np.ndim(bound) == 0
    top = int(bound) if scalar else (int(np.max(bound)) if m else 1)
    if scalar and top & (top - 1) == 0:  # power of two: its bits, no rejection
        return _chunks(m, top.bit_length() - 1, rand) if top > 1 else np.zeros(m, dtype=np.uint64)
    bits = (top - 1).bit_length() + _SPARE_BITS
    if bits > _WORD_BITS:
        return rand.below(bound, size=m) if scalar else rand.below(bound)
    span = np.uint64(1 << bits)
    b = np.uint64(bound) if scalar else np.asarray(bound)
    limit = span - span % b  # the largest multiple of the bound that is <= 2**bits
    v = _chunks(m, bits, rand)
    out = _mod(v, b)
    redo = np.flatnonzero(v >= limit)
    while redo.size:  # b and limit are arrays exactly when the bound is
        v = _chunks(redo.size, bits, rand)
        out[redo] = _mod(v, b[redo] if isinstance(b, np.ndarray) else b)
        redo = redo[np.flatnonzero(v >= (limit[redo] if isinstance(limit, np.ndarray) else limit))]
    return out


def _below_const(bound: int, m: int, rand: Randomness) -> np.ndarray:
    """``m`` exact uniform integers in ``[0, bound)`` for one Python int ``bound``."""
    if bound <= _MAX:
        return _uniform(bound, m, rand)
    return _below_big(np.full(m, bound, dtype=object), rand)


def _coin(num: np.ndarray, den: np.ndarray | int, k: int, rand: Randomness) -> np.ndarray:
    """Bernoulli(num/(den·k)) per element, exactly (``num <= den``).

    ``den`` is one Python int for all elements, or an array of ``num``'s dtype (uint64 or object).
    When ``den·k`` would pass ``2**64 - 1`` in uint64, the coin is Bernoulli(num/den) AND
    Bernoulli(1/k): two independent coins whose probabilities multiply.
    """
    m = num.size
    if not isinstance(den, np.ndarray) or den.ndim == 0:  # np.ndim(den) == 0
        den = int(den)
        if den * k <= _MAX or den > _MAX:
            return (_below_const(den * k, m, rand) < num).astype(bool)
        return (_uniform(den, m, rand) < num) & (_uniform(k, m, rand) == 0)
    if den.dtype == object:
        return (_below_big(den * k, rand) < num).astype(bool)
    if k == 1:
        return _uniform(den, m, rand) < num
    fits = den <= np.uint64(_MAX // k)
    if fits.all():
        return _uniform(den * np.uint64(k), m, rand) < num
    hit = _uniform(np.where(fits, den * np.uint64(k), den), m, rand) < num  # den*k wraps only where masked
    wide = ~fits
    hit[wide] &= _uniform(k, int(wide.sum()), rand) == 0
    return hit


#: Algorithm 1 with γ = 1 continues past ``K = k`` with probability ``1/k!``; with ``U`` uniform
#: on ``[0, 10!)``, the events ``{U < 10!/k!}``, k = 1..10, are nested with exactly these
#: probabilities, so one draw settles the first ten rounds (see :func:`_exp_minus_one`).
_ROUNDS = 10
_ROUNDS_SPAN = math.factorial(_ROUNDS)
_ROUNDS_THRESHOLDS = tuple(np.uint64(_ROUNDS_SPAN // math.factorial(k)) for k in range(2, _ROUNDS + 1))


def _exp_minus_one(m: int, rand: Randomness) -> np.ndarray:
    """``m`` independent Bernoulli(exp(-1)) draws: CKS Algorithm 1 with γ = 1.

    Algorithm 1 draws ``A_k ~ Bernoulli(1/k)`` for ``k = 1, 2, …`` until one is 0 and outputs 1
    iff that ``K`` is odd; so ``P[K > k] = 1/k!``, and the law of ``K`` is fixed by these numbers.
    One uniform ``U`` on ``[0, 10!)`` realises them for ``k <= 10`` at once: ``K > k`` iff
    ``U < 10!/k!``, probability exactly ``1/k!``, and ``K = 1 + #{k <= 10 : U < 10!/k!}``. When
    ``U = 0`` (``K > 10``, probability ``1/10!``) the loop goes on from ``k = 11``, which by the
    loop's memorylessness has the right conditional law.
    """
    u = _uniform(_ROUNDS_SPAN, m, rand)
    passed = np.ones(m, dtype=np.uint8)  # k = 1: A_1 ~ Bernoulli(1) always continues
    for threshold in _ROUNDS_THRESHOLDS:
        passed += u < threshold
    out = passed % 2 == 0  # K = passed + 1 is odd
    deep = np.flatnonzero(passed == _ROUNDS)
    k = _ROUNDS + 1
    while deep.size:  # K > 10: Algorithm 1 itself, from k = 11 (probability 1/10! per element)
        a = _uniform(k, deep.size, rand) == 0
        out[deep] = k % 2 == 1
        deep = deep[np.flatnonzero(a)]
        k += 1
    return out


def _geometric_exp_minus_one(m: int, rand: Randomness) -> np.ndarray:
    """``m`` draws of V = successes of Bernoulli(exp(-1)) before the first failure (uint64)."""
    v = np.zeros(m, dtype=np.uint64)
    pending = np.arange(m)
    while pending.size:
        pending = np.compress(_exp_minus_one(pending.size, rand), pending)
        v[pending] += np.uint64(1)
    return v


def _bernoulli_exp_unit(num: np.ndarray, den: np.ndarray | int, rand: Randomness) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for ``0 <= num <= den``: CKS Algorithm 1, the γ ∈ [0, 1] loop.

    ``den`` is one int for all elements or an array like ``num``. All pending elements share ``K``
    (they start at 1 and step together), so ``K`` is a scalar.
    """
    out = np.empty(num.size, dtype=bool)
    pending = np.arange(num.size)
    shared = np.ndim(den) == 0
    k = 1
    while pending.size:
        a = _coin(num, den, k, rand)  # A ~ Bernoulli(γ/K)
        out[pending] = k % 2 == 1  # right for those stopping at K = k; the others are rewritten
        go = np.flatnonzero(a)
        pending, num = pending[go], num[go]
        den = den[go] if isinstance(den, np.ndarray) and not shared else den
        k += 1
    return out


def _bernoulli_exp(num: np.ndarray, den: np.ndarray, rand: Randomness) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for flat arrays of one dtype (uint64 or object), any γ >= 0."""
    whole, frac = num // den, num % den
    passed = np.ones(num.size, dtype=bool)
    # ⌊γ⌋ independent Bernoulli(exp(-1)) trials, stopping an element at its first failure
    pending = np.flatnonzero(whole > 0)
    left = whole[pending]
    while pending.size:
        ok = _exp_minus_one(pending.size, rand)
        passed[pending[~ok]] = False
        pending, left = pending[ok], left[ok] - 1
        more = (left > 0).astype(bool)
        pending, left = pending[more], left[more]
    # then one Bernoulli(exp(-(γ - ⌊γ⌋))) for the survivors
    out = np.zeros(num.size, dtype=bool)
    alive = np.flatnonzero(passed)
    out[alive] = _bernoulli_exp_unit(frac[alive], den[alive], rand)
    return out


def bernoulli_exp(num: Any, den: Any, rand: Randomness) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) draws, one per element (CKS 2020, Algorithm 1).

    Parameters
    ----------
    num, den : array_like of int
        Non-negative integers and integers ``>= 1``, broadcast together; ``γ = num/den`` may exceed
        1 (the floor/fraction split). Python ints of any size are accepted (exact object-array
        fallback above ``2**64 - 1``); floats are refused.
    rand : Randomness
        The run's randomness; only :meth:`Randomness.below` is used.

    Returns
    -------
    numpy.ndarray of bool
        ``True`` with probability exactly ``exp(-num/den)``.

    >>> bernoulli_exp([0, 0], [1, 5], Randomness.from_seed(1)).tolist()
    [True, True]
    """
    n, d = _exact_integers(num, "num"), _exact_integers(den, "den")
    n, d = np.broadcast_arrays(n, d)
    if d.size and np.any(d < 1):
        raise ValueError("den must be integers >= 1")
    if n.dtype == object or d.dtype == object:
        n, d = n.astype(object), d.astype(object)
    shape = n.shape
    return _bernoulli_exp(n.reshape(-1).copy(), d.reshape(-1).copy(), rand).reshape(shape)


# --------------------------------------------------------------------------------------------
# Discrete Laplace
# --------------------------------------------------------------------------------------------


def _to_int64(y: np.ndarray) -> np.ndarray:
    """Non-negative integers (uint64 or object) as int64, refusing rather than wrapping."""
    if y.size and y.max() > _INT64_MAX:
        raise OverflowError("a noise draw does not fit int64 (probability about exp(-128)); draw again")
    return y.astype(np.int64)


def _laplace_round(t: int, s: int, m: int, rand: Randomness) -> tuple[np.ndarray, np.ndarray]:
    """One pass of CKS Algorithm 2 over ``m`` candidates: (positions accepted, their int64 values)."""
    if t == 1:
        # U is always 0 and Bernoulli(exp(-0/1)) is 1 surely: X = V
        pos = np.arange(m)
        x: np.ndarray = _geometric_exp_minus_one(m, rand)
    else:
        u = _below_const(t, m, rand)
        pos = np.flatnonzero(_bernoulli_exp_unit(u, t, rand))  # keep U with prob. exp(-U/t)
        u = u[pos]
        v = _geometric_exp_minus_one(pos.size, rand)
        if u.dtype != object and (not v.size or int(v.max()) <= (_MAX - (t - 1)) // t):
            x = u + np.uint64(t) * v  # fits: U + tV <= (t - 1) + t·(2**64 - t)/t
        else:
            x = u.astype(object) + t * v.astype(object)
    if x.dtype == object or s > _MAX:
        y = _to_int64(x.astype(object) // s)
    else:
        y = _to_int64(x // np.uint64(s))
    negative = _uniform(2, y.size, rand) == 1
    keep = np.flatnonzero(~(negative & (y == 0)))  # reject (B = 1, Y = 0): 0 is not counted twice
    return pos[keep], np.where(negative, -y, y)[keep]


def _discrete_laplace_flat(t: int, s: int, m: int, rand: Randomness) -> np.ndarray:
    out = np.empty(m, dtype=np.int64)
    pending = np.arange(m)
    while pending.size:
        pos, values = _laplace_round(t, s, pending.size, rand)
        out[pending[pos]] = values
        left = np.ones(pending.size, dtype=bool)
        left[pos] = False
        pending = np.compress(left, pending)
    return out


def discrete_laplace(scale: Any, size: Size, rand: Randomness) -> np.ndarray:
    r"""Exact discrete Laplace noise: ``P[X = x] ∝ exp(-|x| / scale)`` on the integers.

    CKS 2020, Algorithm 2 with ``scale = t/s`` (see the module docstring for the proof). For a
    count query of L1 sensitivity ``Δ``, ``scale = Δ/ε`` gives ε-DP (Ghosh, Roughgarden &
    Sundararajan 2009; CKS 2020). The variance is ``2 e^(-1/scale)/(1 - e^(-1/scale))²``.

    Parameters
    ----------
    scale : int, float, str or Fraction
        Read exactly by :func:`to_fraction` (``0.1`` is 1/10); ``0 < scale <= 2**56``.
    size : int or tuple of int
        Output shape.
    rand : Randomness
        Secure (``os.urandom``) without a seed, reproducible with one.

    Returns
    -------
    numpy.ndarray of int64

    >>> x = discrete_laplace(Fraction(3, 2), 5, Randomness.from_seed(7))
    >>> x.dtype, x.shape
    (dtype('int64'), (5,))
    """
    b = to_fraction(scale, "scale")
    if b > _MAX_SCALE:
        raise DipsyError(f"scale {float(b):g} is too large for int64 noise (limit 2**56)", "use a smaller scale")
    shape = _shape(size)
    return _discrete_laplace_flat(b.numerator, b.denominator, math.prod(shape), rand).reshape(shape)


# --------------------------------------------------------------------------------------------
# Discrete Gaussian
# --------------------------------------------------------------------------------------------


def _bernoulli_exp_square(a: np.ndarray, big_d: int, rand: Randomness) -> np.ndarray:
    """Bernoulli(exp(-a²/D)) per element of ``a`` (uint64 with ``D < 2**64``, or object, any size).

    Round ``k`` (from 0) holds the elements that survived ``k`` Bernoulli(exp(-1)) trials and have
    ``a²/D >= k``. Those with ``a²/D < k + 1``, i.e. ``a < T_k = ⌈√((k+1)D)⌉``, leave for the
    fractional coin Bernoulli(exp(-(a² - kD)/D)); the others take one more trial. ``a² - kD`` lies
    in ``[0, D)``, so computing it modulo ``2**64`` (wrapping uint64) gives it exactly.
    """
    wrap = a.dtype != object
    leaving: list[np.ndarray] = []
    numerators: list[np.ndarray] = []
    pending = np.arange(a.size)
    k = 0
    while pending.size:
        threshold = math.isqrt((k + 1) * big_d - 1) + 1  # least T with T² >= (k+1)D
        ak = a[pending]
        low = np.ones(ak.size, dtype=bool) if wrap and threshold > _MAX else (ak < threshold).astype(bool)
        if low.any():
            al = ak[low]
            if wrap:
                numerators.append(al * al - np.uint64((k * big_d) & _MAX))
            else:
                numerators.append(al * al - k * big_d)
            leaving.append(pending[low])
        high = pending[~low]
        pending = high[_exp_minus_one(high.size, rand)]
        k += 1
    out = np.zeros(a.size, dtype=bool)
    if leaving:
        idx = np.concatenate(leaving)
        out[idx] = _bernoulli_exp_unit(np.concatenate(numerators), big_d, rand)
    return out


def _accept_gaussian(mag: np.ndarray, n: int, c: int, big_d: int, rand: Randomness) -> np.ndarray:
    """CKS Alg. 3's coin: Bernoulli(exp(-a²/D)) with ``a = ||Y| c - n|``, ``c = d t``, ``D = 2 n d t²``."""
    accept = np.empty(mag.size, dtype=bool)
    fast = mag <= np.uint64(_MAX // c) if big_d <= _MAX else np.zeros(mag.size, dtype=bool)
    if fast.any():
        p = mag[fast] * np.uint64(c)
        n64 = np.uint64(n)  # n < D <= 2**64 - 1
        a = np.where(p >= n64, p - n64, n64 - p)  # |p - n| without leaving uint64
        accept[fast] = _bernoulli_exp_square(a, big_d, rand)
    slow = ~fast
    if slow.any():
        a = np.abs(mag[slow].astype(object) * c - n)
        accept[slow] = _bernoulli_exp_square(a, big_d, rand)
    return accept


def discrete_gaussian(sigma2: Any, size: Size, rand: Randomness) -> np.ndarray:
    r"""Exact discrete Gaussian noise: ``P[X = x] ∝ exp(-x² / (2 σ²))`` on the integers.

    CKS 2020, Algorithm 3 with ``t = ⌊σ⌋ + 1`` (see the module docstring for the proof). For an
    integer query of L2 sensitivity ``Δ`` the release is ``Δ²/(2σ²)``-zCDP (CKS 2020, Theorem 4).
    Its variance is below ``σ²`` (CKS 2020 bound it by ``σ²`` and by the variance of the
    discrete Laplace proposal); :func:`discrete_gaussian_pmf` gives it exactly as a float sum.

    Parameters
    ----------
    sigma2 : int, float, str or Fraction
        The variance parameter σ², read exactly by :func:`to_fraction`; ``0 < σ² <= 2**112``.
    size : int or tuple of int
        Output shape.
    rand : Randomness
        Secure (``os.urandom``) without a seed, reproducible with one.

    Returns
    -------
    numpy.ndarray of int64

    >>> discrete_gaussian("7/2", (2, 3), Randomness.from_seed(7)).shape
    (2, 3)
    """
    s2 = to_fraction(sigma2, "sigma2")
    if s2 > _MAX_SCALE**2:
        raise DipsyError(f"sigma2 {float(s2):g} is too large for int64 noise (limit 2**112)", "use a smaller sigma2")
    shape = _shape(size)
    n, d = s2.numerator, s2.denominator
    t = math.isqrt(n // d) + 1  # ⌊σ⌋ + 1, as ⌊√⌊x⌋⌋ = ⌊√x⌋
    big_d = 2 * n * d * t * t
    out = np.empty(math.prod(shape), dtype=np.int64)
    pending = np.arange(out.size)
    while pending.size:
        # one attempt per pending element: a round of Algorithm 2 (which may yield no candidate),
        # then Algorithm 3's coin on the candidates. Attempts are independent and identical, so
        # merging the two rejection loops leaves the law of the accepted value unchanged.
        pos, y = _laplace_round(t, 1, pending.size, rand)
        keep = np.flatnonzero(_accept_gaussian(np.abs(y).astype(np.uint64), n, d * t, big_d, rand))
        out[pending[pos[keep]]] = y[keep]
        left = np.ones(pending.size, dtype=bool)
        left[pos[keep]] = False
        pending = np.compress(left, pending)
    return out.reshape(shape)


# --------------------------------------------------------------------------------------------
# Floating-point samplers (real-valued statistics only)
# --------------------------------------------------------------------------------------------


def laplace(scale: Any, size: Size, rand: Randomness) -> np.ndarray:
    """Continuous Laplace noise, density ``exp(-|x|/scale)/(2 scale)``, from ``rand.numpy``.

    For real-valued statistics only. Floating-point Laplace noise can leak the noiseless value
    through its low-order bits (Mironov 2012), so the ε-DP of the Laplace mechanism holds for the
    ideal real-valued mechanism, not exactly for this float implementation. Released counts must
    use :func:`discrete_laplace`.

    >>> laplace(1.0, 3, Randomness.from_seed(0)).dtype
    dtype('float64')
    """
    return rand.numpy.laplace(0.0, positive("scale", scale), _shape(size))


def gaussian(sigma: Any, size: Size, rand: Randomness) -> np.ndarray:
    """Continuous Gaussian noise with standard deviation ``sigma``, from ``rand.numpy``.

    For real-valued statistics only, with the same caveat as :func:`laplace`: floating-point
    Gaussian noise can leak through its low-order bits (Mironov 2012). Released counts must use
    :func:`discrete_gaussian`.

    >>> gaussian(2.0, (2, 2), Randomness.from_seed(0)).shape
    (2, 2)
    """
    return rand.numpy.normal(0.0, positive("sigma", sigma), _shape(size))


# --------------------------------------------------------------------------------------------
# Probability mass functions (for tests and variance formulas; floats, not used to sample)
# --------------------------------------------------------------------------------------------


def discrete_laplace_pmf(x: Any, scale: Any) -> np.ndarray:
    """``P[X = x] = (1 - e^(-1/b))/(1 + e^(-1/b)) · e^(-|x|/b)`` with ``b = scale``.

    The constant is ``tanh(1/(2b))``, evaluated that way for accuracy at large ``b``.

    >>> float(discrete_laplace_pmf(0, 1)) == math.tanh(0.5)
    True
    """
    b = float(to_fraction(scale, "scale"))
    return np.tanh(0.5 / b) * np.exp(-np.abs(np.asarray(x, dtype=float)) / b)


def discrete_gaussian_pmf(x: Any, sigma2: Any) -> np.ndarray:
    """``P[X = x] = exp(-x²/(2σ²)) / Σ_k exp(-k²/(2σ²))``.

    The normaliser is summed over ``|k| <= 40σ + 1`` (the terms left out are below ``e^-800``);
    for ``σ >= 10`` it is ``√(2πσ²)``, exact to within a factor ``1 + 2e^(-2π²σ²)`` by Poisson
    summation — far below float resolution.

    >>> round(float(discrete_gaussian_pmf(0, 1)), 6)
    0.398942
    """
    s2 = float(to_fraction(sigma2, "sigma2"))
    sigma = math.sqrt(s2)
    if sigma >= 10:
        z = math.sqrt(2 * math.pi * s2)
    else:
        w = math.ceil(40 * sigma) + 1
        k = np.arange(-w, w + 1, dtype=float)
        z = math.fsum(np.exp(-k * k / (2 * s2)))
    x = np.asarray(x, dtype=float)
    return np.exp(-x * x / (2 * s2)) / z
