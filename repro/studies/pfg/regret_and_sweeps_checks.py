"""Checks of a Private-Fair-Greedy run before any trial runs (:func:`repro.engine.runner.check_plan`, issue #35).

Not imported by :mod:`repro.studies.pfg.regret_and_sweeps`, so editing a check does not recompute its trials.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repro.bandits.policies import budget_split
from repro.errors import InvalidParameterError
from repro.privacy import tree_mechanism as tm

__all__ = ["ACS_KEYS", "check_plan"]

#: keys read only when the environment is ``acs``
ACS_KEYS = ("acs_dir", "acs_states", "acs_download", "env_fallback")


def check_plan(params: Mapping[str, Any], cells: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Refuse a missing ``acs_dir`` that the run would read and budgets too small for the zCDP noise; name the
    ACS keys (without ``env = "acs"``) and ``sweep_values`` (without a sweep) as keys with no effect."""
    inert: dict[str, str] = {}
    for cell in cells or [{}]:
        p = {**params, **cell}
        if str(p.get("env")) != "acs":
            inert.update({k: f"env = {p.get('env')!r} reads no ACS files" for k in ACS_KEYS if k in p})
        else:
            raw = str(p.get("acs_dir") or "")
            folder = Path(raw).expanduser()
            if raw and not bool(p.get("acs_download")) and not folder.is_dir():
                what = "is a file, not a folder" if folder.exists() else "does not exist"
                raise InvalidParameterError(f"--set acs_dir={raw}: {what}; give the folder holding "
                                            "<year>/1-Year/psam_p<FIPS>.csv, or --set acs_download=true")
        if str(p.get("sweep", "none")) == "none" and "sweep_values" in p:
            inert["sweep_values"] = "sweep = \"none\" sweeps nothing"
        _check_budgets(p)
    return inert


def _check_budgets(p: Mapping[str, Any]) -> None:
    """Each configuration's regression and rank budgets give a positive zCDP ρ and a finite rank noise."""
    keys = ("epsilon", "delta", "alpha_eps", "alpha_delta")
    if not all(k in p for k in (*keys, "T", "variant")):
        return
    base = {k: float(p[k]) for k in keys}
    sweep = str(p.get("sweep", "none"))
    values = p.get("sweep_values") if sweep in keys else None
    values = values if isinstance(values, list) and values else [base[sweep]] if sweep in keys else [None]
    for v in values:
        cfg = {**base, **({sweep: float(v)} if v is not None else {})}
        s = budget_split(cfg["epsilon"], cfg["delta"], cfg["alpha_eps"], cfg["alpha_delta"], str(p["variant"]))
        for part, eps, delta in (("regression", s.epsilon_reg, s.delta_reg), ("rank", s.epsilon_rank, s.delta_rank)):
            rho = tm.zcdp_rho(eps, delta)
            if not (rho > 0 and math.isfinite(math.sqrt(int(p["T"]) / (2.0 * rho)))):
                raise InvalidParameterError(
                    f"--set epsilon={_g(cfg['epsilon'])} (alpha_eps={_g(cfg['alpha_eps'])}): the {part} budget "
                    f"ε = {eps:.3g} is too small for the zCDP noise (ρ = {rho:.3g}); give a larger epsilon, "
                    "e.g. epsilon >= 1e-6")


def _g(x: float) -> str:
    return f"{x:g}"
