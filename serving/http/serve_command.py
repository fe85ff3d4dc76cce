"""CLI commands of the HTTP service: ``papertrack serve`` and ``papertrack build`` (a Bento)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from papertrack import settings
from papertrack.errors import PapertrackError, UsageError
from papertrack.serving.command_output import note, say

SERVICE = "papertrack.serving.http.service:PaperTrack"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _champion_or_exit(alias: str):
    """(the champion imported into the BentoML store, the MLflow store it came from)."""
    from papertrack import store
    from papertrack.serving.http import bento_store

    opened = store.open(create=False)
    return bento_store.import_champion(opened, alias), opened


def serve(
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535, help="TCP port on 127.0.0.1.")] = 3000,
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = "127.0.0.1",
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="Worker processes, each with its own copy of the "
            "model; the service is CPU-bound, so about one per core.",
        ),
    ] = 2,
    alias: Annotated[str, typer.Option(help="Registry alias of the model to serve.")] = settings.CHAMPION,
    access_log: Annotated[bool, typer.Option(help="Log every request (costs throughput).")] = False,
    behind_proxy: Annotated[
        bool,
        typer.Option(
            help="Allow --host other than loopback: only when a reverse proxy (deploy/nginx.conf) is the only "
            "client that can reach it."
        ),
    ] = False,
) -> None:
    """Import the champion into the BentoML model store and serve it over HTTP (bentoml serve)."""
    from papertrack.serving.http.bento_store import service_env

    if host not in LOOPBACK_HOSTS and not behind_proxy:
        raise UsageError(
            f"--host {host} would expose the service itself: it leaves slow clients, body sizes, buffering and "
            f"connection limits to a reverse proxy. Put the proxy in front first (deploy/nginx.conf, see "
            f"docs/serving.md): keep papertrack serve on 127.0.0.1 and let the proxy listen outside, or pass "
            f"--behind-proxy when {host} is only reachable by your proxy."
        )
    if _port_in_use(host, port):  # before anything is printed: BentoML would fail late, with a long traceback
        free = next((p for p in range(port + 1, min(port + 100, 65535) + 1) if not _port_in_use(host, p)), None)
        raise UsageError(
            f"port {port} on {host} is in use; pass --port with a free one"
            + (f" (e.g. --port {free}, free now)" if free else "")
        )
    model, opened = _champion_or_exit(alias)
    env = service_env(str(model.tag), workers=workers, access_log=access_log, store=opened)
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    say(
        f"Serving {model.tag} (papertrack v{model.info.metadata.get('version')}, "
        f"run {str(model.info.metadata.get('run_id'))[:8]}) on {url} "
        f"with {workers} worker(s) — page at /, OpenAPI page at /docs, metadata at /metadata"
    )
    sys.stdout.flush()
    if host not in LOOPBACK_HOSTS and not settings.current().allowed_hosts:
        note(
            f"binding {host} behind a proxy: requests must name an allowed host in their Host header; list the "
            f"names the proxy forwards in {settings.ALLOWED_HOSTS_ENV} (comma-separated), else they get 421."
        )
    command = [sys.executable, "-m", "bentoml", "serve", SERVICE, "--host", host, "--port", str(port)]
    os.execve(sys.executable, command, env)  # the server takes over this process (and its PID)


def _port_in_use(host: str, port: int) -> bool:
    """Whether a server already listens on ``host:port`` (binding it the way the server will: SO_REUSEADDR, so
    connections of a stopped server waiting in TIME_WAIT do not count). A host that does not resolve is left to
    the server to report."""
    import socket

    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return False
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                import errno

                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


def build(
    alias: Annotated[str, typer.Option(help="Registry alias of the model to package.")] = settings.CHAMPION,
    bentofile: Annotated[
        Path | None,
        typer.Option(
            help="A bentofile.yaml to start from (default: papertrack's own build settings); its python wheels and "
            "requirements are replaced by papertrack's wheel and the champion's requirements.",
            show_default=False,
        ),
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option(
            help="Also export the Bento as one self-contained archive (code wheel + model), e.g. papertrack.bento."
        ),
    ] = None,
) -> None:
    """Build a Bento: the papertrack wheel + the champion (imported into the BentoML store) + the service.

    Works from an installed papertrack (nothing is written next to the code): the wheel is built in a
    temporary folder from the installed package, and the Bento's Python requirements are the champion's own
    (its MLflow requirements.txt: e.g. torch and sentence-transformers for an embedding champion).
    """
    import tempfile

    from papertrack.serving.http.bento_store import service_env

    if bentofile is not None and not bentofile.is_file():
        raise UsageError(f"--bentofile {bentofile}: no such file")
    if export is not None and export.is_dir():
        raise UsageError(f"--export {export} is a folder; give the archive's file name, e.g. {export}/papertrack.bento")
    model, opened = _champion_or_exit(alias)
    env = service_env(str(model.tag), store=opened)
    with tempfile.TemporaryDirectory(prefix="papertrack-build-") as tmp:
        context = Path(tmp)
        wheel = build_wheel(context / "dist")
        requirements = champion_requirements(Path(model.path_of(f"{_mlflow_folder()}/requirements.txt")))
        (context / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
        spec = bento_spec(wheel.relative_to(context).as_posix(), bentofile)
        import yaml

        (context / "bentofile.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        say(
            f"Packaging model {model.tag} with the {wheel.name} wheel and {len(requirements)} requirements of "
            f"the champion ({', '.join(requirements[:4])}{', ...' if len(requirements) > 4 else ''}) ..."
        )
        output = _run(
            [
                sys.executable,
                "-m",
                "bentoml",
                "build",
                "-f",
                str(context / "bentofile.yaml"),
                "-o",
                "tag",
                str(context),
            ],
            "bentoml build",
            cwd=context,
            env=env,
        )
    tag = output.strip().splitlines()[-1].removeprefix("__tag__:")
    say(f"Built Bento {tag} (model {model.tag}). Serve it with: bentoml serve {tag} --host 127.0.0.1")
    if export is not None:
        export.parent.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "bentoml", "export", tag, str(export.resolve())], "bentoml export", env=env)
        say(f"Exported {tag} with its model to {export}")


def _mlflow_folder() -> str:
    from papertrack.serving.http.bento_store import MLFLOW_MODEL_FOLDER

    return MLFLOW_MODEL_FOLDER


# The Bento's settings (bentofile.yaml at the repository root says the same, for `bentoml build` by hand).
BENTO_SPEC = {
    "service": SERVICE,
    "name": "papertrack",
    "labels": {"project": "papertrack"},
    "description": "Classify ML paper abstracts into conference tracks (Area · Subarea); see README.md.",
    "include": ["bentofile.yaml"],
    "python": {"lock_packages": False},
    "envs": [
        {"name": "PAPERTRACK_WORKERS", "value": "1"},
        {"name": "MLFLOW_DISABLE_TELEMETRY", "value": "true"},
        {"name": "BENTOML_DO_NOT_TRACK", "value": "true"},
        {"name": "PAPERTRACK_EMBEDDING_CACHE", "value": "off"},
    ],
}


def bento_spec(wheel: str, bentofile: Path | None = None) -> dict:
    """The build settings: ``bentofile`` (or :data:`BENTO_SPEC`) with papertrack's wheel and the champion's
    requirements (``requirements.txt`` in the build context) as its Python packages."""
    import copy

    import yaml

    spec = copy.deepcopy(BENTO_SPEC) if bentofile is None else (yaml.safe_load(bentofile.read_text()) or {})
    python = spec.setdefault("python", {})
    python.pop("packages", None)
    python["wheels"] = [wheel]
    python["requirements_txt"] = "requirements.txt"
    python.setdefault("lock_packages", False)
    return spec


def champion_requirements(path: Path) -> list[str]:
    """The champion's pip requirements (MLflow wrote them when it was logged: the exact versions it was trained
    with, plus e.g. torch and sentence-transformers for an embedding model) without papertrack itself (the
    Bento carries it as a wheel) and BentoML (``bentoml build`` pins the version that built the Bento)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    keep = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name = re.split(r"[\s<>=!~;\[@]", text, maxsplit=1)[0].lower().replace("_", "-")
        if name in ("papertrack", "bentoml"):
            continue
        keep.append(text)
    return keep


def build_wheel(dist: Path) -> Path:
    """A wheel of the papertrack that is running, written into ``dist`` from its installed files (an installed
    package or a source checkout alike: the subpackages are found where Python imports them from). Written
    directly (a pure-Python wheel is a zip with a dist-info folder): no build backend, no network, nothing
    written next to the code."""
    import base64
    import hashlib
    import importlib
    import zipfile

    from papertrack import __version__

    wheel = dist / f"papertrack-{__version__}-py3-none-any.whl"
    dist.mkdir(parents=True, exist_ok=True)
    wheel.unlink(missing_ok=True)
    subpackages = ("features", "models", "training", "serving")
    files: dict[str, bytes] = {}

    def add_tree(root: Path, prefix: str, skip: tuple[str, ...] = ()) -> None:
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if (
                path.is_dir()
                or "__pycache__" in relative.parts
                or path.suffix in (".pyc", ".pyo")
                or relative.parts[0] in skip
            ):
                continue
            files[f"{prefix}/{relative.as_posix()}"] = path.read_bytes()

    # in a checkout the subpackages live at the repository root, installed under papertrack/
    add_tree(Path(importlib.import_module("papertrack").__path__[0]), "papertrack", skip=subpackages)
    for name in subpackages:
        add_tree(Path(importlib.import_module(f"papertrack.{name}").__path__[0]), f"papertrack/{name}")
    info = f"papertrack-{__version__}.dist-info"
    files[f"{info}/METADATA"] = _wheel_metadata(__version__).encode("utf-8")
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: papertrack build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = b"[console_scripts]\npapertrack = papertrack.cli:main\n"
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def _wheel_metadata(version: str) -> str:
    """The wheel's METADATA: the running distribution's summary and requirements (extras kept)."""
    import importlib.metadata

    try:
        meta = importlib.metadata.metadata("papertrack")
        requires = importlib.metadata.requires("papertrack") or []
        python = meta.get("Requires-Python") or ">=3.11"
        summary = meta.get("Summary") or ""
    except importlib.metadata.PackageNotFoundError:
        requires, python, summary = [], ">=3.11", ""
    extras = dict.fromkeys(m.group(1) for r in requires if (m := re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", r)))
    lines = [
        "Metadata-Version: 2.1",
        "Name: papertrack",
        f"Version: {version}",
        f"Summary: {summary}",
        f"Requires-Python: {python}",
        *[f"Provides-Extra: {e}" for e in extras],
        *[f"Requires-Dist: {r}" for r in requires],
    ]
    return "\n".join(lines) + "\n"


class BuildError(PapertrackError):
    """A build step (``bentoml build``/``export``) failed; the message carries its exit code and output."""


def _run(command: list[str], what: str, cwd: Path | None = None, env: dict | None = None) -> str:
    """Run a build step; its output is shown only when it fails (BuildError, with the exit code). Returns stdout."""
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"{what} failed (exit code {result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def add_commands(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(build)
