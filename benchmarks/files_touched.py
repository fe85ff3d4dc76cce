"""Which of papertrack's own files one request to ``/predict`` and one ``papertrack label`` run execute.

The count behind issue 18's "following /predict and papertrack label each touches fewer files": a run-time trace
(``sys.setprofile`` and ``threading.setprofile``) of every Python function or module body run from a file of the
papertrack package, while

* ``/predict``: one request through the service's real ASGI app (BentoML's routes, middlewares and validation) with
  Starlette's TestClient, after a first request has warmed it up (imports and start-up are not counted);
* ``label``: ``papertrack label`` on a 5-record JSONL dump, from the command line's start (the command's imports,
  the model load and the writing of the rows are counted).

Needs a store with a registered champion::

    PAPERTRACK_HOME=/path/to/home python benchmarks/files_touched.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("BENTOML_DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import papertrack  # noqa: E402

PACKAGE = Path(papertrack.__file__).resolve().parent


def _own(filename: str) -> str | None:
    path = Path(filename)
    if not path.is_absolute():
        return None
    resolved = path.resolve()
    if resolved == Path(__file__).resolve():
        return None
    if resolved.is_relative_to(PACKAGE.parent) and ".venv" not in resolved.parts:
        return str(resolved.relative_to(PACKAGE.parent))
    if path.is_relative_to(PACKAGE):
        return str(path.relative_to(PACKAGE.parent))
    return None


def _importing(frame) -> bool:
    """Whether this frame runs inside a module's import (a module body below it on the stack, not the script's)."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_back is not None:
            return True
        frame = frame.f_back
    return False


class Tracer:
    """A profile hook in every thread started after :meth:`install`; it records only inside :meth:`recording`."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.names: dict[str, str | None] = {}  # code file -> its name in the package, None when not ours
        self.active = False

    def _hook(self, frame, event, arg):
        if self.active and event == "call":
            filename = frame.f_code.co_filename
            if filename not in self.names:
                self.names[filename] = _own(filename)
            name = self.names[filename]
            if name is not None and name not in self.seen and not _importing(frame):
                self.seen.add(name)

    def install(self) -> None:
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)

    def files(self, run: Callable[[], object]) -> list[str]:
        """The package files whose code runs while ``run()`` runs, in this thread or one started after install."""
        self.seen.clear()
        self.active = True
        try:
            run()
        finally:
            self.active = False
        return sorted(self.seen)


TRACER = Tracer()


def predict_files() -> list[str]:
    from starlette.testclient import TestClient

    from papertrack import settings, store
    from papertrack.serving.http import bento_store

    model = bento_store.import_champion(store.open(create=False))
    os.environ[settings.BENTO_MODEL_ENV] = str(model.tag)
    from papertrack.serving.http.service import PaperTrack

    body = {"abstract": "We propose a transformer with sparse attention for long documents."}
    with TestClient(PaperTrack.to_asgi(), base_url="http://127.0.0.1:3000") as client:
        assert client.post("/predict", json=body).status_code == 200  # warm-up, not counted

        def one_request() -> None:
            response = client.post("/predict", json=body)
            assert response.status_code == 200, response.text

        return TRACER.files(one_request)


def label_files() -> list[str]:
    from typer.testing import CliRunner

    folder = Path(tempfile.mkdtemp(prefix="files-touched-"))
    dump = folder / "dump.jsonl"
    dump.write_text(
        "".join(
            json.dumps({"id": f"p{i}", "abstract": f"A study of graph neural networks, number {i}."}) + "\n"
            for i in range(5)
        ),
        encoding="utf-8",
    )

    def one_run() -> None:
        from papertrack.cli import app

        result = CliRunner().invoke(app, ["label", str(dump), "-o", str(folder / "out.jsonl")])
        assert result.exit_code == 0, result.output

    return TRACER.files(one_run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="?", choices=["predict", "label"], help="one of the two (default: both)")
    args = parser.parse_args()
    TRACER.install()
    for which in [args.which] if args.which else ["predict", "label"]:
        files = predict_files() if which == "predict" else label_files()
        out = sys.__stdout__  # the CLI run under CliRunner leaves sys.stdout swapped
        print(f"{which}: {len(files)} files", file=out)
        for name in files:
            print(f"  {name}", file=out)
        out.flush()


if __name__ == "__main__":
    main()
