"""Who can reach the app: foreign Host headers are refused (DNS rebinding), and a non-loopback
address serves nothing without authentication."""

import base64
import os
import socket

import pytest
from streamlit import config

from appserver import running_app
from pagetest import page_app
from ui.guard import PROXY_AUTH_ENV, is_loopback


def websocket_status(port: int, host: str) -> str:
    """The status line the server answers a WebSocket handshake for ``Host: host`` with."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        return sock.recv(4096).decode(errors="replace").splitlines()[0]


def test_a_foreign_host_header_cannot_open_the_apps_websocket(lab_home):
    with running_app() as port:
        assert " 101 " in websocket_status(port, f"localhost:{port}")
        assert " 101 " not in websocket_status(port, "attacker.example")
        assert " 101 " not in websocket_status(port, f"rebind.attacker.example:{port}")


@pytest.mark.parametrize("address, loopback", [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("127.0.0.2", True),
    ("0.0.0.0", False), ("192.168.1.5", False), ("::", False), ("", False), (None, False),
    ("lab.example.org", False)])
def test_loopback_addresses(address, loopback):
    assert is_loopback(address) is loopback


@pytest.fixture
def public_address(monkeypatch):
    monkeypatch.delenv(PROXY_AUTH_ENV, raising=False)
    config.set_option("server.address", "0.0.0.0")
    yield
    config.set_option("server.address", "127.0.0.1")


def test_a_public_address_without_authentication_serves_nothing(public_address):
    at = page_app("app.py").run()
    assert not at.exception
    assert "no authentication is set up" in at.error[0].value
    assert not at.title  # no page ran


def test_a_proxy_that_authenticates_lets_the_app_serve(public_address, monkeypatch):
    monkeypatch.setenv(PROXY_AUTH_ENV, "1")
    at = page_app("app.py").run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Leakage Lab"
