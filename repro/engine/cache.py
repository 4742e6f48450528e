"""On-disk cache of completed trials.

One file per trial, ``<root>/<experiment id>/<key[:2]>/<key>.pkl``, where ``key`` is
:meth:`repro.engine.identity.TrialKey.cache_key`: the sha256 of everything that changes a trial's
result: experiment id, typed params (fixed params, cell), variant, repetition, base seed and the
code version of the study (a content hash of the study module and every repro module it imports). Progress bars, worker counts and backends are not
part of the key. Entries are written atomically (temporary
file in the same folder, then :func:`os.replace`), so a killed run never leaves a half-written
entry; failed trials are never written.

Each entry is ``MAGIC + sha256(payload) + payload`` (``payload`` the pickle): a flipped bit, a
truncated file, an entry in an older format or a valid pickle of the wrong structure is treated
as corrupt, deleted and recomputed, never used (issue #15, item 6).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import logging
import os
import pickle
import pkgutil
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from repro import __version__
from repro.engine.identity import canonical_json

__all__ = ["TrialCache", "atomic_write_bytes", "atomic_write_text", "code_hash", "code_version", "module_exists", "shared_value",
           "trial_code_modules"]

log = logging.getLogger(__name__)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), 0o666 & ~_umask())   # mkstemp makes 0600: give the mode results get
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """This process's umask (read by setting it and putting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


#: modules never part of a trial's code version: figures and report text are drawn from saved
#: results, so editing them must not force trials to be recomputed.
_NOT_TRIAL_CODE = ("repro.plotting",)


def _is_trial_code(name: str) -> bool:
    if name.startswith(_FILE):
        return True
    return name.startswith("repro") and not name.endswith("_report") and not any(
        name == m or name.startswith(m + ".") for m in _NOT_TRIAL_CODE)


def _imported_modules(tree: ast.AST, package: str) -> set[str]:
    """Every ``repro`` module an AST imports, at any depth (lazy imports inside functions too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            # ``from repro.pkg import module`` imports a module, not a name
            found.update(f"{base}.{a.name}" for a in node.names
                         if base.startswith("repro") and module_exists(f"{base}.{a.name}"))
    return {m for m in found if m.startswith("repro")} | _plugin_modules(tree)


#: plugin packages whose registry also scans the folders of an environment variable (os.pathsep-separated):
#: a module found there is trial code like the package's own (repro/datasets/registry.py)
PLUGIN_PATH_ENV = {"repro.datasets": "REPRO_DATASET_PATH"}
#: the name prefix of a module found through :data:`PLUGIN_PATH_ENV`, hashed from its file
_FILE = "file:"


def plugin_path_folders(package: str) -> list[Path]:
    """The folders ``$REPRO_DATASET_PATH`` (or the package's variable in :data:`PLUGIN_PATH_ENV`) adds to
    ``package``'s registry, as absolute paths (none when it is unset)."""
    env = PLUGIN_PATH_ENV.get(package)
    value = os.environ.get(env, "") if env else ""
    return [Path(os.path.abspath(f)) for f in value.split(os.pathsep) if f]


def _plugin_modules(tree: ast.AST) -> set[str]:
    """Every module of the packages a registry scans at run time, named by its module-level
    ``__plugin_packages__ = ("repro.pkg", ...)``: code found without an import statement is trial code too,
    and so is every module in the folders of the package's :data:`PLUGIN_PATH_ENV` (``file:<path>``)."""
    names: set[str] = set()
    for node in getattr(tree, "body", []):
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__plugin_packages__"
                                                 for t in node.targets)
                and isinstance(node.value, (ast.Tuple, ast.List))):
            for elt in node.value.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    spec = importlib.util.find_spec(elt.value)
                    extra = plugin_path_folders(elt.value)
                    own = [p for p in (spec.submodule_search_locations or [] if spec else [])
                           if Path(os.path.abspath(p)) not in extra]   # the registry may have added them already
                    for info in pkgutil.iter_modules(own):
                        names.add(f"{elt.value}.{info.name}")
                    for folder in extra:
                        for info in pkgutil.iter_modules([str(folder)]):
                            if not info.ispkg:
                                names.add(f"{_FILE}{folder / (info.name + '.py')}")
    return names


def module_exists(name: str) -> bool:
    """Whether ``name`` is an importable module (its parent packages are imported to find out)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _StripImportPaths(ast.NodeTransformer):
    """Blank the module paths of ``repro`` imports (the names bound stay): moving a module without
    changing its code must not change any code version."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        if (node.module or "").startswith("repro") or node.level:
            node.module, node.level = "", 0
        return node

    def visit_Import(self, node: ast.Import) -> ast.AST:
        for alias in node.names:
            if alias.name.startswith("repro"):
                alias.name = ""
        return node


def _module_code(name: str) -> tuple[str, set[str]]:
    """One parse of a module: the sha256 of its code (its AST without comments or repro import paths)
    and the ``repro`` modules it imports. A module without Python source is hashed by name."""
    if name.startswith(_FILE):   # a module of $REPRO_DATASET_PATH: its file's code (unreadable: its bytes' absence)
        path = Path(name[len(_FILE):])
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            return hashlib.sha256(b"unreadable:" + path.name.encode()).hexdigest(), set()
        return hashlib.sha256(ast.dump(_StripImportPaths().visit(tree)).encode()).hexdigest(), \
            _imported_modules(tree, "repro.datasets")
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return hashlib.sha256(name.encode()).hexdigest(), set()
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    package = name if spec.submodule_search_locations else name.rpartition(".")[0]
    imports = _imported_modules(tree, package)
    return hashlib.sha256(ast.dump(_StripImportPaths().visit(tree)).encode()).hexdigest(), imports


def _trial_code_digests(module_name: str) -> dict[str, str]:
    """Digest of the study module and of every ``repro`` module it imports, transitively (report/plot
    modules excluded), each module parsed once."""
    digests: dict[str, str] = {}
    todo = [module_name]
    while todo:
        name = todo.pop()
        if name in digests or not _is_trial_code(name):
            continue
        digests[name], imports = _module_code(name)
        todo.extend(sorted(imports - digests.keys()))
    return digests


def _plugin_stamp() -> tuple[tuple[str, int, int], ...]:
    """(file, mtime, size) of every module in the :data:`PLUGIN_PATH_ENV` folders: part of the memo key of the
    code hashes below, so setting the variable or editing such a module in a running process is seen."""
    stamp = []
    for package in PLUGIN_PATH_ENV:
        for folder in plugin_path_folders(package):
            for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
                try:
                    st = path.stat()
                except OSError:
                    continue
                stamp.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(stamp)


def trial_code_modules(module_name: str) -> tuple[str, ...]:
    """The study module and every ``repro`` module it imports, transitively (report/plot modules excluded), and the
    modules found through ``$REPRO_DATASET_PATH`` when it imports the dataset registry (``file:<path>``)."""
    return _trial_code_modules(module_name, _plugin_stamp())


@cache
def _trial_code_modules(module_name: str, _stamp: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(sorted(_trial_code_digests(module_name)))


def code_hash(module_name: str) -> str:
    """Content hash of a module's trial code: the module and every ``repro`` module it imports, transitively.

    Lazy imports count; ``*_report`` modules and :mod:`repro.plotting` do not, since they only draw saved
    results. A registry's plugin folders count too: a dataset module found through ``$REPRO_DATASET_PATH`` is
    part of the code of every study that loads datasets, so editing it (or running without it) never serves
    the trials computed with another version. Each module contributes the sha256 of its syntax tree with the
    paths of its ``repro`` imports blanked, and the digests are combined in sorted order, so:

    * editing any library function a study uses recomputes that study's trials (no stale cache);
    * moving or renaming a module, reformatting it or editing comments invalidates nothing.
    """
    return _code_hash(module_name, _plugin_stamp())


@cache
def _code_hash(module_name: str, _stamp: tuple[Any, ...]) -> str:
    digests = sorted(_trial_code_digests(module_name).values())
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()[:16]


def code_version(module_name: str, version: str) -> str:
    """Version of a study's trial code: repro version, the study's declared ``version``
    (:class:`repro.engine.study.Study`) and :func:`code_hash` of its module."""
    return f"{__version__}+{version}+{code_hash(module_name)}"


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


_SHARED: dict[str, Any] = {}
#: digests recomputed in this process under ``refresh`` (``--force`` recomputes each value once per run)
_REFRESHED: set[str] = set()
#: digests whose corrupt entry this process already named in a warning
_WARNED: set[str] = set()


def shared_value(cache_dir: str | os.PathLike[str] | None, namespace: str, key: dict[str, Any], module: str,
                 compute: Callable[[], Any], *, validate: Callable[[Any], bool] | None = None,
                 refresh: bool = False) -> Any:
    """A value that many trials of a run need (e.g. a hyperparameter search), computed once.

    The value is keyed by ``namespace``, ``key`` and :func:`code_hash` of ``module`` (the code
    that computes it: any module, not only a study). With ``cache_dir`` it is kept as a checksummed entry under
    ``<cache_dir>/_shared/<namespace>/`` and guarded by a file lock, so concurrent workers wait for
    the first one instead of recomputing, and later runs reuse it; without one (``--no-cache``)
    it is memoized in this process only. ``compute`` must be deterministic.

    ``validate(value) -> bool`` checks the structure of a stored value: an entry that fails it (or
    its checksum) is named in a warning, deleted and recomputed (issue #24, item 3). ``refresh``
    (``--force``) recomputes the value once in this process and replaces the stored entry.
    """
    digest = hashlib.sha256(canonical_json({"namespace": namespace, "key": key,
                                            "code": f"{__version__}+{code_hash(module)}"}).encode()).hexdigest()
    fresh = refresh and digest not in _REFRESHED
    if digest in _SHARED and not fresh:
        return _SHARED[digest]
    if cache_dir is None:
        _SHARED[digest] = value = compute()
        if refresh:
            _REFRESHED.add(digest)
        return value
    store = TrialCache(Path(cache_dir) / "_shared", namespace, validate=validate)
    lock_path = store._path(digest).with_suffix(".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as lock:
        try:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # no POSIX locks: workers may compute the same value twice (same bytes)
            pass
        value = None if fresh else store.get(digest)
        if store.n_corrupt and digest not in _WARNED:   # once per value and process, however many trials ask
            _WARNED.add(digest)
            log.warning("shared value %s/%s (%s) failed its checksum or structure check; recomputed and replaced",
                        namespace, digest[:12], store._path(digest))
        if value is None:
            value = compute()
            if validate is not None and not validate(value):
                raise TypeError(f"shared value {namespace}/{digest[:12]} computed by {module} fails its own "
                                "structure check (a bug in the study)")
            store.put(digest, value)
    _SHARED[digest] = value
    if refresh:
        _REFRESHED.add(digest)
    return value


# the memos' cache_clear, where tests reset them
trial_code_modules.cache_clear = _trial_code_modules.cache_clear  # type: ignore[attr-defined]
code_hash.cache_clear = _code_hash.cache_clear  # type: ignore[attr-defined]
code_version.cache_clear = _code_hash.cache_clear  # type: ignore[attr-defined]
