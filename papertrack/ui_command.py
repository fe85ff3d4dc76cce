"""``papertrack ui``: MLflow's UI on papertrack's store, opened on the runs table of the latest sweep.

``mlflow ui`` as a user would type it lands, in a fresh browser, on MLflow's GenAI overview, and needs the store's
URI spelled out. This command starts the UI (``mlflow server``, one worker, 127.0.0.1, artifacts served from the
store's own folder, MLflow's job execution off) on the store every papertrack command uses (found as they find it,
never created), waits until it answers, then prints — and opens in the browser, unless ``--no-browser`` — the runs
view of the papertrack experiment: ``workflowType=machine_learning`` (the runs table, not the GenAI overview) and
``viewStateShareKey`` (the view ``train`` stores with the experiment: the latest sweep's candidates with the
leaderboard's metric columns, best first); see :func:`papertrack.training.runs_link.runs_view_url`. With a tracking
server (``MLFLOW_TRACKING_URI=http://…``) the server is the UI: the link is printed and nothing is started.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from typing import Annotated

import typer

from papertrack.console import console
from papertrack.errors import PapertrackError, UsageError

DEFAULT_PORT = 5000
START_TIMEOUT = 180.0  # seconds for the UI to answer /health (a loaded machine imports MLflow slowly)
HOST = "127.0.0.1"


def ui_command(backend_store_uri: str, artifacts_uri: str | None, port: int, verbose: bool = False) -> list[str]:
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend_store_uri]
    if artifacts_uri is not None:
        command += ["--artifacts-destination", artifacts_uri]
    command += ["--host", HOST, "--port", str(port), "--workers", "1"]
    return command if verbose else command + ["--uvicorn-opts", "--log-level warning --no-access-log"]


def _quiet(verbose: bool, store_environment: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: the store's (its PAPERTRACK_HOME), job execution off; unless ``papertrack -v``, no
    INFO lines or notices."""
    env = {**os.environ, **(store_environment or {}), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    if not verbose:
        env.update({"MLFLOW_LOGGING_LEVEL": "WARNING", "PYTHONWARNINGS": "ignore"})
    return env


def runs_link(store, base: str) -> str:
    """The runs view of the papertrack experiment of ``store`` on the UI at ``base``; ``base`` itself when there is
    none yet."""
    from papertrack.training.leaderboard import runs_view
    from papertrack.training.runs_link import runs_view_url

    experiment_id, view = runs_view(store)
    return runs_view_url(base, experiment_id, view) if experiment_id is not None else base


def ui(
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535, help="TCP port on 127.0.0.1.")] = DEFAULT_PORT,
    browser: Annotated[bool, typer.Option(help="Open the runs view in the browser once the UI answers.")] = True,
) -> None:
    """Start MLflow's UI on papertrack's store and open the runs table of the latest sweep (Ctrl+C stops it)."""
    from papertrack import store
    from papertrack.serving.http.serve_command import _port_in_use

    opened = store.open(create=False)
    uri = opened.tracking_uri
    if opened.is_server:
        link = runs_link(opened, uri)
        console.print(f"The tracking server at {uri} is the UI: {link}", soft_wrap=True, highlight=False, markup=False)
        _open(link, browser)
        return
    if _port_in_use(HOST, port):
        raise UsageError(f"port {port} on {HOST} is in use; pass --port with a free one (e.g. --port {port + 1})")
    artifacts = (opened.home / "artifacts").as_uri() if opened.chosen != "user" else None
    verbose = logging.getLogger("papertrack").getEffectiveLevel() <= logging.INFO  # papertrack -v
    previous = signal.signal(signal.SIGTERM, _interrupted)  # a TERM stops the UI too (it has a session of its own)
    server = subprocess.Popen(
        ui_command(uri, artifacts, port, verbose),
        env=_quiet(verbose, opened.environment()),
        stdout=None if verbose else subprocess.DEVNULL,  # MLflow's start-up notices; its errors go to stderr
        start_new_session=True,
    )
    try:
        base = f"http://{HOST}:{port}"
        _wait_until_up(server, base)
        link = runs_link(opened, base)
        console.print(
            f"MLflow UI on {base} for {opened.where()}; the latest sweep's runs:", soft_wrap=True, markup=False
        )
        console.print(link, soft_wrap=True, highlight=False, markup=False)
        console.print(
            "In a fresh browser MLflow opens its Assistant panel on the right: close it (x) to see every column. "
            "Ctrl+C stops the UI.",
            highlight=False,
        )
        sys.stdout.flush()
        _open(link, browser)
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        _stop(server)
        signal.signal(signal.SIGTERM, previous)


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def _wait_until_up(server: subprocess.Popen, base: str) -> None:
    import httpx

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise PapertrackError(f"MLflow's UI exited with status {server.returncode} before it answered at {base}")
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                time.sleep(0.5)
                if server.poll() is None:  # ours answered (not another server that took the port meanwhile)
                    return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise PapertrackError(f"MLflow's UI did not answer at {base} within {START_TIMEOUT:.0f} s")


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _open(link: str, browser: bool) -> None:
    if browser:
        import webbrowser

        webbrowser.open(link)


def add_commands(app: typer.Typer) -> None:
    app.command("ui")(ui)
