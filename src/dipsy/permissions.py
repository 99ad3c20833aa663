"""The permissions a new file or folder of dipsy's gets: those of any new one, by the umask.

Written files (a release folder, a domain file) are made in a private temporary place first and
renamed into place; their mode is then set from the process's umask, as if made there directly.
"""

from __future__ import annotations

import os


def umask() -> int:
    """The process's umask, read without changing it where /proc allows.

    Elsewhere it is set and set back at once (``os.umask`` is the only other way to read it),
    which a thread creating a file at that moment could notice.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
