"""The identity of a trial: one typed key, the single source of its seed, cache key and summary group.

Everything that names a trial (its parameters, its repetition, the scope of a random stream) is
turned into canonical JSON here, once, and hashed; seeds and cache keys are functions of that text
only, never of execution order, worker count or Python's randomized ``hash``. Parameter values
reach this module already coerced to the type the experiment file declares
(:meth:`repro.engine.spec.ExperimentSpec.coerce_params`), so ``1`` and ``1.0`` of a float key are
one value and serialise alike (issue #20, item 2).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _is_numpy(obj: Any, kind: str) -> bool:
    """``isinstance(obj, numpy.<kind>)`` without importing numpy (``repro list`` never loads it): an object
    from numpy means numpy is already imported."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, getattr(np, kind))


#: the random-stream scopes every trial has (:meth:`repro.engine.trial.TrialContext.rng`); an experiment file
#: declares more under ``[scopes]`` (:class:`StreamScope`)
BUILTIN_SCOPES = ("trial", "repetition", "experiment")

#: the cell key of a researcher's method (``repro run --with``): its reference, code hash included
USER_KEY = "with"

__all__ = ["BUILTIN_SCOPES", "USER_KEY", "StreamScope", "TrialKey", "canonical_json", "setting_label", "stable_words"]


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace; the stable text form of configs and settings.

    Floats stay floats (``1.0``), ints ints (``1``): the type is part of the identity, which is why
    values are coerced to their declared type before they get here.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(obj: Any) -> Any:
    if _is_numpy(obj, "generic"):
        return obj.item()
    if _is_numpy(obj, "ndarray"):
        return obj.tolist()
    if isinstance(obj, (tuple, frozenset, set)):
        return list(obj)
    return str(obj)


def stable_words(*parts: Any) -> list[int]:
    """Four 32-bit words of sha256 over the canonical JSON of ``parts``.

    Used as SeedSequence entropy, so seeds depend on names and values, never on execution order,
    worker count or Python's randomized ``hash``.
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    return str(v)


def setting_label(params: Mapping[str, Any]) -> str:
    """Readable ``k=v;k=v`` label of a cell (sorted keys; ``method`` and a user method's ``with`` reference
    excluded, so a user's method shows its cell's label); never parsed back."""
    return ";".join(f"{k}={_fmt(v)}" for k, v in sorted(params.items()) if k not in ("method", USER_KEY))


def _plain(v: Any) -> Any:
    """Numpy scalars → Python; tuples → lists (the JSON form), recursively."""
    if _is_numpy(v, "generic"):
        v = v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


@dataclass(frozen=True)
class StreamScope:
    """A named random-stream scope that an experiment file declares under ``[scopes]`` (issue 36):
    ``name = { family = "...", seed = "<param>" }``.

    Every trial of every experiment that declares the same ``family`` draws the same stream for the
    same labels (e.g. one data split shared by Tables 3.1, 3.2 and Theorem 8); the stream is seeded by
    the trial's base seed, or by the integer parameter named by ``seed`` (a problem instance fixed
    whatever the base seed). Its entropy is ``stable_words("global", family, *labels)``.
    """

    family: str
    seed: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"family": self.family, "seed": self.seed}


@dataclass(frozen=True, eq=False)
class TrialKey:
    """Who a trial is: experiment, typed parameters, repetition, base seed (issue #20, item 2).

    ``params`` are the parameters that identify the trial (fixed params and the grid cell, typed);
    ``grid_keys`` name the ones that vary over the experiment's grid (the cell), which with the
    method form the summary group; ``variant`` is the variant, or None for a trial the study
    declares variant-independent (``Study.variant_independent``); ``scopes_json`` the experiment's
    declared stream scopes (:class:`StreamScope`), part of the identity so that changing a
    declaration never reuses a stale cache entry.

    * :meth:`seed_words`: the trial's own random stream; depends on the experiment, the typed cell
      and the repetition, never on fixed params or the variant (common random numbers);
    * :meth:`cache_key`: also the variant and the code version;
    * :meth:`group`: the method and the cell's typed values (no repetition).
    """

    experiment_id: str
    params_json: str
    repetition: int = 0
    base_seed: int = 0
    variant: str | None = None
    grid_keys: tuple[str, ...] = ()
    scopes_json: str = ""

    @classmethod
    def of(cls, experiment_id: str, params: Mapping[str, Any] | None = None, *, repetition: int = 0,
           base_seed: int = 0, variant: str | None = None, grid_keys: tuple[str, ...] | None = None,
           scopes: Mapping[str, StreamScope] | None = None) -> TrialKey:
        """Build a key from typed ``params`` (``grid_keys`` default: every key of ``params``) and the
        experiment's declared stream ``scopes``."""
        plain = {str(k): _plain(v) for k, v in (params or {}).items() if k != "variant"}
        for k, v in plain.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"parameter {k!r} is not finite ({v}); a trial's identity needs finite numbers")
        keys = tuple(sorted(plain)) if grid_keys is None else tuple(sorted(k for k in grid_keys if k in plain))
        declared = canonical_json({k: v.as_json() for k, v in scopes.items()}) if scopes else ""
        return cls(str(experiment_id), canonical_json(plain), int(repetition), int(base_seed),
                   variant, keys, declared)

    @property
    def params(self) -> dict[str, Any]:
        """The identifying parameters (a fresh dict; lists in their JSON form)."""
        return json.loads(self.params_json)

    @property
    def scopes(self) -> dict[str, StreamScope]:
        """The experiment's declared stream scopes, by name."""
        if not self.scopes_json:
            return {}
        return {k: StreamScope(**v) for k, v in json.loads(self.scopes_json).items()}

    @property
    def cell(self) -> dict[str, Any]:
        """The grid cell: the parameters named by ``grid_keys``, typed."""
        p = self.params
        return {k: p[k] for k in self.grid_keys}

    @property
    def method(self) -> str:
        return str(self.params.get("method", ""))

    @property
    def setting(self) -> str:
        """Readable label of the cell (not an identity: never parse it)."""
        return setting_label(self.cell)

    def canonical(self) -> str:
        """The canonical text of everything that names the trial except the code version (the declared
        scopes only when the experiment declares some)."""
        named: dict[str, Any] = {"experiment": self.experiment_id, "params": self.params, "variant": self.variant,
                                 "repetition": self.repetition, "base_seed": self.base_seed}
        if self.scopes_json:
            named["scopes"] = json.loads(self.scopes_json)
        return canonical_json(named)

    def seed_words(self, *labels: Any) -> list[int]:
        """Entropy of the trial's own stream (``ctx.rng(*labels)``): the experiment, the typed cell and
        the repetition. Fixed parameters and the variant are not part of it, so ``--set epochs=…`` or
        another variant reruns a cell on the same draws (common random numbers)."""
        return stable_words(self.experiment_id, "trial", self.cell, self.repetition, *labels)

    def cache_key(self, code: str) -> str:
        """sha256 of the canonical key and the study's code version."""
        return hashlib.sha256(canonical_json({"key": json.loads(self.canonical()), "code": code}).encode()).hexdigest()

    def group(self, method: str | None = None, index: Mapping[str, Any] | None = None) -> tuple[str, str]:
        """The summary group of a record of this trial: its method (default: the cell's) and the canonical
        cell plus the record's ``index`` values (repetition and variant left out; a missing value,
        ``None`` or NaN, is left out too)."""
        cell = {k: v for k, v in self.cell.items() if k != "method"}
        cell.update({str(k): _plain(v) for k, v in (index or {}).items()})
        present = {k: v for k, v in cell.items() if not (v is None or (isinstance(v, float) and math.isnan(v)))}
        return (self.method if method is None else str(method)), canonical_json(present)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TrialKey) and self.canonical() == other.canonical() \
            and self.grid_keys == other.grid_keys

    def __hash__(self) -> int:
        return hash(self.canonical())

    def __repr__(self) -> str:
        return (f"TrialKey({self.experiment_id!r}, {self.params_json}, repetition={self.repetition}, "
                f"base_seed={self.base_seed}, variant={self.variant!r})")
