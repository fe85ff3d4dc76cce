"""The artifact's manifest: which papertrack wrote it, in which format, and the sha256 of each of its files.

Written beside the pickled predictor when the model is saved (:func:`write`, ``papertrack.json`` in the pyfunc's
``artifacts/`` folder) and checked before anything of it is unpickled (:func:`check`): an artifact of another
format is refused with "retrain with this version", a damaged or truncated file is named instead of failing deep
inside the unpickler. There is no compatibility code for older formats: a model is retrained, not migrated.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from papertrack.errors import PapertrackError

FORMAT = 3  # 3: taxonomies (TrackPredictor.taxonomy, .sources, .heads)
"""The artifact format this papertrack writes and reads. Raise it whenever a pickled class changes in a way an
artifact written before cannot be loaded by (renamed/moved classes, new required attributes)."""
MANIFEST_FILE = "papertrack.json"
PREDICTOR_FILE = "predictor.pkl"  # the pickled TrackPredictor (papertrack.models.artifact), beside the manifest
TAXONOMIES_FILE = "taxonomies.json"  # what it answers in, per taxonomy (papertrack.models.taxonomy_summary)
ARTIFACTS_FOLDER = "artifacts"  # where MLflow keeps a pyfunc's artifacts inside the model folder
RETRAIN = "retrain with this version: papertrack train"
RESTORE = "restore the model store from a backup"
_CHUNK = 1 << 20


class ArtifactError(PapertrackError):
    """The model artifact cannot be used as it is; the message names it and says what to do."""


class IncompatibleArtifact(ArtifactError):
    """The artifact was written in another format (by another papertrack)."""


class DamagedArtifact(ArtifactError):
    """A file of the artifact is missing, truncated or altered since it was saved (``file``: its name)."""

    def __init__(self, message: str, file: str | None = None):
        super().__init__(message)
        self.file = file


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write(folder: Path, files: Iterable[str]) -> Path:
    """Write the manifest of ``files`` (names in ``folder``) into ``folder``; returns its path."""
    from papertrack import __version__

    manifest = {
        "format": FORMAT,
        "papertrack": __version__,
        "sha256": {name: sha256(folder / name) for name in files},
    }
    path = folder / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def check(
    folder: Path, shown: str | None = None, origin: str | None = None, known: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The manifest in ``folder``, after checking the format and every listed file's digest.

    ``shown`` names the model in messages (e.g. its URI), ``origin`` where its files are kept when ``folder`` is
    a downloaded copy (e.g. the artifact store's folder); both default to ``folder``. ``known``: the sha256 of
    files already read (by name), e.g. of the bytes about to be unpickled, not hashed again."""
    where = origin or str(folder)
    shown = shown or where
    path = folder / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IncompatibleArtifact(
            f"{shown} was written by an earlier papertrack (no format version); this is format {FORMAT} — {RETRAIN}"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DamagedArtifact(
            f"{where}/{MANIFEST_FILE} of {shown} is damaged ({exc}); {RETRAIN}, or {RESTORE}",
            MANIFEST_FILE,
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sha256"), dict):
        raise DamagedArtifact(
            f"{where}/{MANIFEST_FILE} of {shown} is not a papertrack manifest; {RETRAIN}", MANIFEST_FILE
        )
    if manifest.get("format") != FORMAT:
        raise IncompatibleArtifact(
            f"{shown} was written by papertrack {manifest.get('papertrack', '?')} (format {manifest.get('format')}); "
            f"this is format {FORMAT} — {RETRAIN}"
        )
    for name, expected in manifest["sha256"].items():
        file = folder / name
        digest = (known or {}).get(name)
        missing = digest is None and not file.is_file()
        problem = "is missing" if missing else "is damaged" if (digest or sha256(file)) != expected else None
        if problem:
            raise DamagedArtifact(
                f"{where}/{name} of {shown} {problem} (the model's files must match the sha256 recorded when it was "
                f"saved); {RETRAIN}, or {RESTORE}",
                name,
            )
    return manifest


# --- every file of the logged model ------------------------------------------------------------------------------
FILES_TAG = "papertrack.model_files"
"""Tag (on the winner's run and on the registered version) holding the sha256 of every file of the logged MLflow
model folder — ``MLmodel``, ``python_model.pkl``, the artifacts, the environment files — taken right after
``log_model``. It lives in the tracking database, apart from the files it vouches for."""
REREGISTER = "re-register it with this papertrack: papertrack train --force"
# written into the model's folder by the registry after the model is logged (registered name and version, YAML that
# MLflow parses as data): not covered
UNCOVERED = frozenset({"registered_model_meta"})


def model_files(folder: Path) -> dict[str, str]:
    """The sha256 of every regular file under an MLflow model folder, by its ``/``-separated relative path."""
    return {
        path.relative_to(folder).as_posix(): sha256(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink() and path.relative_to(folder).as_posix() not in UNCOVERED
    }


def check_model_files(
    folder: Path,
    expected: dict[str, str],
    shown: str,
    origin: str | None = None,
    known: Mapping[str, str] | None = None,
) -> None:
    """Every file of the model folder is the one recorded when it was logged (no file changed, missing or added:
    MLflow would load an added ``code/`` module or a replaced ``python_model.pkl``); DamagedArtifact naming the first
    file that is not, before anything is unpickled or imported. ``origin``: where the files are kept when ``folder`` is
    a downloaded copy (for the message). ``known``: the sha256 of files already read (by relative path)."""
    found = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file() or p.is_symlink()}
    for name in UNCOVERED:
        found.pop(name, None)
    for name in sorted(set(expected) | set(found)):
        if name not in found:
            problem = "is missing"
        elif name not in expected:
            problem = "was not part of the model when it was logged"
        elif found[name].is_symlink() or ((known or {}).get(name) or sha256(found[name])) != expected[name]:
            problem = "is damaged (it changed since the model was logged)"
        else:
            continue
        raise DamagedArtifact(
            f"{origin or folder}/{name} of {shown} {problem}; nothing of it is loaded (the sha256 of every file of the "
            f"model is recorded in the tracking store, tag {FILES_TAG}). {RETRAIN}, or {RESTORE}",
            name,
        )


def parse_model_files(value: str | None) -> dict[str, str] | None:
    """The tag's value as a mapping, or None when absent or unreadable."""
    if not value:
        return None
    try:
        files = json.loads(value)
    except ValueError:
        return None
    return files if isinstance(files, dict) and all(isinstance(v, str) for v in files.values()) else None
