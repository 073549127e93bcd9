"""Who may use the app: on a loopback address anyone on this machine; elsewhere only people the
operator authenticates (Streamlit's ``st.login`` or a reverse proxy that logs people in).

Bound to a non-loopback address, the app can start jobs and read the lab's folders for anyone
who reaches it, so it serves nothing until one of these is set up:

- ``[auth]`` in ``.streamlit/secrets.toml`` (an OpenID Connect provider): people log in with
  ``st.login`` before any page runs;
- ``LEAKAGE_LAB_PROXY_AUTH=1``: the operator states that a reverse proxy in front of the app
  authenticates every request (and only the proxy can reach the app's port).
"""

from __future__ import annotations

import ipaddress
import os

import streamlit as st

PROXY_AUTH_ENV = "LEAKAGE_LAB_PROXY_AUTH"
LOOPBACK_NAMES = ("localhost",)

REFUSAL = (
    "Leakage Lab is listening on {address}, which other machines can reach, and no "
    "authentication is set up, so it serves nothing. Either bind it to this machine only "
    "(`--server.address 127.0.0.1`, the default in .streamlit/config.toml), or add "
    "authentication: an `[auth]` section in .streamlit/secrets.toml (Streamlit's `st.login`, "
    "OpenID Connect), or a reverse proxy that logs people in, started with "
    f"{PROXY_AUTH_ENV}=1. The README's Security section says how."
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
