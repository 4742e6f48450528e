"""On-disk cache of completed trials.

One file per trial, ``<root>/<experiment id>/<key[:2]>/<key>.pkl``, where ``key`` is the sha256
of everything that changes a trial's result: experiment id, study module, params (fixed params,
cell, variant), repetition, base seed and the code version of the study module. Progress bars,
worker counts and backends are not part of the key. Entries are written atomically (temporary
file in the same folder, then :func:`os.replace`), so a killed run never leaves a half-written
entry; failed trials are never written.

Each entry is ``MAGIC + sha256(payload) + payload`` (``payload`` the pickle): a flipped bit, a
truncated file, an entry in an older format or a valid pickle of the wrong structure is treated
as corrupt, deleted and recomputed, never used (issue #15, item 6).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import logging
import os
import pickle
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from repro import __version__
from repro.trial import canonical_json

__all__ = ["TrialCache", "atomic_write_bytes", "atomic_write_text", "code_version", "trial_key"]

log = logging.getLogger(__name__)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


@cache
def code_version(module_name: str) -> str:
    """Version of a study module's code: repro version, its ``VERSION`` and a hash of its sources.

    The study module's own source is hashed, and so is the source of every module listed in its
    ``CODE_DEPENDENCIES``, so editing them invalidates the cached trials automatically.
    """
    module = importlib.import_module(module_name)
    h = hashlib.sha256()
    names = [module_name, *getattr(module, "CODE_DEPENDENCIES", ())]
    for name in names:
        mod = module if name == module_name else importlib.import_module(name)
        try:
            h.update(inspect.getsource(mod).encode())
        except (OSError, TypeError):  # no source available (e.g. frozen); fall back to the name
            h.update(name.encode())
    return f"{__version__}+{getattr(module, 'VERSION', '0')}+{h.hexdigest()[:16]}"


def trial_key(*, experiment_id: str, trial: str, params: dict[str, Any], repetition: int,
              base_seed: int, code: str) -> str:
    """sha256 of the canonical JSON of what determines a trial's result."""
    payload = {"experiment": experiment_id, "trial": trial, "params": params,
               "repetition": repetition, "base_seed": base_seed, "code": code}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


_MAGIC = b"repro-trial-v2\n"
_DIGEST = 32


class TrialCache:
    """Completed trials of one experiment, stored under ``root``.

    ``validate(value) -> bool`` (optional) checks the structure of an unpickled entry; an entry
    that fails it is corrupt.
    """

    def __init__(self, root: Path, experiment_id: str,
                 validate: Callable[[Any], bool] | None = None) -> None:
        self.directory = Path(root) / experiment_id
        self._validate = validate
        self.n_corrupt = 0

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.pkl"

    def get(self, key: str) -> Any | None:
        """The cached value for ``key``, or None (also when the entry is unreadable)."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        head = len(_MAGIC) + _DIGEST
        payload = data[head:]
        if data[: len(_MAGIC)] != _MAGIC:
            return self._corrupt(path, "no checksum header (older format or not an entry)")
        if hashlib.sha256(payload).digest() != data[len(_MAGIC):head]:
            return self._corrupt(path, "checksum mismatch")
        try:
            value = pickle.loads(payload)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure means "recompute"
            return self._corrupt(path, f"unpicklable ({type(exc).__name__})")
        if self._validate is not None and not self._validate(value):
            return self._corrupt(path, "wrong structure")
        return value

    def _corrupt(self, path: Path, why: str) -> None:
        log.debug("trial cache entry %s is corrupt (%s); recomputing it", path.name, why)
        self.n_corrupt += 1
        path.unlink(missing_ok=True)
        return None

    def put(self, key: str, value: Any) -> None:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write_bytes(self._path(key), _MAGIC + hashlib.sha256(payload).digest() + payload)

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.pkl")) if self.directory.exists() else 0

    def clear(self) -> None:
        for p in self.directory.glob("*/*.pkl"):
            p.unlink(missing_ok=True)
