"""The public domain: an ordered set of columns, loaded from YAML or JSON.

The domain is public input (design rule 1): the categories and bounds of every column come from
the user's file, never from the confidential data.

A domain file looks like this (see the README for the full format)::

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
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from ..errors import DomainError
from .columns import Column

#: What refuses a YAML anchor or alias (see :func:`_load_yaml`).
ANCHOR_FIX = "write the domain without YAML anchors (&) and aliases (*): spell each entry out"


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

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if not names:
            raise DomainError("the domain has no columns", "list at least one column under 'columns:'")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DomainError(f"the domain lists column(s) {dupes} twice", "give each column once")

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

    def project(self, names: Iterable[str] | None) -> "Domain":
        """The domain restricted to ``names`` (in the order given); all columns when None."""
        if names is None:
            return self
        names = list(names)
        if not names:
            raise DomainError("no columns were chosen", "name at least one column")
        return Domain(tuple(self[n] for n in names), self.name, self.description)

    def shape(self, names: Iterable[str] | None = None) -> tuple[int, ...]:
        """Number of codes of each column; an error names any column that cannot be encoded."""
        cols = self.project(names).columns
        for c in cols:
            if not c.encodable:
                raise DomainError(
                    f"column {c.name!r} is numeric without bins, so it has no cells to count",
                    "give it 'bins:' in the domain file, or leave it out with --columns",
                )
        return tuple(c.size for c in cols)

    def cells(self, names: Iterable[str] | None = None) -> int:
        """Number of cells of the full cross-tabulation (a Python int: it may pass 2**63)."""
        return math.prod(self.shape(names))

    # -- files ----------------------------------------------------------------------------------

    @classmethod
    def from_sizes(cls, sizes: Mapping[str, int], name: str = "") -> "Domain":
        """Integer columns with codes ``0 .. size - 1``."""
        cols = []
        for col, size in sizes.items():
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise DomainError(f"column {col!r} has size {size!r}", "give a whole number of codes >= 1")
            cols.append(Column(str(col), "integer", lower=0, upper=size - 1))
        return cls(tuple(cols), name)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> "Domain":
        if not isinstance(spec, Mapping):
            raise DomainError("the domain file is not a mapping", "start it with 'columns:' (see the README)")
        if "columns" not in spec:
            if spec and all(isinstance(v, int) and not isinstance(v, bool) for v in spec.values()):
                return cls.from_sizes(spec)
            raise DomainError("the domain file has no 'columns:' section", "list the columns under 'columns:'")
        unknown = set(spec) - {"name", "description", "columns"}
        if unknown:
            raise DomainError(f"the domain file has unknown field(s) {sorted(unknown)}", "use name, description, columns")
        columns = spec["columns"]
        if not isinstance(columns, Mapping):
            raise DomainError("'columns:' is not a mapping of column names", "write one entry per column name")
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
        )

    @classmethod
    def load(cls, path: str | Path) -> "Domain":
        """Read a domain from a YAML (``.yaml``/``.yml``) or JSON file."""
        path = Path(path)
        try:
            if path.is_dir():
                raise DomainError(f"domain file {str(path)!r} is a folder", "pass --domain with the path of a domain file")
            data = path.read_bytes()
        except FileNotFoundError:
            raise DomainError(f"domain file {str(path)!r} does not exist", "pass --domain with the path of a domain file") from None
        except OSError as e:
            raise DomainError(f"domain file {str(path)!r} cannot be read ({e.strerror})", "check its path and permissions") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise DomainError(
                f"domain file {str(path)!r} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
                "save it as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > NEW); a domain file is YAML or JSON text",
            ) from None
        try:
            spec = json.loads(text) if path.suffix.lower() == ".json" else _load_yaml(text, path)
        except (yaml.YAMLError, ValueError) as e:  # JSONDecodeError is a ValueError; so is a bad YAML date
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DomainError(f"domain file {str(path)!r} is malformed: {first}", "fix its syntax (see the README)") from None
        except RecursionError:
            raise DomainError(f"domain file {str(path)!r} is nested too deeply to be a domain",
                              "write it as in the README: columns, each with its kind and categories or bounds") from None
        return cls.from_dict(spec)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        out["columns"] = {c.name: c.to_dict() for c in self.columns}
        return out

    def save(self, path: str | Path) -> None:
        """Write the domain as YAML (or JSON when the path ends in ``.json``)."""
        path = Path(path)
        d = self.to_dict()
        text = json.dumps(d, indent=1) if path.suffix.lower() == ".json" else yaml.safe_dump(d, sort_keys=False)
        path.write_text(text, encoding="utf-8")

    def sha256(self) -> str:
        """Fingerprint of the domain (canonical JSON), recorded with every release."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _DomainLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (C-accelerated where libyaml is present)."""


def _load_yaml(text: str, path: Path) -> Any:
    """YAML without anchors or aliases: a few hundred bytes of nested aliases expand to billions of
    characters (a "billion laughs"), so a domain file may not use them. The events are checked
    before anything is built; only a text holding '&' or '*' needs the check."""
    if "&" in text or "*" in text:
        for event in yaml.parse(text, Loader=_DomainLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                mark = getattr(event, "start_mark", None)
                where = f" (line {mark.line + 1})" if mark is not None else ""
                raise DomainError(f"domain file {str(path)!r} uses a YAML anchor or alias{where}", ANCHOR_FIX)
    return yaml.load(text, Loader=_DomainLoader)  # noqa: S506 - a safe loader
