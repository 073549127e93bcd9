"""Which process runs which job: each process that runs jobs holds an exclusive ``flock`` on
``<tmp>/leakage-lab-owners-<uid>/<token>`` for its lifetime, and the OS drops the lock when the
process dies, however it dies. (So the store is meant for one machine, as SQLite is.)"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import uuid
from pathlib import Path

_OWNER_DIR = Path(tempfile.gettempdir()) / f"leakage-lab-owners-{os.getuid()}"
_owner: tuple[int, str, int] | None = None  # (pid, token, fd of the locked owner file)
_owner_lock = threading.Lock()


def claim_owner() -> str:
    """This process's owner token, locking its owner file on first use (again after a fork)."""
    global _owner
    with _owner_lock:
        if _owner is None or _owner[0] != os.getpid():
            token = f"{os.getpid()}-{uuid.uuid4().hex}"
            _OWNER_DIR.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(_OWNER_DIR / token, os.O_CREAT | os.O_RDWR, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            _owner = (os.getpid(), token, fd)
        return _owner[1]


def owner_alive(token: str) -> bool:
    """Whether the process with this owner token (this one included) still holds its lock."""
    if not token or "/" in token:
        return False
    try:
        fd = os.open(_OWNER_DIR / token, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    (_OWNER_DIR / token).unlink(missing_ok=True)
    return False
