"""``papertrack tracking-server``: one MLflow tracking server for a team, on PostgreSQL.

It runs ``mlflow server`` with the given database as backend store (runs, metrics, the model registry)
and proxied artifacts (``--serve-artifacts --artifacts-destination DIR``: clients upload and download
models and plots through the server, they need no access to DIR). It binds 127.0.0.1 and runs one
worker unless told otherwise; MLflow's job execution is off. Every papertrack command then uses it
with ``MLFLOW_TRACKING_URI=http://HOST:PORT`` (see README "Scaling out").

The database is checked first, so a wrong URI, a database that is down or a missing driver is one
clear line instead of a server that starts and fails on every request. PostgreSQL needs the
``[team]`` extra (``psycopg[binary]``: SQLAlchemy maps ``postgresql://`` to psycopg 3).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from papertrack import settings
from papertrack.console import console
from papertrack.errors import PapertrackError, UsageError

DEFAULT_PORT = 5000
CONNECT_TIMEOUT = 10  # seconds for the database check


class DatabaseUnreachable(PapertrackError):
    """The backend store's database does not answer (down, wrong address or credentials)."""


def hide_password(uri: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db`` for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(uri).render_as_string(hide_password=True)
    except Exception:  # not a database URL at all: shown as given, it holds no parsed password
        return uri


def driver_uri(uri: str) -> str:
    """SQLAlchemy 2.1 maps ``postgresql://`` to psycopg 3, earlier versions to psycopg2: spell psycopg out
    (for the check and the server) so the driver of the [team] extra is used whatever the version."""
    return "postgresql+psycopg://" + uri.removeprefix("postgresql://") if uri.startswith("postgresql://") else uri


def check_database(uri: str, timeout: int = CONNECT_TIMEOUT) -> None:
    """Connect once and run ``SELECT 1``; DatabaseUnreachable / UsageError with what to do."""
    import sqlalchemy
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

    shown = hide_password(uri)
    if uri.startswith(("postgresql:", "postgresql+psycopg:")):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise UsageError(
                "the PostgreSQL driver is not installed: pip install 'papertrack[team]' (psycopg[binary])"
            ) from None
    connect_args = {"connect_timeout": timeout} if uri.startswith("postgresql") else {}
    try:
        engine = sqlalchemy.create_engine(driver_uri(uri), connect_args=connect_args)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise UsageError(f"--backend-store-uri {shown} is not a database URI SQLAlchemy can use: {exc}") from None
    try:
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text("SELECT 1"))
    except SQLAlchemyError as exc:
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
        raise DatabaseUnreachable(f"cannot reach the database at {shown}: {reason}") from None
    finally:
        engine.dispose()


def server_command(backend_store_uri: str, artifacts: Path, host: str, port: int, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        driver_uri(backend_store_uri),
        "--serve-artifacts",
        "--artifacts-destination",
        artifacts.resolve().as_uri(),
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]


def server_env() -> dict[str, str]:
    settings.quiet_third_parties()
    return {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def tracking_server(
    backend_store_uri: Annotated[
        str,
        typer.Option(
            help="Database of runs, metrics and the registry, e.g. postgresql://mlflow@127.0.0.1:5432/mlflow "
            "(PostgreSQL needs the [team] extra)."
        ),
    ],
    artifacts: Annotated[
        Path,
        typer.Option(
            help="Folder (on the server's machine) where the server keeps models and plots; clients reach them "
            "through the server."
        ),
    ],
    host: Annotated[
        str,
        typer.Option(
            help="Interface to bind (loopback by default; a team on other "
            "machines needs e.g. 0.0.0.0 behind a firewall)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535)] = DEFAULT_PORT,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Server worker processes.")] = 1,
) -> None:
    """Run a team MLflow tracking server: `mlflow server` on a PostgreSQL backend store with proxied artifacts."""
    check_database(backend_store_uri)
    artifacts.mkdir(parents=True, exist_ok=True)
    command = server_command(backend_store_uri, artifacts, host, port, workers)
    console.print(
        f"MLflow tracking server on http://{host}:{port} — backend {hide_password(backend_store_uri)}, "
        f"artifacts in {artifacts.resolve()}. Point papertrack at it with "
        f"MLFLOW_TRACKING_URI=http://{host}:{port}",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
    sys.stdout.flush()
    os.execve(sys.executable, command, server_env())  # the server takes over this process (and its PID)


def add_commands(app: typer.Typer) -> None:
    app.command()(tracking_server)
