"""Background jobs: run a spec's config off the caller's thread, recording it in the store.

::

    run_id = submit(spec, config)   # stored as kind spec.name, params = the config as JSON
    cancel(run_id)                  # asks the job (of any process) to stop; it returns its
                                    # best result so far
    get_runner().wait(run_id)       # -> the finished ``Run``
    result = run_now(spec, config)  # the same in this thread (the CLI), recorded unless told not

``progress(fraction, message="", partial=None)`` and ``cancel`` (a ``threading.Event``) are
those of ``core.runtime``. Progress is written to the store at most every 0.5 s (the
last report always). A job whose ``fn`` returns after ``cancel`` was set is stored as
``cancelled`` with that result; one that raises ``Cancelled`` keeps its last partial
snapshot. Either way its progress stays at the last fraction reported before the cancel
(reports after it, e.g. a closing ``progress(1.0)``, change only the message). Jobs with
``uses_gpu=True`` run one at a time per process, in the order submitted (the others wait as
``queued``, their message saying so); ``submit`` decides it from where the job's models are or
will be (``core.jobs.gpu``). At most ``LEAKAGE_LAB_MAX_JOBS`` (default 2) background jobs run at
once per process; the others wait as ``queued``, their message giving their place in line
(``core.jobs.slots``); the runs a job records within itself take no slot of their own. (A page
refuses a job estimated above the operator's budget before it submits it: ``ui.jobs.start_job``,
``core.cost.job_budget``.) A run is cancelled from another process through the store's flag
(``Store.request_cancel``), which the process running it polls every 0.5 s.

A run scores on Ray as ``scale_out`` says (a page job's setting), else as the caller's
``core.scaleout`` setting does (the CLI's ``--ray``, or the run a part belongs to); the store
keeps where its scoring went (``Run.placement``: workers and shards), None in process.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from functools import partial
from typing import Any, Callable

from core import paths, scaleout
from core.errors import NotApplicable, UserError
from core.jobs.gpu import job_uses_gpu
from core.jobs.slots import JobSlots, max_jobs
from core.jobs.store import Run, Store, get_store
from core.runtime import Cancelled, Progress, print_progress
from core.specs import AttackSpec

JobFn = Callable[[Callable[..., None], threading.Event], Any]

REPORT_EVERY_S = 0.5
CANCEL_POLL_S = 0.5
GPU_WAIT_MESSAGE = "waiting for the GPU: another run is using it (GPU runs go one at a time)"
# The run whose job this thread is executing: the parent of the runs it records (run_recorded).
_RUNNING: ContextVar[int | None] = ContextVar("running_run", default=None)
# False within ``run_now(record=False)``: the runs it would record (run_recorded) are not either.
_RECORDING: ContextVar[bool] = ContextVar("recording", default=True)


class _Reporter:
    """The ``progress`` callback handed to a job: writes to the store, throttled.

    Once ``cancel`` is set the fraction stays at ``self.fraction``, the last one reported
    before: a job that winds up after a cancel does not read as finished."""

    def __init__(self, store: Store, run_id: int, cancel: threading.Event,
                 every_s: float = REPORT_EVERY_S, echo: Progress | None = None):
        self.store, self.run_id, self.cancel = store, run_id, cancel
        self.every_s, self.echo = every_s, echo
        self.fraction = 0.0
        self._last_write = float("-inf")
        self._pending: tuple[float, str, Any] | None = None

    def __call__(self, fraction: float, message: str = "", partial: Any = None) -> None:
        if self.cancel.is_set():
            fraction = self.fraction
        else:
            self.fraction = fraction
        if self.echo is not None:
            self.echo(fraction, message)
        # A partial snapshot not yet written is kept until a newer one replaces it.
        if self._pending is not None and partial is None:
            partial = self._pending[2]
        self._pending = (fraction, message, partial)
        if time.monotonic() - self._last_write >= self.every_s:
            self.flush()

    def flush(self) -> None:
        if self._pending is not None:
            self.store.report(self.run_id, *self._pending)
            self._pending = None
            self._last_write = time.monotonic()


def describe_error(err: BaseException) -> str:
    """The text stored for a failed job: a ``UserError`` as is, else type, message, traceback."""
    if isinstance(err, UserError):
        return str(err)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(err, torch.cuda.OutOfMemoryError):
        return "out of GPU memory: lower the batch size or pick CPU"
    tail = "".join(traceback.format_exception(err, limit=-4))
    return f"{type(err).__name__}: {err}\n\n{tail}"


@contextmanager
def _cancel_watch(store: Store, run_id: int, cancel: threading.Event):
    """While the block runs, a thread sets ``cancel`` once another process has asked the store
    to cancel run ``run_id`` (polled every ``CANCEL_POLL_S``: one indexed read)."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(CANCEL_POLL_S):
            if store.is_cancel_requested(run_id):
                cancel.set()
                return

    watcher = threading.Thread(target=watch, name=f"cancel-watch-{run_id}", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _execute(store: Store, run_id: int, fn: JobFn, cancel: threading.Event,
             echo: Progress | None = None, scale_out: scaleout.ScaleOut | None = None) -> Any:
    """Run ``fn``, scoring on Ray as ``scale_out`` says, and record its progress (also sent to
    ``echo``), outcome and placement in run ``run_id``; failures re-raise."""
    with scaleout.using(scale_out) as placement:
        store.start(run_id, placement=placement)
        progress = _Reporter(store, run_id, cancel, echo=echo)
        end = partial(_end, store, run_id, progress, placement)
        running = _RUNNING.set(run_id)
        try:
            result = fn(progress, cancel)
        except Cancelled:
            end("cancelled", message="cancelled")
            raise
        except NotApplicable as err:   # not a failure: the run says why there was nothing to do
            end("did not apply", error=str(err))
            raise
        except Exception as err:
            end("failed", error=describe_error(err))
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit: stopped from outside
            end("interrupted", message="interrupted")
            raise
        finally:
            _RUNNING.reset(running)
        if cancel.is_set():
            end("cancelled", result=result, message="stopped early")
        else:
            end("done", result=result)
    return result


def _end(store: Store, run_id: int, progress: _Reporter, placement: scaleout.Placement | None,
         status: str, **outcome: Any) -> None:
    """Write the last progress, then the outcome with where the scoring went."""
    progress.flush()
    store.finish(run_id, status, placement=placement, **outcome)


class Runner:
    """Runs jobs on threads: at most ``max_jobs()`` at once (``core.jobs.slots``), one GPU job
    at a time. Use the process-wide ``get_runner()``."""

    def __init__(self) -> None:
        self._gpu = JobSlots(limit=lambda: 1, describe=lambda *_: GPU_WAIT_MESSAGE)
        self._slots = JobSlots()
        self._lock = threading.Lock()
        self._jobs: dict[tuple[str, int], tuple[threading.Thread, threading.Event]] = {}

    def submit(self, kind: str, params: Any, fn: JobFn, *, title: str | None = None,
               uses_gpu: bool = False, scale_out: scaleout.ScaleOut | None = None,
               store: Store | None = None, estimate_s: float | None = None) -> int:
        """Record a queued run of ``kind`` (``estimate_s``: its estimate before Run, for the
        first ETA) and start ``fn`` on a thread (scoring on Ray as ``scale_out`` says); returns
        the run id. A bad ``LEAKAGE_LAB_MAX_JOBS`` refuses it."""
        store = store or get_store()
        max_jobs()
        run_id = store.create(kind, params, title=title, estimate_s=estimate_s)
        cancel = threading.Event()
        # in line in the order of submits: a GPU job for the GPU, any other for a slot
        ticket = self._gpu.join() if uses_gpu else self._slots.join()
        work = partial(self._work, store, run_id, fn, cancel, uses_gpu, scale_out, ticket)
        thread = threading.Thread(target=work, name=f"job-{kind}-{run_id}", daemon=True)
        with self._lock:
            self._jobs[(str(store.path), run_id)] = (thread, cancel)
        thread.start()
        return run_id

    def _work(self, store: Store, run_id: int, fn: JobFn, cancel: threading.Event,
              uses_gpu: bool, scale_out: scaleout.ScaleOut | None, ticket: object) -> None:
        """The job's thread: a GPU job waits at ``ticket``'s place in the GPU's line, then joins
        the line of jobs once it has the GPU; any other waits at ``ticket``'s place in that
        line (``core.jobs.slots``); then the job. A run that ends while still queued is
        recorded here."""
        waiting = partial(store.report, run_id, 0.0)
        line = self._gpu if uses_gpu else self._slots
        gpu = line.held(cancel, on_wait=waiting, ticket=ticket) if uses_gpu else nullcontext()
        try:
            with _cancel_watch(store, run_id, cancel), gpu, \
                    self._slots.held(cancel, on_wait=waiting, ticket=None if uses_gpu else ticket):
                _execute(store, run_id, fn, cancel, scale_out=scale_out)
        except Cancelled:
            if store.get(run_id).status == "queued":  # cancelled while waiting in line
                store.finish(run_id, "cancelled", message="cancelled before it started")
        except BaseException as err:  # a started run's outcome is already recorded by _execute
            if store.get(run_id).status == "queued":
                store.finish(run_id, "failed", error=describe_error(err))
        finally:
            line.leave(ticket)   # never left in line, whatever stopped it
            with self._lock:
                self._jobs.pop((str(store.path), run_id), None)

    def cancel(self, run_id: int, store: Store | None = None) -> bool:
        """Ask a job of this process to stop; False if it is not running here."""
        store = store or get_store()
        with self._lock:
            job = self._jobs.get((str(store.path), run_id))
        if job is None:
            return False
        job[1].set()
        self._gpu.wake()     # a job waiting in either line stops at once
        self._slots.wake()
        return True

    def wait(self, run_id: int, timeout: float | None = None, store: Store | None = None) -> Run:
        """Block until the job ends (or ``timeout`` s pass) and return its stored run."""
        store = store or get_store()
        with self._lock:
            job = self._jobs.get((str(store.path), run_id))
        if job is not None:
            job[0].join(timeout)
        return store.get(run_id)


_runner: Runner | None = None
_runner_lock = threading.Lock()


def get_runner() -> Runner:
    """The process-wide runner, shared by every Streamlit session and rerun."""
    global _runner
    with _runner_lock:
        if _runner is None:
            _runner = Runner()
        return _runner


def _job(spec: AttackSpec, config: Any, confined: bool = False) -> JobFn:
    """The job's function; ``confined`` work reads only the lab's folders (``core.paths``)."""
    def job(progress, cancel):
        with paths.confined() if confined else nullcontext():
            return spec.run(config, progress=progress, cancel=cancel)
    return job


def _title(spec: AttackSpec, config: Any, title: str | None) -> str | None:
    return title or (spec.describe(config) if spec.describe else None)


def submit(spec: AttackSpec, config: Any, *, title: str | None = None,
           confined: bool = False, scale_out: scaleout.ScaleOut | None = None,
           estimate_s: float | None = None) -> int:
    """Start ``spec.run(config)`` as a background job of kind ``spec.name``; returns the run id.

    It waits for the GPU when its models are or will be there (``job_uses_gpu``); ``confined``
    (work a page started) reads files only inside the lab's folders; ``scale_out`` scores on Ray
    workers; ``estimate_s`` (the estimate before Run) gives the ETA of its first percents."""
    if not isinstance(config, spec.config_type):
        raise TypeError(f"{spec.name} takes a {spec.config_type.__name__}, not {type(config)}")
    return get_runner().submit(spec.name, config, _job(spec, config, confined),
                               title=_title(spec, config, title),
                               uses_gpu=job_uses_gpu(spec, config), scale_out=scale_out,
                               estimate_s=estimate_s)


def cancel(run_id: int) -> bool:
    """Ask run ``run_id`` to stop: at once if it runs in this process, else through the store,
    whose flag the process running it polls. The flag is set either way, so that every page
    showing the run says it is cancelling until it has stopped. False if the run has already
    finished; a ``UserError`` if there is no such run."""
    here = get_runner().cancel(run_id)
    return get_store().request_cancel(run_id) or here


def run_recorded(spec: AttackSpec, config: Any, *, progress: Progress,
                 cancel: threading.Event, title: str | None = None,
                 created: Callable[[int], None] = lambda run_id: None) -> Any:
    """``spec.run(config)`` in this thread as a run of its own, a part of the run this thread
    executes, for a job that runs other specs (the audit); its result. It scores where that run
    does (``scaleout.current()``). Its run id goes to ``created`` before it starts, so a caller
    keeps it when it fails. Progress goes to the store and to ``progress``; a cancel or a
    failure is recorded, then raised; a cancel asked of the part (``cancel(run_id)``) stops the
    whole job, as a cancel of the job does. Within ``run_now(record=False)`` nothing is
    recorded."""
    if not _RECORDING.get():
        return spec.run(config, progress=progress, cancel=cancel)
    store = get_store()
    run_id = store.create(spec.name, config, title=_title(spec, config, title), parent=_RUNNING.get())
    created(run_id)
    with _cancel_watch(store, run_id, cancel):   # a cancel of the part stops the whole
        return _execute(store, run_id, _job(spec, config), cancel, echo=progress,
                        scale_out=scaleout.current())


def run_now(spec: AttackSpec, config: Any, *, record: bool = True,
            progress: Progress = print_progress, title: str | None = None) -> Any:
    """Run ``spec.run(config)`` in this thread and return its result (errors propagate); it
    scores where the caller's ``core.scaleout`` setting says (the CLI's ``--ray``).

    With ``record`` the run is stored like a background job (Ctrl-C leaves it ``interrupted``
    with its partial results; ``runs cancel`` from another process stops it, and a run stopped
    before it had a result is a ``UserError``); progress goes to ``progress`` as well.
    """
    cancel_event = threading.Event()
    if not record:
        unrecorded = _RECORDING.set(False)
        try:
            return spec.run(config, progress=progress, cancel=cancel_event)
        finally:
            _RECORDING.reset(unrecorded)
    store = get_store()
    run_id = store.create(spec.name, config, title=_title(spec, config, title))
    try:
        with _cancel_watch(store, run_id, cancel_event):
            return _execute(store, run_id, _job(spec, config), cancel_event, echo=progress,
                            scale_out=scaleout.current())
    except Cancelled:
        raise UserError(f"run {run_id} was cancelled before it had a result "
                        "(its partial results are kept: `python -m core runs show "
                        f"{run_id}`)") from None
