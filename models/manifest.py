"""The artifact's manifest: which papertrack wrote it, in which format, and the sha256 of each of its files.

Written beside the pickled predictor when the model is saved (:func:`write`, ``papertrack.json`` in the pyfunc's
``artifacts/`` folder) and checked before anything of it is unpickled (:func:`check`): an artifact of another
format is refused with "retrain with this version", a damaged or truncated file is named instead of failing deep
inside the unpickler. There is no compatibility code for older formats: a model is retrained, not migrated.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from papertrack.errors import PapertrackError

FORMAT = 3  # 3: taxonomies (TrackPredictor.taxonomy, .sources, .heads)
"""The artifact format this papertrack writes and reads. Raise it whenever a pickled class changes in a way an
artifact written before cannot be loaded by (renamed/moved classes, new required attributes)."""
MANIFEST_FILE = "papertrack.json"
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


def check(folder: Path, shown: str | None = None, origin: str | None = None) -> dict[str, Any]:
    """The manifest in ``folder``, after checking the format and every listed file's digest.

    ``shown`` names the model in messages (e.g. its URI), ``origin`` where its files are kept when ``folder`` is
    a downloaded copy (e.g. the artifact store's folder); both default to ``folder``."""
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
        problem = "is missing" if not file.is_file() else "is damaged" if sha256(file) != expected else None
        if problem:
            raise DamagedArtifact(
                f"{where}/{name} of {shown} {problem} (the model's files must match the sha256 recorded when it was "
                f"saved); {RETRAIN}, or {RESTORE}",
                name,
            )
    return manifest
