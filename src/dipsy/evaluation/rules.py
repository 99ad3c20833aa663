"""Edit rules in the evaluation: the records that break each rule, in the original and in each set.

The domain's ``rules:`` (:mod:`dipsy.domain.rules`) are combinations of values no record may hold.
A release enforces them on its synthetic records (:mod:`dipsy.methods.enforce`), so a set should
break none; the original may break some (a file that was never edited, or a rule written too
strictly). :func:`rule_breaks` counts both, rule by rule, as SDNist's inconsistency counts do. It
reads the confidential original, like the rest of the evaluation: for the data steward's eyes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..domain.codec import encode_column
from ..domain.rules import breaks
from .marginals import shared_domain


def rule_breaks(original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> dict[str, Any]:
    """The records that break each of the domain's rules, in the original and in each set.

    A record counts for a rule when its values of the rule's columns lie in a forbidden cell; a
    value that does not match the domain breaks nothing. Rules naming a column that the original
    or a set lacks are left out.

    Returns
    -------
    dict
        Empty when the domain has no rules; else ``"rules"``, one entry per rule: ``"name"``,
        ``"rule"`` (in words), ``"columns"``, ``"original"`` (records breaking it) and
        ``"original_share"``, ``"synthetic"`` and ``"synthetic_share"`` (per set); and ``"any"``,
        the records breaking at least one rule, in the same form.

    >>> d = Domain.from_dict({"columns": {"age": {"kind": "integer", "lower": 0, "upper": 99},
    ...     "msp": {"kind": "categorical", "categories": ["N", "1"]}},
    ...     "rules": [{"name": "no married child", "if": {"age": {"below": 15}}, "then": {"msp": "N"}}]})
    >>> out = rule_breaks(pd.DataFrame({"age": [3, 30, 10], "msp": ["1", "1", "N"]}), [pd.DataFrame({"age": [3], "msp": ["N"]})], d)
    >>> out["rules"][0]["original"], out["rules"][0]["synthetic"], out["any"]["original_share"]
    (1, [0], 0.3333333333333333)
    """
    if not domain.rules:
        return {}
    scope = shared_domain(original, tables, domain)
    cells = [c for c in domain.rule_cells if set(c.columns) <= set(scope.names)]
    if not cells:
        return {}
    columns = list(dict.fromkeys(n for c in cells for n in c.columns))
    found = []
    for frame in (original, *tables):
        codes = {n: encode_column(frame[n].reset_index(drop=True), domain[n]).codes for n in columns}
        found.append(breaks(cells, codes, len(frame)))

    def share(count: int, frame: pd.DataFrame) -> float:
        return count / len(frame) if len(frame) else float("nan")

    frames = (original, *tables)
    per_rule = []
    for i, c in enumerate(cells):
        counts = [int(f[i].sum()) for f in found]
        per_rule.append(
            {
                "name": c.name,
                "rule": c.rule.text(),
                "columns": list(c.columns),
                "original": counts[0],
                "original_share": share(counts[0], original),
                "synthetic": counts[1:],
                "synthetic_share": [share(n, t) for n, t in zip(counts[1:], tables)],
            }
        )
    anyone = [int(np.any(f, axis=0).sum()) for f in found]
    return {
        "rules": per_rule,
        "any": {
            "original": anyone[0],
            "original_share": share(anyone[0], original),
            "synthetic": anyone[1:],
            "synthetic_share": [share(n, t) for n, t in zip(anyone[1:], frames[1:])],
        },
    }


__all__ = ["rule_breaks"]
