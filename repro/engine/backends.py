"""Execution backends of the runner: in-process, loky (local processes), Dask and Ray.

Every backend calls the same function on each task and yields its results in completion order;
the runner re-orders them by task index, so the backend never changes a number. Native thread
pools (BLAS, OpenMP) are pinned to one thread inside every trial by :func:`single_threaded`, in
the driver process as well as in every worker, because a BLAS reduction with a different thread
count sums in a different order and changes the last bits of a result (issue #15, item 3).

loky runs on joblib's reusable executor (its workers ignore SIGINT: on Ctrl-C the driver stops
them). Dask and Ray are driven through their own APIs (``client.submit`` + ``as_completed``,
``ray.remote`` + ``ray.wait``) rather than through joblib, whose Ray backend cannot return
results as they complete. ``REPRO_DASK_SCHEDULER`` / ``REPRO_RAY_ADDRESS`` name an existing
cluster; otherwise a local one with ``jobs`` single-threaded worker processes is started for the
run and shut down at its end (also after Ctrl-C).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from repro.errors import MissingExtraError

__all__ = ["BACKENDS", "run_tasks", "single_threaded", "worker_count"]

BACKENDS = ("loky", "dask", "ray")
T = TypeVar("T")
R = TypeVar("R")


#: read by BLAS/OpenMP libraries when they load: covers a library first imported inside a trial
_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_controller: Any = None
_controller_modules = -1


def _thread_controller() -> Any:
    """This process's ThreadpoolController, rebuilt when modules (hence native libraries) were added.

    Building one scans the loaded libraries (milliseconds); reusing it makes pinning ~20 µs a trial.
    """
    global _controller, _controller_modules
    from threadpoolctl import ThreadpoolController

    if _controller is None or len(sys.modules) != _controller_modules:
        _controller = ThreadpoolController()
        _controller_modules = len(sys.modules)
    return _controller


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Limit every native thread pool (BLAS, OpenMP) to one thread for the duration of a trial.

    Libraries already loaded are limited through threadpoolctl; for one loaded during the trial,
    the ``*_NUM_THREADS`` variables are set to 1 (and restored afterwards).
    """
    saved = {k: os.environ.get(k) for k in _THREAD_ENV}
    os.environ.update(dict.fromkeys(_THREAD_ENV, "1"))
    try:
        with _thread_controller().limit(limits=1):
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def worker_count(jobs: int) -> int:
    """Number of workers for ``--jobs``: ``-1`` means every core."""
    return (os.cpu_count() or 1) if jobs == -1 else max(jobs, 1)


def run_tasks(fn: Callable[[T], R], tasks: Sequence[T], *, backend: str, jobs: int) -> Iterator[R]:
    """Yield ``fn(task)`` for every task, in completion order, on ``backend`` with ``jobs`` workers.

    ``fn`` must never raise (the runner's ``_execute`` returns failures as values) and must pin
    its own thread pools (it runs in workers the driver cannot configure).
    """
    if not tasks:
        return
    if backend == "loky":
        if jobs == 1:
            for task in tasks:
                yield fn(task)
            return
        yield from _loky(fn, tasks, jobs)
    elif backend == "dask":
        yield from _dask(fn, tasks, jobs)
    elif backend == "ray":
        yield from _ray(fn, tasks, jobs)
    else:  # RunConfig validates the name; this is a programming error
        raise ValueError(f"unknown backend {backend!r}")


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the driver's to handle (it stops the workers cleanly)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call_batch(fn: Callable[[T], R], batch: list[T]) -> tuple[list[R], float]:
    start = time.perf_counter()
    return [fn(t) for t in batch], time.perf_counter() - start


def _loky(fn: Callable[[T], R], tasks: Sequence[T], jobs: int) -> Iterator[R]:
    """Tasks in adaptive batches (doubled while a batch takes < 0.2 s), at most two per worker in flight.

    Batching keeps the per-trial cost of tiny trials low; bounded submission leaves little to abort
    on Ctrl-C and little memory in use for huge plans.
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    from joblib.externals.loky import get_reusable_executor

    workers = worker_count(jobs)
    # loky retires a worker (memory growth, idle timeout) and says so with this warning; the run goes on
    # (a lost task would raise BrokenProcessPool instead), so the message is noise to a user.
    warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given to the executor",
                            category=UserWarning)
    executor = get_reusable_executor(max_workers=workers, initializer=_ignore_sigint)
    queue = iter(tasks)
    size = 1
    max_size = max(1, len(tasks) // (4 * workers))

    def submit(n: int) -> set[Any]:
        batches = (list(itertools.islice(queue, size)) for _ in range(n))
        return {executor.submit(_call_batch, fn, b) for b in batches if b}

    pending = submit(2 * workers)
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                results, seconds = future.result()
                if seconds < 0.2:
                    size = min(2 * size, max_size)
                yield from results
            pending |= submit(len(done))
    except BaseException:
        # Ctrl-C (or an error): stop the worker processes now, so none is left to die noisily at exit.
        # loky's manager thread can trip over its own bookkeeping while it is killed; that is noise.
        with _quiet_thread_errors("ExecutorManagerThread"):
            executor.shutdown(wait=True, kill_workers=True)
        raise


@contextlib.contextmanager
def _quiet_thread_errors(thread_name: str) -> Iterator[None]:
    """Silence uncaught exceptions of the thread named ``thread_name`` (others are reported as usual)."""
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.thread is None or args.thread.name != thread_name:
            previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous


def _dask(fn: Callable[[T], R], tasks: Sequence[T], jobs: int) -> Iterator[R]:
    try:
        import distributed
    except ImportError as exc:
        raise MissingExtraError(
            "--backend dask needs the dask extra; install it with: pip install -e '.[dask]'"
        ) from exc
    address = os.environ.get("REPRO_DASK_SCHEDULER")
    with _quiet_logger("distributed"):
        if address:
            client = distributed.Client(address)
            cluster = None
        else:
            with _sigint_ignored():  # the processes started now inherit it: Ctrl-C is the driver's
                cluster = distributed.LocalCluster(n_workers=worker_count(jobs), threads_per_worker=1,
                                                   processes=True, dashboard_address=":0")
            client = distributed.Client(cluster)
        futures: list[Any] = []
        try:
            futures = [client.submit(fn, t, pure=False) for t in tasks]
            for future in distributed.as_completed(futures):
                yield future.result()
        finally:
            if cluster is not None:  # our own cluster: stopping it stops whatever still runs
                client.close()
                cluster.close()
            else:  # a shared cluster: withdraw what is left of this run
                unfinished = [f for f in futures if not f.done()]
                if unfinished:
                    with contextlib.suppress(Exception):
                        client.cancel(unfinished)
                client.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while worker processes are started (they inherit it), then restore it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    """Raise ``name``'s log level to WARNING unless the user asked for INFO output (``-v``)."""
    logger = logging.getLogger(name)
    previous = logger.level
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _ray(fn: Callable[[T], R], tasks: Sequence[T], jobs: int) -> Iterator[R]:
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError(
            "--backend ray needs the ray extra; install it with: pip install -e '.[ray]'"
        ) from exc
    address = os.environ.get("REPRO_RAY_ADDRESS")
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            with _sigint_ignored():  # the processes started now inherit it: Ctrl-C is the driver's
                ray.init(num_cpus=worker_count(jobs), include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
        started = True
    remote = ray.remote(num_cpus=1, max_retries=0)(fn)
    pending = [remote.remote(t) for t in tasks]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:  # stops the workers, and with them any task still running
            ray.shutdown()
