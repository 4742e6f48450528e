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
run and shut down at its end (also after Ctrl-C). A named cluster that does not answer within
``REPRO_CLUSTER_TIMEOUT`` seconds (default 10) is one line of error, before any trial is sent.
loky workers exit on their own when the driver process dies (e.g. ``kill -9``), instead of running
their trials on for nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from repro.errors import MissingExtraError, ReproError

__all__ = ["BACKENDS", "ClusterUnreachableError", "TrialTimeoutError", "WorkerLostError", "accelerator_visible",
           "run_tasks", "sigint_seen", "single_threaded", "time_limit", "watch_sigint", "worker_count"]

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


_ACCELERATOR_PROBE = ("import jax, sys; "
                      "sys.exit(0 if any(d.platform != 'cpu' for d in jax.devices()) else 1)")


def accelerator_visible(timeout: float = 120.0) -> bool:
    """Whether JAX sees an accelerator (GPU/TPU) here; False without JAX (a broken install).

    Asked in a child process, so this process never opens the device (JAX would reserve most of its
    memory for the parent of the workers that need it)."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("jax") is None:
        return False
    try:
        probe = subprocess.run([sys.executable, "-c", _ACCELERATOR_PROBE], capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


class WorkerLostError(ReproError):
    """A worker process died while it ran trials (killed, out of memory, a crash in native code).

    ``items`` are the tasks it held; the runner names them in its one-line error."""

    def __init__(self, message: str, items: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.items = list(items)


class TrialTimeoutError(Exception):
    """A trial ran longer than ``--timeout`` (raised inside the trial, reported as its failure)."""


_SIGINT = {"seen": False}


def sigint_seen() -> bool:
    """Whether this process received a real SIGINT (Ctrl-C) while :func:`watch_sigint` was active: tells a
    Ctrl-C from a ``KeyboardInterrupt`` that a trial's own code raised (a failure of that trial)."""
    return _SIGINT["seen"]


@contextlib.contextmanager
def watch_sigint() -> Iterator[None]:
    """Record a real SIGINT (:func:`sigint_seen`) and then raise KeyboardInterrupt as Python's handler does.

    Only in the main thread, and only over Python's default handler (a handler the caller set is kept)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    _SIGINT["seen"] = False

    def handler(signum: int, frame: Any) -> None:
        _SIGINT["seen"] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`TrialTimeoutError` inside the block after ``seconds`` of wall time (``None``: no limit).

    A POSIX interval timer of the process, so only in the main thread (the in-process runner and loky's
    workers run trials there); elsewhere, and on platforms without ``setitimer``, the block runs unlimited.
    Code stuck inside one native call is interrupted when it returns to Python."""
    if not seconds or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TrialTimeoutError(f"the trial ran longer than --timeout {seconds:g} s and was stopped")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class ClusterUnreachableError(ReproError):
    """``REPRO_DASK_SCHEDULER`` / ``REPRO_RAY_ADDRESS`` names a cluster that does not answer."""


def cluster_timeout() -> float:
    """Seconds to wait for a named cluster: ``REPRO_CLUSTER_TIMEOUT`` (default 10)."""
    raw = os.environ.get("REPRO_CLUSTER_TIMEOUT", "10")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ReproError(f"REPRO_CLUSTER_TIMEOUT={raw!r} is not a positive number of seconds; "
                         "set it to e.g. 10 or unset it")
    return value


def _host_port(address: str, default_port: int) -> tuple[str, int] | None:
    """(host, port) of ``scheme://host:port``, ``host:port`` or ``host``; None for ``auto`` and the like."""
    rest = address.split("://", 1)[-1].rstrip("/")
    if not rest or rest == "auto" or "/" in rest:
        return None
    host, sep, port = rest.rpartition(":")
    if not sep:
        return rest, default_port
    return (host.strip("[]"), int(port)) if port.isdigit() else None


def check_reachable(address: str, *, what: str, variable: str, default_port: int) -> None:
    """Raise :class:`ClusterUnreachableError` (one line) unless a TCP connection to ``address`` opens
    within :func:`cluster_timeout` seconds; addresses that are not ``host:port`` are left to the client."""
    target = _host_port(address, default_port)
    if target is None:
        return
    timeout = cluster_timeout()
    try:
        with socket.create_connection(target, timeout=timeout):
            pass
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__).lower()
        raise ClusterUnreachableError(
            f"cannot reach the {what} at {address} ({variable}) within {timeout:g} s: {reason}; start it, "
            f"fix {variable}, or unset it to run on a local cluster"
        ) from None


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


def _init_loky_worker(driver_pid: int, quiet_crashes: bool = False) -> None:
    """Worker initializer: ignore Ctrl-C, and exit as soon as the driver process is gone.

    After ``kill -9`` of the driver nobody will read a result; without this the workers ran their
    trials on for a minute and then wrote loky's "leaked semlock objects" warning into the dead
    run's log.
    """
    _ignore_sigint()
    if quiet_crashes:   # a crash is the driver's one line to report; loky would print the dump of every thread
        import faulthandler

        faulthandler.enable(file=open(os.devnull, "w"))  # noqa: SIM115 - kept open for the worker's life

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != driver_pid:  # re-parented: the driver died
                os._exit(1)

    threading.Thread(target=watch, name="repro-driver-watch", daemon=True).start()


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
    # the resource tracker is started with the executor and inherits this: after a kill -9 of the
    # driver it frees the workers' semaphores without warning about them in the dead run's log
    quiet = "ignore:resource_tracker:UserWarning"
    if quiet not in os.environ.get("PYTHONWARNINGS", ""):
        os.environ["PYTHONWARNINGS"] = ",".join(w for w in (os.environ.get("PYTHONWARNINGS"), quiet) if w)
    quiet_crashes = ("PYTHONFAULTHANDLER" not in os.environ and os.environ.get("REPRO_DEBUG") != "1"
                     and logging.getLogger().getEffectiveLevel() > logging.DEBUG)
    executor = get_reusable_executor(max_workers=workers, initializer=_init_loky_worker,
                                     initargs=(os.getpid(), quiet_crashes))
    queue = iter(tasks)
    size = 1
    max_size = max(1, len(tasks) // (4 * workers))

    held: dict[Any, list[T]] = {}   # each future's tasks, named if its worker is lost
    #: a worker died between two waits: the executor refuses new work (loky raises on ``submit``); the futures in
    #: flight then fail one by one and name the tasks the lost worker held (the completed ones are still yielded)
    refused: list[tuple[BaseException, list[T]]] = []

    def submit(n: int) -> set[Any]:
        from concurrent.futures.process import BrokenProcessPool

        futures: set[Any] = set()
        if refused:
            return futures
        batches = [b for b in (list(itertools.islice(queue, size)) for _ in range(n)) if b]
        for b in batches:
            try:
                future = executor.submit(_call_batch, fn, b)
            except BrokenProcessPool as exc:   # loky's TerminatedWorkerError is one
                refused.append((exc, b))
                break
            held[future] = b
            futures.add(future)
        return futures

    def _result(future: Any) -> tuple[list[R], float]:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except BrokenProcessPool as exc:   # loky's TerminatedWorkerError is one
            raise WorkerLostError(_lost_reason(exc), held.get(future, ())) from None
        finally:
            held.pop(future, None)

    pending = submit(2 * workers)
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            # the completed ones first: a lost worker's future then ends the run after they are yielded (kept)
            for future in sorted(done, key=lambda f: f.exception() is not None):
                results, seconds = _result(future)
                if seconds < 0.2:
                    size = min(2 * size, max_size)
                yield from results
            pending |= submit(len(done))
        if refused:     # every future in flight finished: none named the loss, so name what was refused
            exc, batch = refused[0]
            raise WorkerLostError(_lost_reason(exc), batch)
    except BaseException:
        # Ctrl-C (or an error): stop the worker processes now, so none is left to die noisily at exit.
        # loky's manager thread can trip over its own bookkeeping while it is killed; that is noise.
        with _quiet_thread_errors("ExecutorManagerThread"):
            executor.shutdown(wait=True, kill_workers=True)
        raise


def _lost_reason(exc: BaseException) -> str:
    """How a worker died, in words, from loky's message (its exit codes and the signal's name)."""
    text = str(exc)
    for name, why in (("SIGKILL", "killed by SIGKILL: out of memory, or a kill -9"),
                      ("SIGSEGV", "crashed with SIGSEGV: a segmentation fault in native code"),
                      ("SIGABRT", "aborted (SIGABRT) by native code"), ("SIGBUS", "crashed with SIGBUS")):
        if name in text:
            return why
    return "it exited unexpectedly (a crash in native code, os._exit, or the system stopped it)"


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
            check_reachable(address, what="Dask scheduler", variable="REPRO_DASK_SCHEDULER", default_port=8786)
            try:
                client = distributed.Client(address, timeout=cluster_timeout())
            except (OSError, TimeoutError) as exc:
                raise ClusterUnreachableError(
                    f"cannot connect to the Dask scheduler at {address} (REPRO_DASK_SCHEDULER) within "
                    f"{cluster_timeout():g} s ({type(exc).__name__}); start it, fix REPRO_DASK_SCHEDULER, or "
                    "unset it to run on a local cluster") from None
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
            check_reachable(address, what="Ray cluster", variable="REPRO_RAY_ADDRESS", default_port=6379)
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
