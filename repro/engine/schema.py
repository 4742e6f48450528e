"""The schema of an experiment file: one-line errors naming the file and the key, the typing of a value and its
domain, and the parsers of its simple tables (``[domains]``, ``[fidelity]``, ``aliases``, a grid, a cell list).

:mod:`repro.engine.spec` loads and validates a file with these; :mod:`repro.engine.cells` types ``--set``
values with them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from repro.engine.domains import MAX_COUNT, parse_rule
from repro.engine.identity import BUILTIN_SCOPES, StreamScope
from repro.errors import ExperimentFileError, InvalidParameterError

__all__ = ["FIDELITY_MISSES", "FIDELITY_STATUSES", "MAX_COUNT", "validate_param"]


#: ``[fidelity]``: the declared status of a result for the fidelity dashboard (repro/engine/fidelity.py)
FIDELITY_STATUSES = ("reproduced", "partial", "not reproduced", "claims only", "surrogate data", "checked",
                     "calculator", "simulation", "diagnostic", "no reference", "audit", "hardware-limited")


FIDELITY_MISSES = ("erratum", "data not public", "hardware", "method", "paper ambiguous")


_FIDELITY_KEYS = {"status": str, "detail": str, "miss": str, "reason": str}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-15)
    return str(a) == str(b)


def _coerce(kind: str, value: Any) -> Any:
    """``value`` as ``kind``; raises ValueError with the reason. Numbers must be finite."""
    if kind == "any":
        return value.strip() if isinstance(value, str) else value
    if kind == "str":
        if isinstance(value, (bool, int, float)) and not isinstance(value, str):
            raise ValueError(f"expected text, got the number {value!r}")
        return str(value).strip()
    if kind == "rational":   # exact: every spelling of one number (0.1, 1/10, 2/20) is its lowest terms, "1/10"
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"expected a rational number such as 1/10, got {value!r}")
        try:
            return str(Fraction(str(value).strip()))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a rational number such as 1/10, got {value!r}") from None
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
            return value.strip().lower() == "true"
        raise ValueError(f"expected true or false, got {value!r}")
    # numbers
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii():   # float() reads full-width and other scripts' digits ('１' -> 1.0)
            raise ValueError(f"expected a number written in ASCII digits, got {value!r}")
        try:
            number: int | float = int(text) if kind == "int" and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    elif isinstance(value, (int, float)) or hasattr(value, "item"):
        number = value.item() if hasattr(value, "item") else value
    else:
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"not a finite number ({number}; overflow or inf/nan)")
    if kind == "int":
        if isinstance(number, float):
            if not number.is_integer():
                raise ValueError(f"expected an integer, got {_fmt(number)}")
            number = int(number)
        return int(number)
    return float(number)


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    return "other"



def _domain_problem(domain: Any, declared: list[Any], value: Any) -> str:
    """Why ``value`` is outside a parameter's domain (explicit, else inferred), or ''."""
    kind = _kind(value)
    if isinstance(domain, list):
        if not any(_kind(d) == kind or {_kind(d), kind} <= {"int", "float"} for d in domain) \
                or not any(_same(value, d) for d in domain):
            return f"not an allowed value (allowed: {', '.join(_fmt(d) for d in domain)})"
        return ""
    if isinstance(domain, dict) and domain.get("rational"):
        number = Fraction(str(value))
        if domain.get("unit_fraction") and number.numerator != 1:
            return "must be 1/k for a positive integer k"
        for bound, fails, text in (("min", number < domain.get("min", number), ">="),
                                   ("max", number > domain.get("max", number), "<="),
                                   ("gt", "gt" in domain and not number > domain["gt"], ">"),
                                   ("lt", "lt" in domain and not number < domain["lt"], "<")):
            if bound in domain and fails:
                return f"must be {text} {Fraction(domain[bound]).limit_denominator(10**6)}"
        return ""
    if isinstance(domain, dict):
        if kind not in {"int", "float"}:
            return f"expected a number, got {value!r}"
        if domain.get("integer") and not float(value).is_integer():
            return "expected an integer"
        if domain.get("integer") and "max" not in domain and "lt" not in domain and abs(value) > MAX_COUNT:
            return f"must be <= {MAX_COUNT:,} (the largest count, size or seed the code takes)"
        if not math.isfinite(value):
            return "must be a finite number"
        if "multiple_of" in domain and int(value) % domain["multiple_of"]:
            return f"must be a multiple of {domain['multiple_of']}"
        if "min" in domain and value < domain["min"]:
            return f"must be >= {_fmt(domain['min'])}"
        if "max" in domain and value > domain["max"]:
            return f"must be <= {_fmt(domain['max'])}"
        if "gt" in domain and not value > domain["gt"]:
            return f"must be > {_fmt(domain['gt'])}"
        if "lt" in domain and not value < domain["lt"]:
            return f"must be < {_fmt(domain['lt'])}"
        return ""
    kinds = {_kind(d) for d in declared}
    if not kinds or "other" in kinds:  # undeclared here (lists, tables): nothing to infer
        return ""
    if kinds == {"str"}:
        if kind != "str" or value not in declared:
            allowed = ", ".join(dict.fromkeys(str(d) for d in declared))
            return f"not an allowed value (allowed: {allowed}; an experiment's [domains] table can widen this)"
        return ""
    if kinds == {"bool"}:
        return "" if kind == "bool" else f"expected true or false, got {value!r}"
    if kinds <= {"int", "float"}:
        if kind not in {"int", "float"}:
            return f"expected a number, got {value!r}"
        if not math.isfinite(value):
            return "must be a finite number"
        if kinds == {"int"} and not float(value).is_integer():
            return f"expected an integer, got {_fmt(value)}"
        return ""
    return ""


def _fmt(v: Any) -> str:
    if isinstance(v, str) and (v == "" or not v.isprintable()):
        return repr(v) if v else '""'   # one line, whatever was typed
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    return str(v)


_EPS_NAMES = ("eps", "epsilon")


def validate_param(key: str, value: Any, *, where: str = "") -> None:
    """Check privacy parameters by name: ``eps*``/``epsilon*`` > 0 and ``delta*`` in (0, 1).

    Raises
    ------
    InvalidParameterError
        With the rule, the value and the fix.
    """
    lowered = key.lower()
    base = lowered.split("_")[0]
    prefix = f"{where}: " if where else ""
    if isinstance(value, (list, tuple)):
        for v in value:
            validate_param(key, v, where=where)
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if base in _EPS_NAMES or lowered in _EPS_NAMES:
        if not value > 0:
            raise InvalidParameterError(
                f"{prefix}{key!r} (a privacy budget epsilon) must be > 0; got {value}. "
                "Pass a positive epsilon, e.g. --set {key}=1.".replace("{key}", key)
            )
    elif base == "delta" or lowered == "delta":
        if not 0 < value < 1:
            raise InvalidParameterError(
                f"{prefix}{key!r} (a privacy parameter delta) must lie in (0, 1); got {value}. "
                f"Pass e.g. --set {key}=1e-5."
            )


def _err(path: Path | str, key: str, msg: str) -> ExperimentFileError:
    return ExperimentFileError(f"{path}: key {key!r}: {msg}")


def _check_keys(path: Path, where: str, table: Mapping[str, Any], schema: Mapping[str, Any],
                required: Iterable[str] = ()) -> None:
    for key in required:
        if key not in table:
            raise _err(path, f"{where}{key}", "is required but missing")
    for key, value in table.items():
        if key not in schema:
            raise _err(path, f"{where}{key}", f"is not part of the schema; valid keys: {', '.join(sorted(schema))}")
        expected = schema[key]
        if isinstance(value, bool) and expected is not bool:
            raise _err(path, f"{where}{key}", f"must be {_tname(expected)}, got a boolean")
        if not isinstance(value, expected):
            raise _err(path, f"{where}{key}", f"must be {_tname(expected)}, got {type(value).__name__}")


def _tname(t: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", list: "an array", dict: "a table"}
    if isinstance(t, tuple):
        return "a number"
    return names.get(t, t.__name__)


def _parse_grid(path: Path, where: str, grid: Mapping[str, Any]) -> dict[str, list[Any]]:
    out = {}
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise _err(path, f"{where}{k}", "grid values must be a non-empty array")
        validate_param(k, v, where=f"{path}: key {where}{k!r}")
        out[k] = v
    return out


def _parse_cells(path: Path, where: str, cells: list[Any]) -> tuple[dict[str, Any], ...]:
    """The listed cells; a cell with array values stands for one cell per value (the product of its arrays,
    first key slowest), so ``{ method = "DP-FERMI", lambda = [0.5, 1.0] }`` is two cells in that order."""
    if not cells:
        raise _err(path, where, "must be a non-empty array of tables")
    out = []
    for i, c in enumerate(cells):
        if not isinstance(c, dict):
            raise _err(path, f"{where}[{i}]", "each cell must be a table")
        for k, v in c.items():
            if isinstance(v, list) and not v:
                raise _err(path, f"{where}[{i}].{k}", "an array in a cell lists its values; it must not be empty")
            validate_param(k, v, where=f"{path}: key {where}[{i}].{k}")
        axes = {k: v for k, v in c.items() if isinstance(v, list)}
        for combo in itertools.product(*axes.values()):
            out.append({**c, **dict(zip(axes, combo, strict=True))})
    return tuple(out)


def _parse_fidelity(path: Path, table: Mapping[str, Any]) -> dict[str, str]:
    """``[fidelity]``: ``status`` (one of :data:`FIDELITY_STATUSES`), ``detail`` (short words shown beside it),
    ``miss`` (one of :data:`FIDELITY_MISSES`, why a result is not (fully) reproduced) and ``reason`` (text)."""
    if not table:
        return {}
    _check_keys(path, "fidelity.", table, _FIDELITY_KEYS, ("status",))
    if table["status"] not in FIDELITY_STATUSES:
        raise _err(path, "fidelity.status", f"unknown status {table['status']!r}; valid: "
                   + ", ".join(FIDELITY_STATUSES))
    if "miss" in table and table["miss"] not in FIDELITY_MISSES:
        raise _err(path, "fidelity.miss", f"unknown miss {table['miss']!r}; valid: " + ", ".join(FIDELITY_MISSES))
    return {k: str(v) for k, v in table.items()}


#: keys of a numeric domain table: inclusive bounds, strict bounds, integer-valued
_DOMAIN_KEYS = {"min": (int, float), "max": (int, float), "gt": (int, float), "lt": (int, float), "integer": bool,
                "rational": bool, "unit_fraction": bool, "multiple_of": int, "also": list, "values_of": str}


def _parse_domains(path: Path, domains: Mapping[str, Any]) -> dict[str, Any]:
    """``[domains]``: per parameter, an array of allowed values, ``"path"`` (a file or folder, checked by the
    study when it is used), or a table: numeric with ``min``/``max`` (inclusive), ``gt``/``lt`` (strict) and
    ``integer`` (issue #24 item 2; ``multiple_of``: an integer step, such as the CNN's resolution), or ``rational`` (exact text such as ``1/10``; ``unit_fraction``: 1/k only);
    ``also``: words or numbers allowed besides the range (``lambdas``'s ``"released"``, ``subsample``'s 0); ``values_of = "method"``:
    the values the file declares for another key (``only_method`` takes the result's method names).
    There is no "any value" domain (issue #35)."""
    for key, dom in domains.items():
        if key == "rules":   # cross-key rules (repro/engine/domains.py), checked before any trial
            for rule in dom if isinstance(dom, list) else [dom]:
                parse_rule(path, rule)
            continue
        if isinstance(dom, list):
            if not dom:
                raise _err(path, f"domains.{key}", "must be a non-empty array of allowed values")
        elif isinstance(dom, dict):
            if not dom:
                raise _err(path, f"domains.{key}", "an empty table allows nothing; give min/max/gt/lt/integer")
            _check_keys(path, f"domains.{key}.", dom, _DOMAIN_KEYS)
            if not all(isinstance(w, (str, int, float)) and not isinstance(w, bool) for w in dom.get("also", ())):
                raise _err(path, f"domains.{key}.also", "must be an array of words or numbers allowed besides the "
                           "range (e.g. [\"released\"] or [0])")
            if "multiple_of" in dom and not (dom.get("integer") and dom["multiple_of"] > 0):
                raise _err(path, f"domains.{key}.multiple_of", "needs integer = true and a positive step "
                           "(e.g. { integer = true, min = 8, multiple_of = 8 })")
            lower = [dom[k] for k in ("min", "gt") if k in dom]
            upper = [dom[k] for k in ("max", "lt") if k in dom]
            if "min" in dom and "gt" in dom or "max" in dom and "lt" in dom:
                raise _err(path, f"domains.{key}", "give one lower bound (min or gt) and one upper bound "
                           "(max or lt)")
            if lower and upper and (lower[0] > upper[0] or lower[0] == upper[0] and ("gt" in dom or "lt" in dom)):
                raise _err(path, f"domains.{key}", f"is empty: its bounds exclude every value ({dom})")
        elif dom != "path":
            raise _err(path, f"domains.{key}", 'must be an array of allowed values, a table with '
                       'min/max/gt/lt/integer (and also = [words]), values_of = "KEY", or "path" (a file or folder); '
                       f'there is no "any value" domain; got {dom!r}')
    return dict(domains)


def _parse_aliases(path: Path, aliases: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(a, str) and a for a in aliases):
        raise _err(path, "aliases", "must be an array of non-empty strings (other ids that name this result)")
    return tuple(aliases)


def _opt_float(v: Any) -> float | None:
    return None if v is None else float(v)


_SCOPE_KEYS = {"family": str, "seed": str}


def _parse_scopes(path: Path, table: Mapping[str, Any]) -> dict[str, StreamScope]:
    """``[scopes]``: ``name = { family = "...", seed = "<param>" }`` per named random-stream scope (issue 36):
    the trials of every experiment declaring the same ``family`` share its streams, seeded by the base seed
    or by the integer parameter ``seed``."""
    scopes = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise _err(path, f"scopes.{name}", 'must be a table such as { family = "thesis-part1" }')
        _check_keys(path, f"scopes.{name}.", entry, _SCOPE_KEYS, ("family",))
        if name in BUILTIN_SCOPES:
            raise _err(path, f"scopes.{name}", f"{name!r} is a built-in scope ({', '.join(BUILTIN_SCOPES)}); "
                       "give the declared scope another name")
        if not entry["family"]:
            raise _err(path, f"scopes.{name}.family", "must be a non-empty name")
        scopes[name] = StreamScope(entry["family"], entry.get("seed"))
    return scopes


def _check_scope_seeds(spec: Any) -> None:
    """A scope seeded by a parameter names an integer parameter of every trial."""
    for name, scope in spec.scopes.items():
        if scope.seed is None:
            continue
        for profile in spec.profiles:
            fixed = spec.fixed_params(profile)
            cells = spec.expand_cells(profile)
            values = [fixed[scope.seed]] if scope.seed in fixed else [c.get(scope.seed) for c in cells]
            bad = [v for v in values if not isinstance(v, int) or isinstance(v, bool) or v < 0]
            if bad:
                raise _err(spec.path or spec.id, f"scopes.{name}.seed",
                           f"{scope.seed!r} must name an integer parameter >= 0 of every trial (profile {profile}: "
                           f"{_fmt(bad[0]) if bad[0] is not None else 'missing'})")


def _check_declared_values(spec: Any) -> None:
    """Every value the file gives a key with a ``[domains]`` entry (params, grid, cells, each profile's) lies in
    that domain, so a bad grid value fails when the file loads, not in half of its trials (issue #35)."""
    tables: list[tuple[str, Mapping[str, Any]]] = [("params", spec.params), ("grid", spec.grid or {})]
    tables += [(f"cells[{i}]", c) for i, c in enumerate(spec.cells or ())]
    for name, prof in spec.profiles.items():
        tables += [(f"profiles.{name}.params", prof.params), (f"profiles.{name}.grid", prof.grid or {})]
        tables += [(f"profiles.{name}.cells[{i}]", c) for i, c in enumerate(prof.cells or ())]
    for where, table in tables:
        for key, value in table.items():
            if key not in spec.domains:
                continue
            for v in value if isinstance(value, list) else [value]:
                try:
                    typed = spec._typed(key, spec.param_type(key), v)
                except ValueError as exc:
                    raise _err(spec.path or spec.id, f"{where}.{key}", f"{_fmt(v)}: {exc}") from None
                problem = spec.domain_problem(key, typed)
                if problem:
                    raise _err(spec.path or spec.id, f"{where}.{key}",
                               f"{_fmt(v)} is outside the file's own [domains] entry: {problem}")
