"""``python -m papertrack.serving.http.launch serve ...``: the ``bentoml`` command line, with a Prometheus
multiprocess folder of this server's own.

BentoML keeps the metrics files of every worker in ``$BENTOML_HOME/prometheus_multiproc_dir`` and
empties that folder whenever a server starts, so two servers sharing one ``BENTOML_HOME`` deleted each
other's metrics files. ``papertrack serve`` runs BentoML through this module instead: each server gets
``$BENTOML_HOME/papertrack-metrics/<pid>``, removed when it exits; folders of servers that are no
longer running (killed) are removed by the next start.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
from pathlib import Path

METRICS_FOLDER = "papertrack-metrics"


def metrics_dir(bentoml_home: str | Path, pid: int | None = None) -> Path:
    """This server's own Prometheus folder (after removing the folders of servers that are gone)."""
    base = Path(bentoml_home) / METRICS_FOLDER
    base.mkdir(parents=True, exist_ok=True)
    for folder in base.iterdir():
        if folder.name.isdigit() and not _alive(int(folder.name)):
            shutil.rmtree(folder, ignore_errors=True)
    own = base / str(pid if pid is not None else os.getpid())
    own.mkdir(exist_ok=True)
    return own


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main() -> None:
    from bentoml_cli.cli import cli

    from papertrack.serving.http import private_hooks

    own = metrics_dir(private_hooks.bentoml_home())
    private_hooks.set_prometheus_multiproc_dir(own)
    atexit.register(shutil.rmtree, own, ignore_errors=True)
    sys.argv = ["bentoml", *sys.argv[1:]]
    sys.exit(cli())


if __name__ == "__main__":
    main()
