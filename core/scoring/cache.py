"""Where the engine keeps scores: ``SequenceScores`` in a bounded in-memory LRU keyed by (model
load, context, window, stride, sampler, tokens), which consults a disk cache shared by every
process of this lab home, so a command run again (a new process) reuses its scores.

A disk entry is keyed by the SHA-256 of everything its numbers depend on: the model's identity
(``core.models.loaders.source_identity``, taken when it was loaded: where its weight, config and
tokenizer files lie and the fingerprint of their contents, ``core.fingerprint``), its dtype and
device type, the context token, window, stride, sampler and token ids. New weights written at
the same path are another identity, so their old scores are never served. Only a model loaded
from files (``core.models.load_model`` sets its ``identity``) is cached on disk: a model built
or changed in memory has no file that names its weights.

The entries live in ``home()/cache/scores/scores.sqlite`` (a private folder): SQLite in WAL
mode, so each write is one atomic transaction and processes share the file safely. It is
bounded by ``$LEAKAGE_LAB_SCORE_CACHE_MB`` (default 1024; 0 turns the disk cache off): when its
entries' bytes pass it, the least recently used are pruned (SQLite's pages add some slack).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core import paths
from core.errors import UserError

CACHE_MAX_TOKENS = 4_000_000
BUDGET_ENV = "LEAKAGE_LAB_SCORE_CACHE_MB"
DEFAULT_BUDGET_MB = 1024
MAX_BUDGET_MB = 1_000_000
FORMAT = b"leakage-lab scores v1"  # change it when the meaning of a stored score changes
PRUNE_TO = 0.75  # a full disk cache is pruned to this fraction of its budget
SQL_BATCH = 500  # keys per query (SQLite allows 32,766 parameters)
SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (key BLOB PRIMARY KEY, logprobs BLOB NOT NULL,
                                   used REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS scores_by_use ON scores (used);
CREATE TABLE IF NOT EXISTS size (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO size VALUES (0, 0);
"""
ENTRY_OVERHEAD = 128  # bytes an entry takes besides its log-probabilities: key, time, index
_log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class SequenceScores:
    """Scores of one sequence: ``logprobs[j]`` is log p(token_ids[first_scored + j] | all before).

    ``token_ids`` (int64) are the sequence's own tokens, without the prepended context token;
    ``logprobs`` (float32, read-only) has ``len(token_ids) - first_scored`` entries.
    """

    token_ids: np.ndarray
    logprobs: np.ndarray
    first_scored: int
    text: str | None = None

    @property
    def n_scored(self) -> int:
        return len(self.logprobs)

    @property
    def total_logprob(self) -> float:
        """log of the probability of the scored tokens (−inf when a sampler gives it 0)."""
        return float(self.logprobs.sum(dtype=np.float64))

    @property
    def perplexity(self) -> float:
        """exp(−mean log-prob) over the scored tokens (nan when none is scored)."""
        return math.exp(-self.total_logprob / self.n_scored) if self.n_scored else math.nan


class ScoreCache:
    """An LRU map from a scoring key to ``SequenceScores``, bounded by the tokens it holds."""

    def __init__(self, max_tokens: int = CACHE_MAX_TOKENS):
        self.max_tokens = max_tokens
        self._entries: OrderedDict[tuple, SequenceScores] = OrderedDict()
        self._tokens = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> SequenceScores | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: tuple, value: SequenceScores) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self._tokens += len(value.token_ids) + 1
            while self._tokens > self.max_tokens and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                self._tokens -= len(old.token_ids) + 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._tokens = 0

    def __len__(self) -> int:
        return len(self._entries)


CACHE = ScoreCache()


def disk_budget() -> int:
    """Bytes the disk cache may take: ``$LEAKAGE_LAB_SCORE_CACHE_MB`` megabytes (0: no disk cache)."""
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if not raw:
        return DEFAULT_BUDGET_MB * 2**20
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = math.nan
    if not 0 <= megabytes <= MAX_BUDGET_MB:
        raise UserError(f"{BUDGET_ENV} must be a number of megabytes from 0 (no disk cache) to "
                        f"{MAX_BUDGET_MB:,}, not {raw!r}")
    return int(megabytes * 2**20)


def _database_file() -> Path:
    return paths.home() / "cache" / "scores" / "scores.sqlite"


_ready: set[Path] = set()  # database files this process has set up


@contextmanager
def _database() -> Iterator[sqlite3.Connection]:
    """The disk cache (created in a private folder on first use), in one write transaction."""
    path = _database_file()
    if not path.exists():
        _ready.discard(path)
        for folder in (path.parent.parent, path.parent):
            folder.mkdir(mode=0o700, exist_ok=True)
            os.chmod(folder, 0o700)
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        if path not in _ready:
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect on a new file only
            db.execute("PRAGMA journal_mode = WAL")  # kept by the file
            db.executescript(SCHEMA)
            _ready.add(path)
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("BEGIN IMMEDIATE")  # a writer from the start: no lock upgrade to fail
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    finally:
        db.close()


@contextmanager
def _best_effort(what: str) -> Iterator[None]:
    """A disk cache that cannot be used (read-only home, full disk, damaged file) only costs
    time: scoring goes on without it, with a warning."""
    try:
        yield
    except (sqlite3.Error, OSError) as err:
        _log.warning("score cache on disk: could not %s (%s); scoring without it", what, err)


def model_fingerprint(lm) -> str | None:
    """SHA-256 of ``lm``'s identity (its files' fingerprint when it was loaded), dtype and device
    type; None when it has no identity (not loaded from files) or the disk cache is off."""
    identity = getattr(lm, "identity", "")
    if not identity or not disk_budget():
        return None
    dtype = next(lm.model.parameters()).dtype
    return hashlib.sha256(FORMAT + f"|{identity}|{dtype}|{lm.device.type}".encode()).hexdigest()


def _disk_get(keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
    """The stored log-probabilities of ``keys`` (those found), marked as just used."""
    found: dict[bytes, np.ndarray] = {}
    with _best_effort("read scores"), _database() as db:
        for start in range(0, len(keys), SQL_BATCH):
            batch = keys[start:start + SQL_BATCH]
            marks = ",".join("?" * len(batch))
            rows = db.execute(f"SELECT key, logprobs FROM scores WHERE key IN ({marks})", batch)
            found |= {key: np.frombuffer(blob, dtype=np.float32) for key, blob in rows}
            db.execute(f"UPDATE scores SET used = ? WHERE key IN ({marks})", (time.time(), *batch))
    return found


def _disk_put(entries: dict[bytes, np.ndarray]) -> None:
    """Store ``entries`` in one transaction, keeping count of the bytes stored, and prune to
    the budget."""
    now, added = time.time(), 0
    with _best_effort("write scores"), _database() as db:
        for key, logprobs in entries.items():
            blob = logprobs.astype(np.float32).tobytes()
            if db.execute("INSERT OR IGNORE INTO scores VALUES (?, ?, ?)", (key, blob, now)).rowcount:
                added += len(blob) + ENTRY_OVERHEAD
        db.execute("UPDATE size SET bytes = bytes + ?", (added,))
        _prune(db, disk_budget())


def _prune(db: sqlite3.Connection, budget: int) -> None:
    """Past ``budget``, keep only the most recently used entries that fit ``PRUNE_TO`` of it
    (so that pruning is rare), and give the freed pages back."""
    if db.execute("SELECT bytes FROM size").fetchone()[0] <= budget:
        return
    cost = f"length(logprobs) + {ENTRY_OVERHEAD}"
    db.execute(f"""DELETE FROM scores WHERE key IN (SELECT key FROM (
                       SELECT key, SUM({cost}) OVER (ORDER BY used DESC, key) AS upto FROM scores)
                   WHERE upto > ?)""", (int(PRUNE_TO * budget),))
    db.execute(f"UPDATE size SET bytes = (SELECT COALESCE(SUM({cost}), 0) FROM scores)")
    db.execute("PRAGMA incremental_vacuum")


class ScoreStore:
    """Both caches as one scoring call sees them: memory first, then disk. ``put`` fills the
    memory at once and the disk at ``flush`` (one transaction per call)."""

    def __init__(self, lm, context: tuple[int, ...], window: int, stride: int, first_scored: int):
        self.memory_prefix = (lm.key, context, window, stride)
        fingerprint = model_fingerprint(lm)
        self.disk_prefix = (None if fingerprint is None
                            else f"{fingerprint}|{context}|{window}|{stride}|".encode())
        self.first_scored = first_scored
        self.unwritten: dict[bytes, np.ndarray] = {}

    def _disk_key(self, sampler, token_ids: np.ndarray) -> bytes:
        return hashlib.sha256(self.disk_prefix + f"{sampler!r}|".encode() + token_ids.tobytes()).digest()

    def lookup(self, sampler, arrays: Sequence[np.ndarray]) -> list[SequenceScores | None]:
        """The cached scores of each token array under ``sampler`` (None where there are none)."""
        found = [CACHE.get((*self.memory_prefix, sampler, a.tobytes())) for a in arrays]
        missing = [i for i, hit in enumerate(found) if hit is None]
        if self.disk_prefix is None or not missing:
            return found
        keys = {i: self._disk_key(sampler, arrays[i]) for i in missing}
        stored = _disk_get(list(dict.fromkeys(keys.values())))
        for i, key in keys.items():
            logprobs = stored.get(key)
            if logprobs is not None and len(logprobs) == len(arrays[i]) - self.first_scored:
                found[i] = self.put(sampler, arrays[i], logprobs, to_disk=False)
        return found

    def put(self, sampler, token_ids: np.ndarray, logprobs: np.ndarray, *,
            to_disk: bool = True) -> SequenceScores:
        """Cache the scores of ``token_ids`` under ``sampler``; returns them (read-only arrays)."""
        token_ids, logprobs = token_ids.copy(), logprobs.astype(np.float32)
        logprobs.flags.writeable = token_ids.flags.writeable = False
        scores = SequenceScores(token_ids, logprobs, self.first_scored)
        CACHE.put((*self.memory_prefix, sampler, token_ids.tobytes()), scores)
        if to_disk and self.disk_prefix is not None:
            self.unwritten[self._disk_key(sampler, token_ids)] = logprobs
        return scores

    def flush(self) -> None:
        """Write the scores put since the last flush to disk."""
        if self.unwritten:
            _disk_put(self.unwritten)
            self.unwritten = {}


def clear_cache() -> None:
    """Forget every cached score, in memory and on disk under this lab home (e.g. after a model
    was changed in place)."""
    CACHE.clear()
    if _database_file().is_file():
        with _best_effort("clear scores"), _database() as db:
            db.execute("DELETE FROM scores")
            db.execute("UPDATE size SET bytes = 0")
            db.execute("PRAGMA incremental_vacuum")
