"""The results store: every job's parameters, progress and result in one SQLite file.

The file is ``core.paths.home()/runs.sqlite`` in WAL mode, so the app's page threads, its job
threads and a CLI process can read while a job writes. Every write is its own short
transaction on a fresh connection (``sqlite3`` connections are not shared across threads).

A run is ``queued`` -> ``running`` -> one of ``done``, ``failed``, ``cancelled`` or
``interrupted``. Each active run records the process that owns it; that process holds an
exclusive ``flock`` on a small owner file for as long as it lives. Opening the store marks
the active runs of owners that no longer hold their lock (the process died: killed, server
restarted) as ``interrupted``, keeping their partial results; so do listing the runs and
reading an active one, for a store kept open (``get_store``: one per database file). Any
process may ask an active run to stop (``request_cancel``); the process running it polls that
flag (``core.jobs.runner``). ``summaries`` lists runs without reading their parameters, result
or partial snapshot; ``get`` reads one run whole.

Values are stored as JSON made by ``core.serialize.to_jsonable`` (values JSON cannot hold
are written as text).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from core import paths
from core.errors import UserError
from core.jobs.owners import claim_owner, owner_alive
from core.serialize import to_jsonable

ACTIVE = ("queued", "running")
# "did not apply": the attack had nothing to do on its inputs (``NotApplicable``), with why
FINISHED = ("done", "failed", "cancelled", "interrupted", "did not apply")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    kind     TEXT NOT NULL,             -- what ran, e.g. an attack name
    title    TEXT NOT NULL,
    params   TEXT NOT NULL,             -- JSON
    status   TEXT NOT NULL,             -- queued, running, then one of FINISHED
    progress REAL NOT NULL DEFAULT 0,   -- fraction in [0, 1]
    message  TEXT NOT NULL DEFAULT '',
    created  REAL NOT NULL,             -- unix seconds
    started  REAL,
    finished REAL,
    error    TEXT,
    result   TEXT,                      -- JSON
    partial  TEXT,                      -- JSON: the last snapshot reported while running
    owner    TEXT NOT NULL DEFAULT '',  -- token of the process running it
    cancel_requested INTEGER NOT NULL DEFAULT 0,  -- 1: asked to stop (by any process)
    reported REAL                       -- unix seconds of the last progress report
);
CREATE INDEX IF NOT EXISTS runs_by_kind ON runs (kind, id);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, owner);
"""
# Columns added after the first release: (name, definition), added to older stores on open.
# parent: the run whose job ran this one as a part of it (an audit's attacks, a series' audits);
# placement: JSON, where its scoring ran when not in process (``core.scaleout.Placement``).
# estimate_s: the seconds its estimate before Run gave (a page job's), for an ETA from the start.
_ADDED_COLUMNS = (("cancel_requested", "INTEGER NOT NULL DEFAULT 0"), ("reported", "REAL"),
                  ("parent", "INTEGER"), ("placement", "TEXT"), ("estimate_s", "REAL"))
# What a listing reads, in the order of RunSummary's fields: every column but params, error,
# result, partial, owner and the flag, all from one covering index, so a listing never touches
# the rows' (large) JSON pages.
_SUMMARY_COLUMNS = ("id, kind, title, status, progress, message, created, started, finished, "
                    "reported, parent, estimate_s, placement")
_LISTING_INDEX = f"CREATE INDEX IF NOT EXISTS runs_listing2 ON runs ({_SUMMARY_COLUMNS})"
_OLD_INDEXES = ("runs_listing",)   # listings of older versions' columns
EARLY = 0.05   # below this fraction done, a run with an estimate counts its ETA down from it


def _dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), allow_nan=False, default=str)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunSummary:
    """A run as a listing shows it: no parameters, result, partial snapshot or error."""

    id: int
    kind: str
    title: str
    status: str
    progress: float
    message: str
    created: float
    started: float | None
    finished: float | None
    reported: float | None = None   # when progress was last reported
    parent: int | None = None       # the run this one is a part of
    estimate_s: float | None = None  # its estimate before Run, in seconds (a page job's)
    placement: dict | None = None   # where its scoring ran, when not in process

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to finish (to now while running)."""
        if self.started is None:
            return None
        return (self.finished or time.time()) - self.started

    @property
    def eta_s(self) -> float | None:
        """Remaining seconds by linear extrapolation at the last report, t · (1 − f) / f with t
        the seconds from start to that report, minus the seconds since: it counts down while
        the bar stands still, never up (0 once overdue). Until ``EARLY`` of the bar, a run with
        an estimate before Run counts down from it instead (a bar at 0% extrapolates nothing,
        and its first percents little)."""
        if self.status != "running" or self.started is None:
            return None
        if self.progress < EARLY and self.estimate_s is not None:
            return max(0.0, self.estimate_s - (time.time() - self.started))
        if self.progress <= 0:
            return None
        reported = self.reported or time.time()
        left = (reported - self.started) * (1 - self.progress) / self.progress
        return max(0.0, left - (time.time() - reported))

    def summary(self) -> dict:
        """The fields of a listing: no params, result or partial."""
        duration = self.duration_s
        return {"id": self.id, "kind": self.kind, "title": self.title, "status": self.status,
                "progress": self.progress, "created": _iso(self.created),
                "duration_s": None if duration is None else round(duration, 3),
                "parent": self.parent, "placement": self.placement}


@dataclass(frozen=True)
class Run(RunSummary):
    """One row of the store, with its JSON columns decoded."""

    params: Any = None
    error: str | None = None
    result: Any = None
    partial: Any = None
    cancel_requested: bool = False

    def to_dict(self) -> dict:
        """Everything, as exported to JSON."""
        return {**self.summary(), "message": self.message, "started": _iso(self.started),
                "finished": _iso(self.finished), "error": self.error, "params": self.params,
                "result": self.result, "partial": self.partial}


class Store:
    """The runs table of one SQLite file (default ``home()/runs.sqlite``)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else paths.home() / "runs.sqlite"
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            _add_missing_columns(db)
            for name in _OLD_INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")
            db.execute(_LISTING_INDEX)
        self._mark_orphans_interrupted()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection whose statements commit together when the block ends."""
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        try:
            with db:
                db.execute("PRAGMA synchronous=NORMAL")
                yield db
        finally:
            db.close()

    def _update(self, run_id: int, **columns: Any) -> None:
        sets = ", ".join(f"{name} = ?" for name in columns)
        with self._connect() as db:
            db.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*columns.values(), run_id))

    def _mark_orphans_interrupted(self) -> None:
        """Mark the active runs of processes that died ``interrupted`` (an indexed read)."""
        with self._connect() as db:
            owners = [r[0] for r in db.execute(
                "SELECT DISTINCT owner FROM runs WHERE status IN (?, ?)", ACTIVE)]
        for owner in owners:
            if not owner_alive(owner):
                with self._connect() as db:
                    db.execute(
                        "UPDATE runs SET status = 'interrupted', finished = ?, message = "
                        "'interrupted: the process running it stopped' "
                        "WHERE owner = ? AND status IN (?, ?)", (time.time(), owner, *ACTIVE))

    # -- writes (used by the job runner) ------------------------------------------------------

    def create(self, kind: str, params: Any, *, title: str | None = None,
               parent: int | None = None, estimate_s: float | None = None) -> int:
        """Record a new ``queued`` run owned by this process (a part of run ``parent``, if
        given; ``estimate_s``: its estimate before Run) and return its id."""
        params = to_jsonable(params)
        with self._connect() as db:
            cursor = db.execute(
                "INSERT INTO runs (kind, title, params, status, created, owner, parent, "
                "estimate_s) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)",
                (kind, title or default_title(kind, params), _dumps(params), time.time(),
                 claim_owner(), parent, estimate_s))
            return int(cursor.lastrowid)

    def start(self, run_id: int, *, placement: Any = None) -> None:
        """Mark the run running (on Ray, when ``placement`` says so)."""
        self._update(run_id, status="running", started=time.time(), message="",
                     placement=None if placement is None else _dumps(placement))

    def report(self, run_id: int, fraction: float, message: str = "", partial: Any = None) -> None:
        """Write progress; a ``partial`` snapshot, when given, replaces the previous one."""
        columns: dict[str, Any] = {"progress": min(max(float(fraction), 0.0), 1.0),
                                   "message": message, "reported": time.time()}
        if partial is not None:
            columns["partial"] = _dumps(partial)
        self._update(run_id, **columns)

    def finish(self, run_id: int, status: str, *, result: Any = None, error: str | None = None,
               message: str | None = None, placement: Any = None) -> None:
        """Write the outcome; the result, the final status and where the run's scoring went
        (``placement``, if given) commit in one transaction.

        The last progress message stays unless ``message`` is given.
        """
        if status not in FINISHED:
            raise ValueError(f"not a final status: {status!r}")
        columns = {"status": status, "finished": time.time(), "error": error}
        if message is not None:
            columns["message"] = message
        if result is not None:
            columns["result"] = _dumps(result)
        if placement is not None:
            columns["placement"] = _dumps(placement)
        if status == "done":
            columns["progress"] = 1.0
        self._update(run_id, **columns)

    def request_cancel(self, run_id: int) -> bool:
        """Ask the process running ``run_id`` (this one or another) to stop it: it polls the
        flag (``is_cancel_requested``). False if the run has already finished."""
        self.get(run_id)  # a UserError when there is no such run
        with self._connect() as db:
            cursor = db.execute("UPDATE runs SET cancel_requested = 1 "
                                "WHERE id = ? AND status IN (?, ?)", (run_id, *ACTIVE))
        return cursor.rowcount == 1

    def is_cancel_requested(self, run_id: int) -> bool:
        with self._connect() as db:
            row = db.execute("SELECT cancel_requested FROM runs WHERE id = ?",
                             (run_id,)).fetchone()
        return bool(row and row[0])

    def delete(self, run_id: int) -> None:
        """Remove a finished run (an active one must be cancelled first)."""
        run = self.get(run_id)
        if run.active:
            raise UserError(f"run {run_id} is still {run.status}: cancel it first")
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    # -- reads ---------------------------------------------------------------------------------

    def get(self, run_id: int) -> Run:
        """The run, whole (an active one of a process that died is marked interrupted first)."""
        row = self._row(run_id)
        if row["status"] in ACTIVE and not owner_alive(row["owner"]):
            self._mark_orphans_interrupted()
            row = self._row(run_id)
        return _run_from_row(row)

    def _row(self, run_id: int) -> sqlite3.Row:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise UserError(f"no run {run_id} in {self.path}: "
                            "`python -m core runs list` lists them")
        return row

    def runs(self, kind: str | None = None, *, limit: int | None = None) -> list[Run]:
        """Runs newest first, whole, optionally only those of one kind (a listing wants
        ``summaries``)."""
        with self._connect() as db:
            return [_run_from_row(row) for row in db.execute(*_listing("*", kind, limit))]

    def summaries(self, kind: str | None = None, *,
                  limit: int | None = None) -> list[RunSummary]:
        """What a listing shows of the runs, newest first, optionally only those of one kind:
        their parameters, results and partial snapshots are neither read nor decoded."""
        self._mark_orphans_interrupted()
        with self._connect() as db:
            rows = db.execute(*_listing(_SUMMARY_COLUMNS, kind, limit,
                                        source="runs INDEXED BY runs_listing2")).fetchall()
        return [RunSummary(*row[:-1], placement=_loads(row[-1])) for row in rows]

    def kinds(self) -> list[str]:
        with self._connect() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT kind FROM runs ORDER BY kind")]

    def latest(self, kind: str, status: str = "done", *, whole: bool = False) -> Run | None:
        """The newest run of ``kind`` with ``status``, if any; with ``whole``, only among runs
        that are not a part of another."""
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE kind = ? AND status = ? "
                             f"{'AND parent IS NULL ' if whole else ''}ORDER BY id DESC LIMIT 1",
                             (kind, status)).fetchone()
        return None if row is None else _run_from_row(row)


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Add the columns of ``_ADDED_COLUMNS`` to a store an older version created."""
    present = {row["name"] for row in db.execute("PRAGMA table_info(runs)")}
    for name, definition in (c for c in _ADDED_COLUMNS if c[0] not in present):
        try:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {definition}")
        except sqlite3.OperationalError as err:  # another process added it meanwhile
            if "duplicate column" not in str(err):
                raise


def _listing(columns: str, kind: str | None, limit: int | None,
             source: str = "runs") -> tuple[str, list]:
    """The query (and its arguments) of ``columns`` of the runs newest first."""
    query, args = f"SELECT {columns} FROM {source}", []
    if kind is not None:
        query, args = query + " WHERE kind = ?", [kind]
    query += " ORDER BY id DESC"
    if limit is not None:
        query, args = query + " LIMIT ?", [*args, limit]
    return query, args


def _run_from_row(row: sqlite3.Row) -> Run:
    values = dict(row)
    values.pop("owner")
    values["cancel_requested"] = bool(values["cancel_requested"])
    for name in ("params", "result", "partial", "placement"):
        values[name] = _loads(values[name])
    return Run(**values)


def default_title(kind: str, params: Any) -> str:
    """``kind (a=1, b=2, ...)`` from the scalar parameters, at most 80 characters."""
    if not isinstance(params, dict):
        return kind
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if isinstance(v, (str, int, float)))
    title = f"{kind} ({shown})" if shown else kind
    return title if len(title) <= 80 else title[:79] + "…"


_STORES: dict[Path, Store] = {}
_STORES_LOCK = threading.Lock()


def get_store(path: str | Path | None = None) -> Store:
    """The one ``Store`` of this process for the database at ``path`` (default
    ``home()/runs.sqlite``), keyed by its resolved path; opened again if its file was removed."""
    resolved = Path(path if path is not None else paths.home() / "runs.sqlite").resolve()
    with _STORES_LOCK:
        store = _STORES.get(resolved)
        if store is None or not resolved.exists():
            store = _STORES[resolved] = Store(resolved)
        return store
