"""The public domain: an ordered set of columns, loaded from YAML or JSON.

The domain is public input (design rule 1): the categories and bounds of every column come from
the user's file, never from the confidential data.

A domain file looks like this (see docs/guides/domain.md for the full format)::

    name: ce
    columns:
      Race:
        kind: categorical
        categories: [1, 2, 3, 4, 5, 6]
        labels: [White, Black, Native American, Asian, Pacific Islander, Multi-race]
      Income:
        kind: numeric
        lower: 0
        upper: 1000000
        bins: 20

A JSON object of column sizes, ``{"age": 85, "sex": 2}``, is read as integer columns with codes
``0 .. size - 1`` (the form mbi and the NIST benchmarks use).

A top-level ``discovered:`` block (written by ``dipsy domain discover``) says which category lists
and bins a charged DP measurement of the confidential data released; it is kept as
:attr:`Domain.discovered` (a :class:`~dipsy.domain.discovered.Discovery`) and stated by every
release that uses those columns.

A top-level ``rules:`` list declares edit rules and structural zeros (:mod:`dipsy.domain.rules`):
combinations of values no record may hold. They are checked against the columns when the domain
loads, kept as :attr:`Domain.rules`, and enforced on the synthetic records of every release.

A top-level ``analyses:`` list declares the regressions the release should support
(:mod:`dipsy.domain.analyses`): each a formula and, optionally, its model. They are checked
against the columns when the domain loads, kept as :attr:`Domain.analyses`, and compared by
``dipsy evaluate`` on the original and the synthetic sets.

A field whose value is ``TODO`` (what ``dipsy domain init`` writes for every category list,
bound and bin) is refused with every such field named, so a skeleton is never synthesized from.
YAML's surprises in category lists are refused with the line and the text as written (see
:func:`_check_yaml_scalars`): unquoted ``yes``/``no``/``on``/``off``/``true``/``false`` (booleans),
``010`` (octal 8), and lists in which ``07`` reads as the number 7 but ``08`` as the text '08'.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import yaml

from ..errors import DomainError
from .analyses import Analysis, check_analyses
from .columns import Column
from .discovered import Discovery
from .limits import CELL_LIMIT, MAX_CODES, MAX_COLUMNS, MAX_DOMAIN_BYTES, too_many_codes
from .rules import Rule, RuleCells, compiled

#: What refuses a YAML anchor or alias (see :func:`load_yaml`).
ANCHOR_FIX = "write the domain without YAML anchors (&) and aliases (*): spell each entry out"
#: The placeholder ``dipsy domain init`` writes for what the steward must declare.
TODO = "TODO"
#: The columns with placeholders an error names (then how many more there are).
TODO_SHOWN = 10


@dataclass(frozen=True)
class Domain:
    """An ordered, immutable set of columns.

    >>> d = Domain.from_sizes({"a": 2, "b": 3})
    >>> d.names, d.shape()
    (('a', 'b'), (2, 3))
    >>> d.project(["b"]).names
    ('b',)
    """

    columns: tuple[Column, ...]
    name: str = ""
    description: str = ""
    #: The DP discovery that released some of these columns' categories or bins (None: none did).
    discovered: Discovery | None = None
    #: The edit rules (structural zeros) no record may break, in the order written.
    rules: tuple[Rule, ...] = ()
    #: The analyses (regressions) the steward declares the release should support, in the order written.
    analyses: tuple[Analysis, ...] = ()
    #: Each rule compiled against the columns (its forbidden cells), in the same order.
    rule_cells: tuple[RuleCells, ...] = dataclass_field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if not names:
            raise DomainError("the domain has no columns", "list at least one column under 'columns:'")
        if len(names) > MAX_COLUMNS:
            raise DomainError(
                f"the domain has {len(names):,} columns, more than the {MAX_COLUMNS:,} dipsy synthesizes at once",
                f"split the columns into domains of at most {MAX_COLUMNS:,} and release them apart (each at its "
                "own share of ε), or leave out the columns not to release",
            )
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DomainError(f"the domain lists column(s) {dupes} twice", "give each column once")
        for d in self.discovered.columns if self.discovered is not None else ():
            if d.column not in names:
                raise DomainError(
                    f"the 'discovered:' block names column {d.column!r}, which the domain does not list",
                    "remove it from the block, or list the column with the values it discovered",
                )
            column = self.columns[names.index(d.column)]
            fits = column.is_categorical if d.field == "categories" else (not column.is_categorical and column.bins is not None)
            if not fits:
                raise DomainError(
                    f"the 'discovered:' block says the {d.field} of {d.column!r} were discovered, but the "
                    f"column is {column.kind}" + ("" if column.is_categorical else " without bins"),
                    "keep the block as 'dipsy domain discover' wrote it, with the column's discovered values",
                )
        self._check_rules()
        check_analyses(self.analyses, {c.name: c for c in self.columns})

    def _check_rules(self) -> None:
        """Compile every rule against the columns (its checks are :meth:`Rule.forbidden`'s), once."""
        if not isinstance(self.rules, tuple) or not all(isinstance(r, Rule) for r in self.rules):
            raise DomainError("the domain's rules are not a tuple of Rule", "build them with Rule.from_dict")
        seen = [r.name for r in self.rules]
        twice = sorted({n for n in seen if seen.count(n) > 1})
        if twice:
            raise DomainError(f"the domain names rule(s) {twice} twice", "give each rule a name of its own")
        by_name = {c.name: c for c in self.columns}
        cells = []
        for r in self.rules:
            if not set(r.columns) <= set(by_name):
                r.forbidden(by_name)  # refuses the rule, naming the columns the domain does not list
            cells.append(RuleCells(r, compiled(r, tuple(by_name[c] for c in r.columns))))
        object.__setattr__(self, "rule_cells", tuple(cells))

    # -- access ---------------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise DomainError(f"column {name!r} is not in the domain", f"choose from {', '.join(self.names)}")

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self.columns)

    def project(self, names: Iterable[str] | None) -> Domain:
        """The domain restricted to ``names`` (in the order given); all columns when None. A rule,
        and an analysis, is kept when every column it names is kept (:meth:`dropped_rules` lists the
        rules dropped)."""
        if names is None:
            return self
        names = list(names)
        if not names:
            raise DomainError("no columns were chosen", "name at least one column")
        discovered = None if self.discovered is None else self.discovered.project(names)
        kept = set(names)
        rules = tuple(r for r in self.rules if set(r.columns) <= kept)
        analyses = tuple(a for a in self.analyses if set(a.columns) <= kept)
        return Domain(tuple(self[n] for n in names), self.name, self.description, discovered, rules, analyses)

    def dropped_rules(self, names: Iterable[str] | None) -> tuple[tuple[Rule, tuple[str, ...]], ...]:
        """The rules :meth:`project` drops for ``names``, each with the columns of it left out.

        >>> d = Domain.from_dict({"columns": {"a": {"kind": "integer", "lower": 0, "upper": 1},
        ...     "b": {"kind": "integer", "lower": 0, "upper": 1}},
        ...     "rules": [{"name": "r", "allowed": {"columns": ["a", "b"], "combinations": [[0, 0], [1, 1]]}}]})
        >>> [(r.name, out) for r, out in d.dropped_rules(["a"])], d.project(["a"]).rules
        ([('r', ('b',))], ())
        """
        if names is None:
            return ()
        kept = set(names)
        return tuple((r, tuple(c for c in r.columns if c not in kept)) for r in self.rules if not set(r.columns) <= kept)

    def shape(self, names: Iterable[str] | None = None) -> tuple[int, ...]:
        """Number of codes of each column; an error names any column that cannot be encoded."""
        cols = self.project(names).columns
        for c in cols:
            if not c.encodable:
                raise DomainError(
                    f"column {c.name!r} is numeric without bins, so it has no cells to count",
                    "give it 'bins:' in the domain file, or leave it out with --columns",
                )
        return tuple(c.n_codes for c in cols)

    def cells(self, names: Iterable[str] | None = None) -> int:
        """Number of cells of the full cross-tabulation (a Python int: it may pass 2**63)."""
        return math.prod(self.shape(names))

    def transformations(self) -> tuple[str, ...]:
        """What is done to each record before any measurement, one line per clipped column, from
        the domain alone (a release states them; never a count of the records they changed)."""
        return tuple(line for c in self.columns if (line := c.clip_statement()) is not None)

    # -- files ----------------------------------------------------------------------------------

    @classmethod
    def from_sizes(cls, sizes: Mapping[str, int], name: str = "") -> Domain:
        """Integer columns with codes ``0 .. size - 1``."""
        cols = []
        for col, size in sizes.items():
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise DomainError(f"column {col!r} has size {size!r}", "give a whole number of codes >= 1")
            if size > MAX_CODES:  # refused before anything is sized by it
                raise too_many_codes(f"column {col!r}", size, "codes", "give it fewer codes (group them), or leave it out")
            cols.append(Column(str(col), "integer", lower=0, upper=size - 1))
        return cls(tuple(cols), name)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Domain:
        if not isinstance(spec, Mapping):
            raise DomainError("the domain file is not a mapping", "start it with 'columns:' (see docs/guides/domain.md)")
        if "columns" not in spec:
            if spec and all(isinstance(v, int) and not isinstance(v, bool) for v in spec.values()):
                return cls.from_sizes(spec)
            raise DomainError("the domain file has no 'columns:' section", "list the columns under 'columns:'")
        unknown = set(spec) - {"name", "description", "columns", "discovered", "rules", "analyses"}
        if unknown:
            raise DomainError(
                f"the domain file has unknown field(s) {sorted(map(str, unknown))}",
                "use name, description, columns (and rules, analyses, discovered)",
            )
        rules = spec.get("rules")
        if rules is not None and not isinstance(rules, (list, tuple)):
            raise DomainError(
                "'rules:' is not a list of rules",
                "write each rule as an item: '- name: ...' (see 'Edit rules' in docs/guides/domain.md)",
            )
        analyses = spec.get("analyses")
        if analyses is not None and not isinstance(analyses, (list, tuple)):
            raise DomainError(
                "'analyses:' is not a list of analyses",
                "write each analysis as an item: '- formula: y ~ x1 + C(x2)' (see 'Declared analyses' in docs/guides/domain.md)",
            )
        columns = spec["columns"]
        if not isinstance(columns, Mapping):
            raise DomainError("'columns:' is not a mapping of column names", "write one entry per column name")
        _refuse_placeholders(columns)
        for n in columns:
            if isinstance(n, bool) or n is None:
                raise DomainError(
                    f"a column name was read by YAML as {n!r} (from an unquoted yes/no, on/off, true/false, ~ or null)",
                    "quote the column name in the domain file, e.g. 'yes':",
                )
            if not isinstance(n, (str, int, float)):
                raise DomainError(f"a column name is a {type(n).__name__}, not a name", "write each column name as text")
        return cls(
            tuple(Column.from_dict(str(n), s) for n, s in columns.items()),
            str(spec.get("name", "")),
            str(spec.get("description", "")),
            Discovery.from_dict(spec["discovered"]) if spec.get("discovered") is not None else None,
            tuple(Rule.from_dict(r, i) for i, r in enumerate(rules or (), start=1)),
            tuple(Analysis.from_dict(a, i) for i, a in enumerate(analyses or (), start=1)),
        )

    @classmethod
    def load(cls, path: str | Path | Mapping[str, Any]) -> Domain:
        """Read a domain from a YAML (``.yaml``/``.yml``) or JSON file; a mapping is taken as such a
        file's content (what the API's ``domain=`` may also be)."""
        if isinstance(path, Mapping):
            return cls.from_dict(path)
        if not isinstance(path, (str, os.PathLike)):
            raise DomainError(
                f"a domain is a Domain, a mapping or a domain file's path, not a {type(path).__name__}",
                "pass the path of the domain file, or Domain.from_dict({'columns': ...})",
            )
        return cls.from_dict(read_spec(path))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        out["columns"] = {c.name: c.to_dict() for c in self.columns}
        if self.discovered is not None:  # only when present: other domains' fingerprints are unchanged
            out["discovered"] = self.discovered.to_dict()
        if self.rules:  # only when present: a domain without rules keeps its fingerprint
            out["rules"] = [r.to_dict() for r in self.rules]
        if self.analyses:  # only when present: a domain without analyses keeps its fingerprint
            out["analyses"] = [a.to_dict() for a in self.analyses]
        return out

    def save(self, path: str | Path) -> None:
        """Write the domain as YAML (or JSON when the path ends in ``.json``)."""
        path = Path(path)
        d = self.to_dict()
        text = json.dumps(d, indent=1) if path.suffix.lower() == ".json" else yaml.safe_dump(d, sort_keys=False)
        path.write_text(text, encoding="utf-8")

    def sha256(self) -> str:
        """Fingerprint of the domain (canonical JSON), recorded with every release."""
        canonical = json.dumps(_text_keys(self.to_dict()), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _text_keys(value: Any) -> Any:
    """``value`` with every mapping key written as JSON writes it (``-8`` as ``"-8"``), so that keys
    of mixed types (a column's missing codes: ``-8`` and ``".a"``) can be sorted. A domain whose
    keys are all text (every domain without missing codes) is unchanged, and so is its fingerprint."""
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else json.dumps(k)): _text_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text_keys(v) for v in value]
    return value


def read_spec(path: str | Path) -> Any:
    """The content of a domain file (YAML or JSON) as read, before any check of its columns
    (a skeleton's TODOs too): the errors of :meth:`Domain.load` for a missing, unreadable,
    non-UTF-8 or malformed file."""
    path = Path(path)
    try:
        if path.is_dir():
            raise DomainError(f"domain file {str(path)!r} is a folder", "pass --domain with the path of a domain file")
        if not stat.S_ISREG(path.stat().st_mode):  # before it is opened: opening a pipe waits for a writer
            raise DomainError(
                f"domain file {str(path)!r} is not a regular file (a device, pipe or socket)",
                "pass --domain with the path of a domain file (YAML or JSON text)",
            )
        with path.open("rb") as f:
            data = f.read(MAX_DOMAIN_BYTES + 1)  # bounded: the file may have grown, or be a link swapped since
    except FileNotFoundError:
        raise DomainError(f"domain file {str(path)!r} does not exist", "pass --domain with the path of a domain file") from None
    except OSError as e:
        raise DomainError(f"domain file {str(path)!r} cannot be read ({e.strerror})", "check its path and permissions") from None
    if len(data) > MAX_DOMAIN_BYTES:
        raise DomainError(
            f"domain file {str(path)!r} is larger than the {MAX_DOMAIN_BYTES // 2**20} MB a domain file may be",
            "give the domain file's path (YAML or JSON text: columns, each with its kind and categories or bounds)",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DomainError(
            f"domain file {str(path)!r} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
            "save it as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > NEW); a domain file is YAML or JSON text",
        ) from None
    try:
        spec = json.loads(text, object_pairs_hook=_unique_keys(path)) if path.suffix.lower() == ".json" else load_yaml(text, path)
    except (yaml.YAMLError, ValueError) as e:  # JSONDecodeError is a ValueError; so is a bad YAML date
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DomainError(
            f"domain file {str(path)!r} is malformed: {first}", "fix its syntax (see docs/guides/domain.md)"
        ) from None
    except RecursionError:
        raise DomainError(
            f"domain file {str(path)!r} is nested too deeply to be a domain",
            "write it as in docs/guides/domain.md: columns, each with its kind and categories or bounds",
        ) from None
    return spec


class _DomainLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (C-accelerated where libyaml is present)."""


def load_yaml(text: str, path: Path) -> Any:
    """YAML without anchors or aliases: a few hundred bytes of nested aliases expand to billions of
    characters (a "billion laughs"), so a domain file may not use them. The events are checked
    before anything is built; only a text holding '&' or '*' needs the check."""
    if "&" in text or "*" in text:
        for event in yaml.parse(text, Loader=_DomainLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                mark = getattr(event, "start_mark", None)
                where = f" (line {mark.line + 1})" if mark is not None else ""
                raise DomainError(f"domain file {str(path)!r} uses a YAML anchor or alias{where}", ANCHOR_FIX)
    loader = _DomainLoader(text)
    try:  # yaml.load's steps, with the parsed nodes checked before they are built into values
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_repeated_keys(node, path)
        _check_yaml_scalars(node, path)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _refuse_repeated_keys(root: yaml.Node, path: Path) -> None:
    """Refuse a mapping that gives one key twice: YAML keeps the last silently, so a column listed
    twice, or a field (``kind:``) given twice, would lose one of them unseen."""
    stack = [root]
    while stack:  # a loop, not recursion: a deeply nested file is malformed, not a crash
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if key.value in seen:
                        raise DomainError(
                            f"domain file {str(path)!r} gives the key {key.value!r} twice in one mapping (lines "
                            f"{seen[key.value]} and {line}); YAML would keep only the last",
                            "remove one of them, or give the second its own name",
                        )
                    seen[key.value] = line
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _unique_keys(path: Path):
    """A ``json.loads`` object hook that refuses a key given twice in one object (JSON keeps the last)."""

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise DomainError(
                    f"domain file {str(path)!r} gives the key {key!r} twice in one object; JSON would keep only the last",
                    "remove one of them, or give the second its own name",
                )
            seen[key] = value
        return seen

    return build


def _refuse_placeholders(columns: Mapping[Any, Any]) -> None:
    """Refuse a domain that still holds ``TODO`` placeholders, naming every one (column and field).

    A field counts when its value is ``TODO`` or a list holding it; a category list counts only
    when it is ``[TODO]`` alone (a real category could be called TODO)."""
    found: dict[str, list[str]] = {}
    for name, spec in columns.items():
        if not isinstance(spec, Mapping):
            continue
        for field, value in spec.items():
            listed = isinstance(value, (list, tuple))
            if (
                value == TODO
                or (listed and field not in ("categories", "labels") and TODO in value)
                or (listed and list(value) == [TODO])
            ):
                found.setdefault(str(name), []).append(str(field))
    if found:
        count = sum(len(fields) for fields in found.values())
        shown = list(found.items())[:TODO_SHOWN]  # one line: a skeleton of thousands of columns names the first few
        where = "; ".join(f"{name} ({', '.join(fields)})" for name, fields in shown)
        if len(found) > TODO_SHOWN:
            where += f"; and {len(found) - TODO_SHOWN:,} more column(s)"
        raise DomainError(
            f"the domain still has {count} TODO placeholder{'s' if count != 1 else ''} to fill: {where}",
            "declare each from public knowledge (a codebook, a previous public release; 'dipsy domain init DATA "
            "--from-public FILE' fills categories and bounds from a public file), never from the confidential data, "
            "and delete the fields that do not apply to a column's kind (see 'Writing a domain' in docs/guides/domain.md)",
        )


_BOOL, _INT, _FLOAT, _NULL, _STR, _TIMESTAMP, _BINARY = (
    f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "null", "str", "timestamp", "binary")
)
#: Text YAML leaves as text (a plain scalar) that a reader takes for a number, e.g. 08 or 1e3.
_NUMBER_LIKE = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?")


def _check_yaml_scalars(root: yaml.Node, path: Path) -> None:
    """Refuse what YAML 1.1 (PyYAML's) reads otherwise than it is written, where a domain holds it:
    column names, categories, labels and missing codes. Each error quotes the text as written and its line.

    - an unquoted yes/no, on/off, true/false (any case) is a boolean, ~ or null is empty;
    - an unquoted 2020-01-31 is a date, and ``!!binary`` text is bytes (neither a number nor a text);
    - an integer written otherwise than in plain decimal reads as another number: 010 is octal 8,
      0x1F is 31, 1:30 is 90 (sexagesimal);
    - a category list in which some unquoted codes read as numbers and others as text (07 is the
      number 7, but 08 and 09 are not octal and stay the text '08', '09') matches neither way.
    """
    if not isinstance(root, yaml.MappingNode):
        return
    for key, columns in root.value:
        if key.value != "columns" or not isinstance(columns, yaml.MappingNode):
            continue
        for name, spec in columns.value:
            if isinstance(name, yaml.ScalarNode):
                _refuse_misread(name, "the column name", None, path)
            if not isinstance(spec, yaml.MappingNode):
                continue
            column = name.value if isinstance(name, yaml.ScalarNode) else "?"
            for field, items in spec.value:
                if field.value == "missing" and isinstance(items, yaml.MappingNode):
                    for part, codes in items.value:  # the keys of missing: codes: are codes, read as categories are
                        if part.value == "codes" and isinstance(codes, yaml.MappingNode):
                            seen: dict[float, yaml.ScalarNode] = {}
                            for code, _ in codes.value:
                                if isinstance(code, yaml.ScalarNode):
                                    _refuse_misread(code, "the missing code", column, path)
                                    _refuse_same_number(code, seen, column, path)
                    continue
                if field.value not in ("categories", "labels") or not isinstance(items, yaml.SequenceNode):
                    continue
                what = "the category" if field.value == "categories" else "the label"
                scalars = [x for x in items.value if isinstance(x, yaml.ScalarNode)]
                for item in scalars:
                    _refuse_misread(item, what, column, path)
                if field.value == "categories":
                    _refuse_mixed_numbers(scalars, column, path)


def _refuse_misread(node: yaml.ScalarNode, what: str, column: str | None, path: Path) -> None:
    """Refuse one scalar that YAML reads otherwise than it is written (see :func:`_check_yaml_scalars`)."""
    text = node.value
    quoted = "'" + text.replace("'", "''") + "'"
    subject = (
        f"domain file {str(path)!r}: "
        + (f"column {column!r}: " if column is not None else "")
        + f"{what} {text} (line {node.start_mark.line + 1})"
    )
    if node.tag == _BOOL:
        read = str(yaml.safe_load(text)).lower()
        example = {
            "the category": "categories: ['yes', 'no']",
            "the label": "labels: ['yes', 'no']",
            "the missing code": "codes: {'no': refused}",
        }.get(what, "'yes': {kind: ...}")
        raise DomainError(
            f"{subject} is read by YAML as the boolean {read}, not as the text {quoted}",
            f"quote it: {quoted} (YAML reads unquoted yes/no, on/off and true/false as booleans), e.g. {example}",
        )
    if node.tag == _NULL and column is not None:
        raise DomainError(f"{subject} is read by YAML as empty (no value)", f"quote it ({quoted}) if it is a value, or remove it")
    if node.tag == _TIMESTAMP:  # a category or name is a number or a text; a date is neither
        raise DomainError(
            f"{subject} is read by YAML as a date, not as the text {quoted}",
            f"quote it: {quoted} (YAML reads an unquoted 2020-01-31 as a date)",
        )
    if node.tag == _BINARY:
        raise DomainError(
            f"{subject} is tagged !!binary: YAML reads it as bytes, which dipsy can neither match nor write",
            "write it as text (without the !!binary tag)",
        )
    if node.tag in (_INT, _FLOAT) and _PLAIN_NUMBER.fullmatch(text) is None:
        read = yaml.safe_load(text)
        if node.tag == _INT and re.fullmatch(r"[-+]?0[0-9_]*", text) and int(text.replace("_", ""), 10) == read:
            return  # a leading zero that reads as the same number (01 is 1): matched as a number, as meant
        raise DomainError(
            f"{subject} is read by YAML as the number {read!r}",
            f"quote it ({quoted}) if it is a code to match as text, or write the number in plain decimal",
        )


def _refuse_same_number(node: yaml.ScalarNode, seen: dict[float, yaml.ScalarNode], column: str, path: Path) -> None:
    """Refuse a missing code that is the same number as an earlier one (-8 and -8.0): YAML builds
    one key of the two (they are equal in Python) and silently keeps the last label."""
    if node.tag not in (_INT, _FLOAT) and not (node.tag == _STR and _PLAIN_NUMBER.fullmatch(node.value)):
        return
    number = float(yaml.safe_load(node.value)) if node.tag != _STR else float(node.value)
    if number in seen:
        first = seen[number]
        raise DomainError(
            f"domain file {str(path)!r}: column {column!r}: the missing code {node.value} (line {node.start_mark.line + 1}) "
            f"is the number {first.value} (line {first.start_mark.line + 1}) again: numbers match as numbers",
            "give each code once",
        )
    seen[number] = node


#: A number YAML reads as written: plain decimal, optionally with a fraction and exponent.
_PLAIN_NUMBER = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")


def _refuse_mixed_numbers(items: list[yaml.ScalarNode], column: str, path: Path) -> None:
    numbers = [x for x in items if x.tag in (_INT, _FLOAT)]
    texts = [x for x in items if x.tag == _STR and x.style in (None, "") and _NUMBER_LIKE.fullmatch(x.value)]
    if numbers and texts:
        n, t = numbers[0], texts[0]
        raise DomainError(
            f"domain file {str(path)!r}: column {column!r} lists {n.value} (line {n.start_mark.line + 1}) as the number "
            f"{yaml.safe_load(n.value)!r} but {t.value} (line {t.start_mark.line + 1}) as the text {t.value!r}, so the list "
            "matches the data neither as numbers nor as text (YAML reads an unquoted code with a leading 0 as an octal "
            "number where it can, 07, and as text where it cannot, 08; and 1e3, without a '.', as text)",
            "quote every category to match them as text (e.g. ['01', '02', '08']), or write them without leading "
            "zeros to match them as numbers (e.g. [1, 2, 8])",
        )


def check_cells(domain: Domain, limit: int = CELL_LIMIT, names: Iterable[str] | None = None) -> int:
    """The number of cells of the cross-tabulation of ``names`` (default all columns of ``domain``),
    or a :class:`DomainError` naming the columns when they are more than ``limit``.

    Computed from the declared sizes only (Python integers: no overflow, nothing allocated); a
    method that holds the full table calls it before it counts or allocates anything.

    >>> from dipsy.domain import Domain
    >>> check_cells(Domain.from_sizes({"a": 10, "b": 20}))
    200
    >>> check_cells(Domain.from_sizes({"a": 100_000, "b": 100_000}))
    Traceback (most recent call last):
    ...
    dipsy.errors.DomainError: the cross-tabulation of a × b has 10,000,000,000 cells (100,000 × 100,000), more than the 268,435,456 that fit in memory; choose fewer columns (--columns), coarser bins in the domain file, or a method that works on marginals (e.g. privsyn; see 'dipsy methods')
    """
    scope = domain.project(names)
    shape = scope.shape()  # refuses a numeric column without bins
    cells = math.prod(shape)
    if cells > limit:
        sizes = " × ".join(f"{s:,}" for s in shape)
        raise DomainError(
            f"the cross-tabulation of {' × '.join(scope.names)} has {cells:,} cells ({sizes}), more than the "
            f"{limit:,} that fit in memory",
            "choose fewer columns (--columns), coarser bins in the domain file, or a method that works on "
            "marginals (e.g. privsyn; see 'dipsy methods')",
        )
    return cells
