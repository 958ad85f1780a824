"""A throwaway PostgreSQL server for the tests, started once per test session.

The first call of :func:`postgres_url` finds the installed server binaries,
``initdb``s a cluster into a temporary directory (trust authentication, no
fsync: the data is worthless once the session ends), starts it on a free
TCP port of 127.0.0.1 and creates one database. Every call then returns a URL
naming a new schema in that database, so each test gets an empty store of its
own while the whole session pays for one server. The server is stopped and
its directory removed when the interpreter exits.

``initdb`` refuses to run as root: when the tests run as uid 0 the cluster is
created and run as the ``postgres`` OS user (Debian's packages create it).
Worker subprocesses reach the server over TCP, like any other client.
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

DATABASE = "makers_test"
_lock = threading.Lock()
_schemas = itertools.count(1)


@dataclass(frozen=True)
class Server:
    bindir: Path
    datadir: Path
    port: int
    run_as: str | None  # OS user the server runs as, when not the current one

    @property
    def base_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"


_server: Server | None = None


def find_bindir() -> Path:
    """The directory holding initdb, pg_ctl and postgres, or a clear error."""
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if result.returncode == 0:
            candidates.append(result.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise RuntimeError(
        "the postgres tests need a PostgreSQL server installation (initdb, pg_ctl); "
        "install one with: apt-get install postgresql"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _command(run_as: str | None, *args: str) -> list[str]:
    if run_as is None:
        return list(args)
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", run_as, "--", *args]
    return ["su", run_as, "-s", "/bin/sh", "-c", " ".join(f"'{arg}'" for arg in args)]


def _run(run_as: str | None, *args: str) -> None:
    result = subprocess.run(_command(run_as, *args), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")


def _unprivileged_user() -> str | None:
    """None when we may run the server ourselves; else the OS user to run it as."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root and no unprivileged 'postgres' user exists to run initdb")


def _start() -> Server:
    bindir = find_bindir()
    run_as = _unprivileged_user()
    root = Path(tempfile.mkdtemp(prefix="makers-pg-"))
    datadir = root / "data"
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    port = _free_port()
    _run(
        run_as,
        str(bindir / "initdb"),
        "-D",
        str(datadir),
        "-U",
        "postgres",
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    )
    options = " ".join(
        [
            "-c listen_addresses=127.0.0.1",
            f"-c port={port}",
            f"-c unix_socket_directories={root}",
            "-c fsync=off",
            "-c synchronous_commit=off",
            "-c full_page_writes=off",
            "-c max_connections=300",
        ]
    )
    server = Server(bindir, datadir, port, run_as)
    _run(
        run_as,
        str(bindir / "pg_ctl"),
        "-D",
        str(datadir),
        "-l",
        str(root / "server.log"),
        "-o",
        options,
        "-w",
        "-t",
        "60",
        "start",
    )
    atexit.register(_stop, server, root)
    _run(
        run_as,
        str(bindir / "createdb"),
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-U",
        "postgres",
        DATABASE,
    )
    return server


def _stop(server: Server, root: Path) -> None:
    subprocess.run(
        _command(
            server.run_as,
            str(server.bindir / "pg_ctl"),
            "-D",
            str(server.datadir),
            "-m",
            "immediate",
            "-w",
            "stop",
        ),
        capture_output=True,
    )
    shutil.rmtree(root, ignore_errors=True)


def server() -> Server:
    """The session's server, started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = _start()
        return _server


def postgres_url(tmp_path: Path | None = None) -> str:
    """A URL naming a fresh, empty store (a schema of its own) for one test.

    ``tmp_path`` is accepted for symmetry with the other backends' helpers and
    not used: the store lives in the session's server.
    """
    schema = f"t{os.getpid()}_{next(_schemas)}"
    return f"{server().base_url}?schema={schema}"
