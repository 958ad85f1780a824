"""Ports for the local servers (``makers-store serve`` and ``makers-store
studio``): one way to bind a port, to show its address and to warn when it is
reachable from other machines.

A port is bound before anything is printed, so a port in use is a clear
:class:`~.errors.ServeError` rather than a banner followed by a traceback;
``--port 0`` picks a free one.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket

from .errors import ServeError

#: Hosts that mean "every interface".
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "*")


def bind(host: str, port: int, *, in_use_hint: str = "") -> socket.socket:
    """A socket bound (not yet listening) to ``host:port``; ServeError when it
    cannot be. ``in_use_hint`` names a likely holder of a port in use."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets
    # whose proto says TCP, and accepted ones inherit it. With proto 0 every
    # kept-alive response waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]") or "0.0.0.0", port))  # uvicorn listens once all is ready
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"cannot listen on {host}:{port}: port {port} is already in use"
                f"{in_use_hint}; choose another with --port, or --port 0 for a free one"
            ) from exc
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(False)
    return sock


def url_of(host: str, port: int) -> str:
    """The address a server listens on, as given (``0.0.0.0`` stays ``0.0.0.0``)."""
    shown = host or "0.0.0.0"
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def local_url(host: str, port: int) -> str:
    """The address to open from this machine (loopback for a wildcard host)."""
    if host in WILDCARD_HOSTS:
        return f"http://{'[::1]' if ':' in host else '127.0.0.1'}:{port}"
    return url_of(host, port)


def banner_address(host: str, port: int) -> str:
    """A start banner's address: the real one, plus how to reach it from this machine."""
    if host in WILDCARD_HOSTS:
        return f"{url_of(host, port)} (every interface; from this machine {local_url(host, port)})"
    return url_of(host, port)


def bind_warning(host: str, exposed: str) -> str | None:
    """A warning when ``host`` makes the server reachable from other machines
    (None for loopback); ``exposed`` says what anyone reaching it can do."""
    if host in WILDCARD_HOSTS:
        return (
            f"--host {host or '*'} listens on every network interface, reachable from "
            f"other machines: {exposed}"
        )
    if host == "localhost":
        return None
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"--host {host} may be reachable from other machines: {exposed}"
    if not address.is_loopback:
        return f"--host {host} is reachable from other machines on that network: {exposed}"
    return None
