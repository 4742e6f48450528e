"""The stable text form of a trial's identity and the seed words derived from it.

Everything that names a trial (its parameters, its repetition, the scope of a random stream) is
turned into canonical JSON here, once, and hashed; seeds and cache keys are functions of that text
only, never of execution order, worker count or Python's randomized ``hash``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

__all__ = ["canonical_json", "stable_words"]


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace; the stable text form of configs and settings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def stable_words(*parts: Any) -> list[int]:
    """Four 32-bit words of sha256 over the canonical JSON of ``parts``.

    Used as SeedSequence entropy, so seeds depend on names and values, never on execution order,
    worker count or Python's randomized ``hash``.
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
