"""``papertrack gc``: remove the model files of registered versions that serve nothing.

A version serves nothing when it carries no alias (neither ``champion`` nor ``challenger``, nor one set by hand) and
is not being registered right now. Each ``train`` that registers logs its winner's model (~120 MB with the default
data), so a store grows by that much per retrain; nothing else removes them.

The removal is MLflow's own: the version is deleted from the registry and its logged model marked deleted
(``MlflowClient.delete_model_version`` / ``delete_logged_model``), then ``mlflow gc --logged-model-ids …`` removes
the files. As ``mlflow gc`` always does, it also removes for good any run or experiment already deleted (in MLflow's
UI). The BentoML copies of those versions (``papertrack serve`` imports the version it serves) go with them. Runs
stay: their metrics, plots and reports are small and ``papertrack runs --all`` compares them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import unquote, urlparse

import typer

from papertrack import settings
from papertrack.console import console
from papertrack.errors import PapertrackError

LOGGED_MODEL_SOURCE = re.compile(r"models:/(m-[0-9a-f]+)$")


@dataclass(frozen=True)
class Unused:
    """A registered version no alias points at: its logged model and what its files take."""

    version: str
    model_id: str
    candidate: str
    run_id: str
    size: int

    def line(self) -> str:
        return (
            f"  version {self.version}  {self.candidate or 'candidate ?'}, run {self.run_id[:12] or '?'}  "
            f"{self.size / 2**20:,.1f} MB"
        )


def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="List what would be removed and remove nothing.")
    ] = False,
) -> None:
    """Remove the model files of registered versions that serve nothing (no alias: neither champion nor
    challenger); runs, metrics and plots stay."""
    from papertrack import store

    opened = store.open(create=False)  # never creates a store
    if opened.is_server:
        raise PapertrackError(
            f"papertrack gc works on the store's database itself; {opened.where()} is a tracking server. Delete the "
            "versions in MLflow's UI and run `mlflow gc --backend-store-uri <its database>` where the server runs."
        )
    client = opened.client()
    try:
        aliases = client.get_registered_model(settings.MODEL_NAME).aliases
    except Exception:  # nothing registered yet
        console.print(f"Nothing is registered in {opened.where()}: nothing to remove.", highlight=False)
        return
    unused, notes = _unused_versions(client, {str(version): alias for alias, version in aliases.items()})
    kept = f"Kept: {', '.join(notes)}." if notes else ""
    if not unused:
        console.print(f"Nothing to remove in {opened.where()}. {kept}".rstrip(), highlight=False)
        return
    total = sum(u.size for u in unused) / 2**20
    verb = "Would remove" if dry_run else "Removing"
    console.print(
        f"{verb} {len(unused)} registered version(s) that serve nothing (no alias), {total:,.1f} MB of model files:",
        highlight=False,
    )
    for u in unused:
        console.print(u.line(), highlight=False)
    if kept:
        console.print(kept, highlight=False)
    if dry_run:
        console.print("Runs stay. `papertrack gc` (without --dry-run) removes them.", highlight=False)
        return
    for u in unused:
        client.delete_model_version(settings.MODEL_NAME, u.version)
        client.delete_logged_model(u.model_id)
    _mlflow_gc(opened.tracking_uri, [u.model_id for u in unused])
    removed_copies = _remove_bento_copies(unused)
    copies = f" and {removed_copies} BentoML cop{'y' if removed_copies == 1 else 'ies'}" if removed_copies else ""
    console.print(f"Removed {len(unused)} version(s){copies}. Runs stay (`papertrack runs --all`).", highlight=False)
    line = opened.size_line()
    if line is not None:
        console.print(line, highlight=False)


def _unused_versions(client, aliased: dict[str, str]) -> tuple[list[Unused], list[str]]:
    """The versions to remove, and a note for each version kept: aliased, being registered (no ``gate`` yet and its
    owner alive), logged into its run by an older papertrack, or sharing its logged model with a kept version."""
    from papertrack import registry

    unused: list[Unused] = []
    notes: list[str] = []
    kept_models: dict[str, str] = {}
    for version in sorted(client.search_model_versions(f"name='{settings.MODEL_NAME}'"), key=lambda v: int(v.version)):
        tags = dict(version.tags or {})
        number = str(version.version)
        match = LOGGED_MODEL_SOURCE.match(version.source or "")
        if number in aliased:
            notes.append(f"version {number} ({aliased[number]})")
        elif "gate" not in tags and not registry.owner_gone(tags.get(registry.OWNER_TAG)):
            notes.append(f"version {number} (being registered by {tags.get(registry.OWNER_TAG, 'an unknown owner')})")
        elif match is None:  # an older papertrack logged the model into its run: left with the run
            notes.append(f"version {number} (its files are in its run's artifacts: left)")
        else:
            size = _size(client.get_logged_model(match[1]).artifact_location)
            run_id = tags.get("run_id") or version.run_id or ""
            unused.append(Unused(number, match[1], tags.get("candidate", ""), run_id, size))
            continue
        if match is not None:
            kept_models[match[1]] = number
    for u in [u for u in unused if u.model_id in kept_models]:  # registered twice from one logged model
        unused.remove(u)
        notes.append(f"version {u.version} (its files are also version {kept_models[u.model_id]}'s)")
    return unused, notes


def _size(artifact_location: str) -> int:
    """What the files under a ``file://`` artifact location take (0 for another scheme or a folder gone)."""
    parsed = urlparse(artifact_location)
    if parsed.scheme not in ("", "file"):
        return 0
    root = Path(unquote(parsed.path))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _mlflow_gc(tracking_uri: str, model_ids: list[str]) -> None:
    """``mlflow gc`` on the logged models just marked deleted: it removes their files and their records."""
    mlflow_cli = Path(sys.executable).with_name("mlflow")
    command = [str(mlflow_cli)] if mlflow_cli.exists() else [sys.executable, "-m", "mlflow"]
    command += ["gc", "--backend-store-uri", tracking_uri, "--logged-model-ids", ",".join(model_ids)]
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PapertrackError(
            f"`mlflow gc` failed (exit {done.returncode}); the versions are deleted from the registry, their files "
            f"remain. Its output:\n{(done.stderr or done.stdout).strip()[-2000:]}"
        )


def _remove_bento_copies(unused: list[Unused]) -> int:
    """Delete the BentoML store's copies of the removed versions (tag ``papertrack:v<version>-<run id prefix>``,
    as ``papertrack serve`` imports them); the tag holds the run id, so another store's copies are never touched."""
    import bentoml

    from papertrack.serving.http.bento_store import BENTO_MODEL_NAME

    wanted = {f"v{u.version}-{u.run_id[:12]}".lower() for u in unused if u.run_id}
    removed = 0
    for model in bentoml.models.list(BENTO_MODEL_NAME):
        if model.tag.version in wanted:
            bentoml.models.delete(model.tag)
            removed += 1
    return removed


def add_commands(app: typer.Typer) -> None:
    app.command()(gc)
