"""Who may use the app: on a loopback address anyone on this machine; elsewhere only people the
operator authenticates (Streamlit's ``st.login`` or a reverse proxy that logs people in).

Bound to a non-loopback address, the app can start jobs and read the lab's folders for anyone
who reaches it, so it serves nothing until one of these is set up:

- ``[auth]`` in ``.streamlit/secrets.toml`` (an OpenID Connect provider): people log in with
  ``st.login`` before any page runs;
- ``LEAKAGE_LAB_PROXY_AUTH=1``: the operator states that a reverse proxy in front of the app
  authenticates every request (and only the proxy can reach the app's port).

``page_guard`` is the last resort around a page's script: an exception no page handled is one
short line on the page (no traceback, no server path) and the traceback in the server's log.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from core.errors import UserError
from ui.text import plain

PROXY_AUTH_ENV = "LEAKAGE_LAB_PROXY_AUTH"
LOOPBACK_NAMES = ("localhost",)
PAGE_FAILED = "Something went wrong on this page: {line}. Details are in the server log."
# an absolute path (/a/b, ~/a, C:\\a): shown by its last part only
_PATH = re.compile(r"(?<![\w.:/~])(?:~|[A-Za-z]:)?(?:[\\/][^\s\\/'\"]+)+[\\/]?")
_log = logging.getLogger(__name__)

REFUSAL = (
    "Leakage Lab is listening on {address}, which other machines can reach, and no "
    "authentication is set up, so it serves nothing. Either bind it to this machine only "
    "(`--server.address 127.0.0.1`, the default in .streamlit/config.toml), or add "
    "authentication: an `[auth]` section in .streamlit/secrets.toml (Streamlit's `st.login`, "
    "OpenID Connect), or a reverse proxy that logs people in, started with "
    f"{PROXY_AUTH_ENV}=1. The operator's guide, docs/operations.md (Security), says how."
)


def is_loopback(address: str | None) -> bool:
    """Whether a ``server.address`` value binds only this machine (unset binds every interface)."""
    if not address:
        return False
    if address.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _login_configured() -> bool:
    try:
        return "auth" in st.secrets
    except (FileNotFoundError, OSError, ValueError):  # no secrets file, or one that does not parse
        return False


def require_access() -> None:
    """Stop the script run (after saying why) unless this session may use the app."""
    address = st.get_option("server.address")
    if is_loopback(address) or os.environ.get(PROXY_AUTH_ENV) == "1":
        return
    if not _login_configured():
        st.error(REFUSAL.format(address=address or "every network interface"))
        st.stop()
    if not st.user.is_logged_in:
        st.title("Leakage Lab")
        st.button("Log in", on_click=st.login, type="primary")
        st.stop()


def short_line(err: BaseException, limit: int = 200) -> str:
    """``err`` as one short line without server paths: its message (with its type unless it is
    a ``UserError``), each absolute path cut to its last part."""
    text = " ".join(str(err).split())
    if not isinstance(err, UserError):
        text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    text = _PATH.sub(lambda m: re.split(r"[\\/]", m.group().rstrip("\\/"))[-1], text)
    return (text if len(text) <= limit else text[:limit - 1] + "…").rstrip(".")


@contextmanager
def page_guard(page: str) -> Iterator[None]:
    """Run a page's script (the block) so that an exception it raises is a short error on the
    page and its traceback goes to the server's log; ``st.stop`` and reruns pass through."""
    try:
        yield
    except Exception as err:   # the last resort: whatever no page handled
        _log.error("the page %s failed", page, exc_info=err)
        st.error(plain(PAGE_FAILED.format(line=short_line(err))))
