"""A researcher's own method (``repro run ID --with FILE.py[:Class]`` or ``--with module:Class``), issue 20 item 8.

The contract (``docs/bring-your-own-method.md``, ``examples/my_method.py``): a scikit-learn-style class with

* ``fit(X, y, sensitive_features=...)`` and ``predict(X)`` (``predict_proba`` optional);
* ``random_state`` in ``__init__``: the runner passes an int drawn from the trial's ``ctx.rng()``;
* optional ``epsilon`` / ``delta`` in ``__init__``: the runner passes the cell's privacy budget;
* a class attribute ``privacy_guarantee`` (a :class:`repro.privacy.guarantee.Guarantee`); whatever label it
  declares, results show it as *declared by the user* (:attr:`Label.USER_DECLARED`): the project has not
  checked it.

:func:`load_user_method` checks all of this before any trial runs (one-line errors). The method enters the
plan as one more cell whose ``with`` value is its identity, ``Class@sha256`` of the file's bytes: the code's
hash is part of the trial cache key, so an edited method is retrained while a moved or renamed file is not,
and no machine path reaches the results (outputs show :attr:`UserMethod.ref`, the file relative to the
current directory, or its name when outside it, or the ``module:Class`` text). The ``with`` value is a key of
the cell, so it is part of the trial's own stream (``ctx.rng()``, which draws the method's ``random_state``);
the splits come from repetition-scoped streams (``ctx.rng(..., scope="repetition")``), so the method is
trained and tested on exactly the rows the paper's methods see in the same repetition.

Workers find the code by its identity: loading a file stores a copy of its bytes under its sha256 in a
content-addressed folder of the temporary directory (:func:`_store`), so a trial runs exactly the code that
was hashed (a module reference is imported again by name and its hash checked).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from repro.engine.identity import (
    USER_KEY,  # the cell key of a user's method (part of the cell: the trial stream)
)
from repro.engine.spec import ExperimentSpec
from repro.errors import InvalidParameterError
from repro.privacy.guarantee import Guarantee, Label

__all__ = ["UserMethod", "PredictionError", "checked_predictions", "load_user_method", "resolve", "with_user_method",
           "guarantee_at", "USER_KEY"]

_SUFFIX = " (yours)"


@dataclasses.dataclass(frozen=True)
class UserMethod:
    """A checked user method: display name, shown reference (``where:Class``, ``where`` relative to the current
    directory or a module name), identity ``key`` (``Class@sha256``, the cell's ``with`` value), class, guarantee."""

    name: str
    ref: str
    key: str
    cls: type
    guarantee: Guarantee

    @property
    def sha256(self) -> str:
        return self.key.rpartition("@")[2]


def _store() -> Path:
    """Content-addressed copies of loaded methods (``<sha256>.py`` + ``<sha256>.json``), shared by workers."""
    return Path(os.environ.get("REPRO_USER_METHOD_STORE") or Path(tempfile.gettempdir()) / "repro-user-methods")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _shown(where: str, path: Path | None) -> str:
    """``where`` as outputs show it: a module name as given; a file relative to the current directory, or its
    name alone when it lies outside it (a ``../..`` path would spell this machine's folders)."""
    if path is None:
        return where
    try:
        return path.relative_to(Path.cwd().absolute()).as_posix()
    except ValueError:
        return path.name


def _fail(ref: str, problem: str) -> InvalidParameterError:
    return InvalidParameterError(f"--with {ref}: {problem}")


def _is_file(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where or Path(where).expanduser().is_file()


def _exec_file(ref: str, path: Path, digest: str) -> Any:
    name = "repro_user_method_" + digest[:16]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the user's code: one line
        sys.modules.pop(name, None)
        raise _fail(ref, f"importing the file failed: {type(exc).__name__}: {exc}") from exc
    return module


def _load_module(ref: str, where: str) -> tuple[Any, Path]:
    if _is_file(where):
        path = Path(where).expanduser().absolute()
        if path.is_dir():
            raise _fail(ref, f"{where!r} is a folder; give a .py file or an importable module:Class.")
        if not path.is_file():
            raise _fail(ref, f"no such file {where!r}; give a .py file or an importable module:Class.")
        if path.suffix != ".py":
            raise _fail(ref, f"{where!r} is not a .py file; give the method's Python file (FILE.py) or an "
                             "importable module:Class.")
        try:
            source = path.read_bytes()
        except OSError as exc:
            raise _fail(ref, f"cannot read {where!r} ({exc.strerror or type(exc).__name__}); make it readable.") \
                from None
        return _exec_file(ref, path, hashlib.sha256(source).hexdigest()), path
    try:
        module = importlib.import_module(where)
    except Exception as exc:  # noqa: BLE001
        raise _fail(ref, f"cannot import module {where!r} ({type(exc).__name__}: {exc}); give FILE.py or "
                         "an importable module:Class.") from exc
    source = inspect.getsourcefile(module)
    if source is None:
        raise _fail(ref, f"module {where!r} has no Python source to hash.")
    return module, Path(source)


def _candidates(module: Any) -> list[type]:
    return [obj for _, obj in sorted(vars(module).items()) if inspect.isclass(obj)
            and obj.__module__ == module.__name__ and callable(getattr(obj, "fit", None))]


def _missing(cls: type) -> list[str]:
    """The parts of the contract ``cls`` lacks, in words (empty when it has them all)."""
    lacks = [f"{name}()" for name in ("fit", "predict") if not callable(getattr(cls, name, None))]
    if not isinstance(getattr(cls, "privacy_guarantee", None), Guarantee):
        lacks.append("a class attribute privacy_guarantee (a repro.privacy.guarantee.Guarantee)")
    return lacks


def _check_class(ref: str, cls: type) -> Guarantee:
    guarantee = getattr(cls, "privacy_guarantee", None)
    if not isinstance(guarantee, Guarantee):
        raise _fail(ref, f"class {cls.__name__} has no class attribute privacy_guarantee (a "
                         "repro.privacy.guarantee.Guarantee); declare the guarantee your method claims.")
    for needed in ("fit", "predict"):
        if not callable(getattr(cls, needed, None)):
            raise _fail(ref, f"class {cls.__name__} has no {needed}() method; it needs fit(X, y, "
                             "sensitive_features=...) and predict(X).")
    params = inspect.signature(cls.fit).parameters
    if "sensitive_features" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise _fail(ref, f"{cls.__name__}.fit must accept the keyword sensitive_features.")
    init = inspect.signature(cls).parameters   # the constructor's (a class without __init__ takes nothing)
    if "random_state" not in init and not any(p.kind is p.VAR_KEYWORD for p in init.values()):
        raise _fail(ref, f"{cls.__name__}.__init__ must accept random_state (the runner passes an int).")
    return guarantee


def load_user_method(ref: str) -> UserMethod:
    """Check ``FILE.py``, ``FILE.py:Class`` or ``module:Class`` against the contract (module docstring)."""
    where, _, cls_name = ref.rpartition(":") if ref.count(":") and not ref.endswith(".py") else (ref, "", "")
    if not where:
        raise _fail(ref, "expected FILE.py, FILE.py:Class or module:Class.")
    module, path = _load_module(ref, where)
    if cls_name:
        cls = getattr(module, cls_name, None)
        if not inspect.isclass(cls):
            raise _fail(ref, f"no class {cls_name!r} in {where}; classes there: "
                             f"{', '.join(c.__name__ for c in _candidates(module)) or 'none'}.")
    else:
        found = [c for c in _candidates(module) if isinstance(getattr(c, "privacy_guarantee", None), Guarantee)]
        defined = [obj for _, obj in sorted(vars(module).items())
                   if inspect.isclass(obj) and obj.__module__ == module.__name__]
        if not found and len(defined) == 1:   # the file's one class: name what it lacks
            lacks = _missing(defined[0])
            raise _fail(ref, f"class {defined[0].__name__} lacks {' and '.join(lacks)}; see "
                             "docs/bring-your-own-method.md.")
        if len(found) != 1:
            names = ", ".join(c.__name__ for c in found)
            raise _fail(ref, f"found {len(found)} classes with fit() and a privacy_guarantee"
                             + (f" ({names}); name one: {where}:Class." if found else "; the file must define one."))
        cls = found[0]
    guarantee = _check_class(ref, cls)
    source = path.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    is_file = _is_file(where)
    method = UserMethod(name=cls.__name__ + _SUFFIX, ref=f"{_shown(where, path if is_file else None)}:{cls.__name__}",
                        key=f"{cls.__name__}@{digest}", cls=cls, guarantee=guarantee)
    store = _store()
    store.mkdir(parents=True, exist_ok=True)
    if not (store / f"{digest}.py").is_file():
        _write_atomic(store / f"{digest}.py", source)
    meta = {"module": None if is_file else where, "ref": method.ref}
    _write_atomic(store / f"{digest}.{cls.__name__}.json", json.dumps(meta).encode())
    _LOADED[method.key] = method
    return method


#: methods loaded in this process, by identity
_LOADED: dict[str, UserMethod] = {}


@functools.lru_cache(maxsize=8)
def resolve(key: str) -> UserMethod:
    """The user method a trial's ``with`` value (``Class@sha256``) names: the one loaded in this process, or (in
    a worker) the stored copy of the hashed bytes (a module is imported by name and its hash checked)."""
    if key in _LOADED:
        return _LOADED[key]
    cls_name, _, digest = key.rpartition("@")
    meta_path, code_path = _store() / f"{digest}.{cls_name}.json", _store() / f"{digest}.py"
    if not (cls_name and meta_path.is_file() and code_path.is_file()):
        raise InvalidParameterError(f"--with: no loaded method {key[:len(cls_name) + 13]}…; run again with --with "
                                    "FILE.py or module:Class.")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta["module"] is not None:
        method = load_user_method(f"{meta['module']}:{cls_name}")
        if method.key != key:
            raise InvalidParameterError(f"--with {meta['module']}:{cls_name}: the code changed during the run "
                                        f"(sha256 {digest[:12]}…); run again.")
        return method
    module = _exec_file(meta["ref"], code_path, digest)
    cls = getattr(module, cls_name)
    return UserMethod(name=cls_name + _SUFFIX, ref=meta["ref"], key=key, cls=cls,
                      guarantee=_check_class(meta["ref"], cls))


def with_user_method(spec: ExperimentSpec, method: UserMethod) -> ExperimentSpec:
    """``spec`` with one more method: the user's, in its own cell(s), crossed with the same grid as the others.

    A file that lists ``cells`` gets one more cell; a file whose grid has a ``method`` axis gets its methods
    as cells (the rest of the grid is crossed with them as before) plus the user's.
    """
    user_cell = {"method": method.name, USER_KEY: method.key}
    profiles = dict(spec.profiles)
    grid = dict(spec.grid or {})
    top_methods = grid.pop("method", None)
    cells = None if spec.cells is None else (*spec.cells, user_cell)
    if top_methods is not None:
        cells = (*({"method": m} for m in top_methods), user_cell)
    for name, prof in spec.profiles.items():
        pgrid = dict(prof.grid or {})
        methods = pgrid.pop("method", None)
        pcells = prof.cells
        if methods is not None:
            pcells = (*({"method": m} for m in methods), user_cell)
        elif pcells is not None:
            pcells = (*pcells, user_cell)
        profiles[name] = dataclasses.replace(prof, grid=pgrid or None, cells=pcells)
    if cells is None and all(p.cells is None for p in profiles.values()):
        raise InvalidParameterError(f"--with: experiment {spec.id!r} has no method axis to add a method to.")
    return dataclasses.replace(spec, grid=grid or None, cells=cells, profiles=profiles)


def guarantee_at(method: UserMethod, epsilon: float, delta: float) -> Guarantee:
    """The user's declared guarantee at the cell's budget (ε and δ where its ``__init__`` takes them, else the
    declared ones), labelled *declared by the user*: the project has not checked it."""
    init = inspect.signature(method.cls).parameters
    declared = method.guarantee
    eps = epsilon if "epsilon" in init else declared.epsilon
    delta_used = delta if "delta" in init else declared.delta
    caveat = declared.caveat or f"declared {declared.label.value} by the user, not checked by the project"
    return dataclasses.replace(declared, epsilon=eps, delta=delta_used, label=Label.USER_DECLARED, caveat=caveat)


class PredictionError(ValueError):
    """A ``--with`` method's ``predict`` broke the output contract; reported as a failed trial (method, setting,
    repetition and this message), like an exception raised by its ``fit``."""


def checked_predictions(name: str, raw: Any, n_test: int) -> np.ndarray:
    """``raw`` (what ``predict(X_test)`` returned) as a float vector of 0/1 labels, or :class:`PredictionError`
    saying what was wrong: ``None``, not numbers, a shape other than ``(n_test,)``, NaN/inf, labels besides 0 and 1."""
    expected = f"a finite 0/1 vector of the test set's length ({n_test})"
    if raw is None:
        raise PredictionError(f"{name}: predict returned None; it must return {expected}")
    try:
        pred = np.asarray(raw)
    except Exception as exc:  # noqa: BLE001 - whatever the method returned
        raise PredictionError(f"{name}: predict returned {type(raw).__name__}, not an array ({exc}); it must return "
                              f"{expected}") from None
    if pred.dtype.kind not in "biuf":
        raise PredictionError(f"{name}: predict returned values of dtype {pred.dtype} (not numbers); it must return "
                              f"{expected}")
    if pred.shape != (n_test,):
        raise PredictionError(f"{name}: predict returned shape {pred.shape}; it must return {expected}, shape "
                              f"({n_test},)")
    pred = pred.astype(float)
    bad = int(np.count_nonzero(~np.isfinite(pred)))
    if bad:
        raise PredictionError(f"{name}: predict returned {bad} NaN/inf value(s); it must return {expected}")
    labels = sorted(set(np.unique(pred).tolist()) - {0.0, 1.0})
    if labels:
        shown = ", ".join(f"{v:g}" for v in labels[:5])
        raise PredictionError(f"{name}: predict returned labels other than 0 and 1 ({shown}); it must return "
                              f"{expected}")
    return pred
