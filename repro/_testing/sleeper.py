"""A task that records its worker's pid in a folder, then sleeps (tests of worker shutdown)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def sleeper(folder: str) -> None:
    """Touch ``folder/<pid>`` and sleep two minutes (module level, so loky pickles it by reference)."""
    Path(folder, str(os.getpid())).touch()
    time.sleep(120)
