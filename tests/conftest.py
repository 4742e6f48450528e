"""Shared test helpers.

``require_mirror()`` / the ``data_mirror`` fixture: tests marked ``@pytest.mark.data`` need the raw
data mirror (``REPRO_DATA_MIRROR``). They skip when it is unset or missing, except under
``CI=true``, where a missing mirror is a failure (CI must exercise the real data).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

MIRROR_EXAMPLE = "/absolute/path/to/shared/data"  # absolute, as the README asks: it holds from any folder


def on_ci() -> bool:
    """True when the environment variable ``CI`` is set to true (as CI services do)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require_mirror() -> Path:
    """The data mirror folder from ``REPRO_DATA_MIRROR``; skip (fail under ``CI=true``) if absent."""
    raw = os.environ.get("REPRO_DATA_MIRROR")
    if not raw:
        reason = f"REPRO_DATA_MIRROR is not set (e.g. export REPRO_DATA_MIRROR={MIRROR_EXAMPLE})"
    elif not Path(raw).expanduser().is_dir():
        reason = (f"REPRO_DATA_MIRROR={raw!r} is not a folder; set it to the mirror's absolute path "
                  f"(e.g. {MIRROR_EXAMPLE})")
    else:
        return Path(raw).expanduser().absolute()
    if on_ci():
        pytest.fail(f"data mirror required under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def data_mirror() -> Path:
    """The data mirror folder (session scope, so it is read before tests change the env)."""
    return require_mirror()


@pytest.fixture(scope="session")
def utkface_data_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data cache folder (for ``REPRO_DATA_DIR``) shared by the tests that train on UTKFace images: the
    archive is extracted and verified (23,705 images, 280 MB of small files, seconds of work) once per test
    process instead of once per test. Extraction into an empty cache is tested in tests/datasets/test_utkface.py."""
    return tmp_path_factory.mktemp("utkface-data-cache")


@pytest.fixture
def isolated_data_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Empty cache in ``tmp_path/cache``, no mirror, offline; returns the cache folder.

    Tests that need a mirror or the network set ``REPRO_DATA_MIRROR`` / ``REPRO_OFFLINE=0``
    themselves (the real mirror comes from the ``data_mirror`` fixture).
    """
    cache = tmp_path / "cache"
    monkeypatch.setenv("REPRO_DATA_DIR", str(cache))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    monkeypatch.delenv("REPRO_DATA_MIRROR", raising=False)
    return cache


@pytest.fixture
def make_raw_source(tmp_path: Path):
    """Factory for a throwaway ``RawSource`` whose bytes sit in ``tmp_path/origin``.

    ``make_raw_source(content, name=..., filename=..., url=True, sha256=None)`` writes ``content``
    to ``tmp_path/origin/<filename>``; ``url=True`` gives the source a ``file://`` URL to it
    (``url=None`` makes a mirror-only source); ``sha256`` overrides the registered digest.
    """
    import hashlib

    from repro.datasets.sources import RawSource

    def factory(content: bytes, *, name: str = "tmp-source", filename: str = "tmp.csv",
                url: bool | None = True, sha256: str | None = None) -> RawSource:
        origin = tmp_path / "origin" / filename
        origin.parent.mkdir(parents=True, exist_ok=True)
        origin.write_bytes(content)
        return RawSource(
            name=name, filename=filename, url=origin.as_uri() if url else None,
            sha256=sha256 or hashlib.sha256(content).hexdigest(), size=len(content), rows=None,
            license="test", citation="test", description="test file", canonical=bool(url),
        )

    return factory


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def toy_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Experiments dir = a copy of tests/fixtures/experiments; results dir = a fresh tmp folder.

    Returns the results folder.
    """
    import shutil

    exp = tmp_path / "experiments"
    shutil.copytree(FIXTURES / "experiments", exp)
    results = tmp_path / "results"
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(exp))
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(results))
    return results


# ---------------------------------------------------------------- the README's `-n auto` (pytest-xdist; issue 24)


#: the compiled-program folder this pytest process made (the controller under xdist; its workers inherit it)
_MADE_XLA_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """One folder of kept compiled programs (``$REPRO_XLA_CACHE``) for the whole test run, shared by the xdist
    workers (started after this hook, they inherit it) and the ``repro`` processes tests start: a program
    the suite compiles once is loaded elsewhere instead of compiled again (tests/learners/test_jax_pool.py
    shows a loaded program gives the compiled one's bytes). Removed at the end; a value set outside wins."""
    if "REPRO_XLA_CACHE" not in os.environ:
        folder = tempfile.mkdtemp(prefix="repro-test-xla-")
        os.environ["REPRO_XLA_CACHE"] = folder
        _MADE_XLA_CACHE.append(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _MADE_XLA_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first (each group keeps its collected order). Under pytest-xdist a long
    test then starts while the other workers still have short tests to take, instead of one worker running
    it alone at the end of the suite."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


_BLAS_LIMITER = None


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread_per_xdist_worker():
    """Under pytest-xdist (one worker process per core) each worker's BLAS/OpenMP pools run one thread:
    pools of several threads per worker only oversubscribe the cores. Set up at the first test, after
    collection imported the libraries. Subprocesses (loky, Dask and Ray workers, the CLI) keep their
    defaults; the runner pins them in every trial, as before."""
    global _BLAS_LIMITER
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    from threadpoolctl import ThreadpoolController

    _BLAS_LIMITER = ThreadpoolController().limit(limits=1)
    yield
    _BLAS_LIMITER.restore_original_limits()
    _BLAS_LIMITER = None


@pytest.fixture
def native_thread_defaults():
    """This process's BLAS/OpenMP pools at their defaults for one test (not one thread per xdist worker), for
    tests that check the runner's own pinning: on pools already at one thread they could not fail."""
    global _BLAS_LIMITER
    if _BLAS_LIMITER is None:
        yield
        return
    from threadpoolctl import ThreadpoolController

    _BLAS_LIMITER.restore_original_limits()
    yield
    _BLAS_LIMITER = ThreadpoolController().limit(limits=1)


@pytest.fixture(autouse=True)
def _ctrl_c_left_as_found():
    """A test leaves SIGINT as it found it (handler and mask): the Ctrl-C tests of the same pytest worker rely on
    it. A process started in the background by a non-interactive shell begins with SIGINT ignored; that is kept."""
    import signal

    handler = signal.getsignal(signal.SIGINT)
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    now = signal.getsignal(signal.SIGINT)
    now_blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    if now is not handler or now_blocked != blocked:   # put it back, so that only this test fails
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_BLOCK if blocked else signal.SIG_UNBLOCK, [signal.SIGINT])
    assert now is handler and now_blocked == blocked, f"this test changed SIGINT ({handler!r} -> {now!r}); restore it"


@pytest.fixture
def ctrl_c_default():
    """Ctrl-C as an interactive user has it (Python's default handler, SIGINT not blocked) for the test, whatever
    the process inherited (a background job of a non-interactive shell starts with SIGINT ignored)."""
    import signal

    handler = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    yield
    signal.signal(signal.SIGINT, handler)
    if blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
