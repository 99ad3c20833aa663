r"""Text from data, made safe to print on a terminal.

Categories, column names and file names come from the data and the domain file, which travel
between people; printed raw, an ESC sequence in one of them (``"\x1b[2J"``) clears the screen,
moves the cursor or rewrites what a person reads. :func:`printable` shows each control character
as its escape instead, and leaves all other text, non-ASCII letters included, as it is.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline (layout the output itself uses), DEL, C1 controls (0x9b is a
# one-byte CSI on some terminals), and the bidirectional overrides and isolates that reorder
# what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    r"""``text`` with each control character written as its escape (``\x1b``, ``\u202e``).

    >>> print(printable("Race \x1b[2J\u202e, Région"))
    Race \x1b[2J\u202e, Région
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)
