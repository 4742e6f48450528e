"""The ``extends`` rule of experiment files: a file merged over the base files it names.

A family of files shares a base through ``extends`` (:func:`merge_raw`: tables merge by key, arrays and scalars
replace unless written under ``[append]``, ``[[metrics]]``/``[[claims]]`` merge by name; ``id``, ``aliases``,
``[[references]]`` and ``[fidelity]`` are never inherited). :mod:`repro.engine.spec` loads the merged table.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro.engine.schema import _err
from repro.errors import ExperimentFileError

__all__ = ["APPEND", "BASE_DIR", "extends_chain", "merge_raw", "merged_raw"]


#: sub-folder of the experiments folder holding base files: shared blocks named by ``extends``, not
#: experiments themselves (no ``id``, never listed)
BASE_DIR = "_base"
#: keys a file never inherits through ``extends``: its identity, the paper's values it is judged on and its
#: declared fidelity status
_NOT_INHERITED = ("id", "aliases", "references", "fidelity")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentFileError(f"{path}: not valid TOML: {exc}; fix the file or move it out of the "
                                  "experiments folder") from exc
    except UnicodeDecodeError as exc:
        raise ExperimentFileError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save the file as "
                                  "UTF-8 or move it out of the experiments folder") from exc
    except OSError as exc:
        raise ExperimentFileError(f"{path}: cannot read: {exc}") from exc


def _extends_path(path: Path, name: Any) -> Path:
    """The file an ``extends = name`` in ``path`` names: a ``*.toml`` path relative to ``path``'s
    folder, or an experiment id (``<id>.toml`` beside it)."""
    if not isinstance(name, str) or not name:
        raise _err(path, "extends", f"must be a non-empty string (a base file such as \"{BASE_DIR}/x.toml\" "
                   f"or an experiment id); got {name!r}")
    return (path.parent / (name if name.endswith(".toml") else f"{name}.toml")).resolve()


#: the table of a member file whose entries are appended to the inherited values instead of replacing them
APPEND = "append"
#: arrays of tables merged by ``name`` (a member's entry with a base entry's name replaces it in place)
_BY_NAME = ("metrics", "claims")


def merge_raw(base: Mapping[str, Any], child: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
    """``child`` merged over ``base`` (the rule of ``extends``; ``where`` names the child file in errors).

    - **Tables merge key by key**, recursively, except that a ``[domains]`` entry is replaced whole (a
      parameter's domain is never mixed).
    - **Arrays and scalars replace** the base's, unless the child writes them under ``[append]``: there a
      string is added after the inherited string (notes: the base's paragraphs, then the member's) and an
      array after the inherited array (``[append.grid] method = ["x"]``: the base's methods, then ``x``). The
      ``[append]`` table mirrors the file's keys; what it names must be inherited (with the same kind) and
      must not also be set by the same file.
    - **``[[metrics]]`` and ``[[claims]]``** are inherited and extended: a child entry with a base entry's
      ``name`` replaces it in place, a new name is appended.
    - ``id``, ``aliases`` and ``[[references]]`` are never inherited (a base may not hold them).
    """
    out = {k: v for k, v in base.items() if k not in _NOT_INHERITED}
    for key, value in child.items():
        if key == APPEND:
            continue
        if key in _BY_NAME and isinstance(value, list):   # one file names each entry once (a second would vanish)
            names = [m.get("name") for m in value if isinstance(m, dict) and m.get("name") is not None]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise _err(where or "experiment file", key, f"{key[:-1]} {twice[0]!r} is declared twice; give each "
                           "a unique name (an entry with a base entry's name replaces it)")
        if key in _BY_NAME and isinstance(out.get(key), list) and isinstance(value, list):
            merged = list(out[key])
            names = [m.get("name") if isinstance(m, dict) else None for m in merged]
            for m in value:
                name = m.get("name") if isinstance(m, dict) else None
                if name is not None and name in names:
                    merged[names.index(name)] = m
                else:
                    merged.append(m)
                    names.append(name)
            out[key] = merged
        elif key == "domains" and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}  # a parameter's domain is replaced whole, never mixed
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_raw(out[key], value, where=where)
        else:
            out[key] = value
    if APPEND in child:
        _append(out, base, child, child[APPEND], where, APPEND)
    return out


def _append(out: dict[str, Any], base: Mapping[str, Any], child: Mapping[str, Any], table: Any, where: str,
            path: str) -> None:
    """Apply ``[append]`` (see :func:`merge_raw`): each entry extends the inherited value at its key."""
    if not isinstance(table, dict) or not table:
        raise _err(where, path, "must be a table mirroring the file's keys (e.g. [append] notes = \"...\" or "
                   "[append.grid] method = [...])")
    for key, value in table.items():
        here = f"{path}.{key}"
        inherited = base.get(key) if isinstance(base, Mapping) else None
        if isinstance(value, dict):
            if not isinstance(inherited, dict):
                raise _err(where, here, "appends to a table the base does not have")
            sub_child = child.get(key, {}) if isinstance(child.get(key), dict) else {}
            _append(out[key], inherited, sub_child, value, where, here)
            continue
        if key in child:
            raise _err(where, here, f"the file both sets {key!r} and appends to it; keep one")
        if isinstance(value, str) and isinstance(inherited, str):
            out[key] = inherited + value
        elif isinstance(value, list) and isinstance(inherited, list) and key not in _BY_NAME:
            out[key] = [*inherited, *value]
        else:
            what = "nothing" if inherited is None else type(inherited).__name__
            raise _err(where, here, f"appends a {type(value).__name__} to {what}; [append] extends an "
                       "inherited string or array (set the key directly to replace it)")


def _resolve(path: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
    """The raw table of ``path`` merged over its ``extends`` chain; ``chain`` holds the files that
    extend it (to name a cycle)."""
    resolved = path.resolve()
    if resolved in chain:
        cycle = " -> ".join(str(p.name) for p in (*chain[chain.index(resolved):], resolved))
        raise _err(chain[0], "extends", f"forms a cycle: {cycle}; remove one of these `extends`")
    raw = _read_toml(path)
    if chain:
        for key in _NOT_INHERITED:
            if key in raw and resolved.parent.name == BASE_DIR:
                raise _err(path, key, "is not allowed in a base file (never inherited); put it in each "
                           "experiment file")
    if "extends" not in raw:
        if APPEND in raw:
            raise _err(path, APPEND, "appends to inherited values, but the file has no `extends`; set the keys "
                       "directly")
        return raw
    name = raw.pop("extends")
    base_path = _extends_path(path, name)
    if not base_path.is_file():
        raise _err(path, "extends", f"names {name!r}, but {base_path} does not exist; give a path relative to "
                   f"{path.parent} (e.g. \"{BASE_DIR}/x.toml\") or an experiment id")
    return merge_raw(_resolve(base_path, (*chain, resolved)), raw, where=str(path))


def extends_chain(path: str | os.PathLike[str]) -> list[Path]:
    """The files ``path`` extends, nearest first (for display; :func:`merged_raw` checks cycles)."""
    chain: list[Path] = []
    current = Path(path)
    while True:
        name = _read_toml(current).get("extends")
        if name is None:
            return chain
        current = _extends_path(current, name)
        if current in chain or len(chain) > 32:
            raise _err(path, "extends", "forms a cycle; remove one of the `extends`")
        chain.append(current)


def merged_raw(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The raw table of experiment file ``path`` after ``extends`` (what ``repro show --toml`` prints)."""
    return _resolve(Path(path), ())
