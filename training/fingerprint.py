"""Nothing changed, nothing retrained: the fingerprint of what a ``train`` would learn from.

:func:`input_fingerprint` hashes every input of a sweep — each data file's bytes (sha256, in the order given), the
crosswalk files', the options that change what is trained (candidates, folds, seed, titles, budget, renames, the
columns named by ``--abstract-column``/...), the code (papertrack's version and a digest of the training side's
source: ``papertrack/*.py``, ``features/``, ``models/``, ``training/``, the shipped crosswalks) and the versions of
the libraries that fit the models. ``train`` tags each version it registers with it (:data:`FINGERPRINT_TAG`);
before training, when the champion's (or the challenger's) tag equals the fingerprint of this run, there is nothing
to learn that the store does not have: :func:`unchanged` says so and ``train`` exits 0 in seconds (``--force``
retrains). What is left out on purpose: ``--jobs`` (results do not depend on it), ``--no-register`` and ``--force``
themselves, and where the files are (their content counts, not their path).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path

from papertrack import registry, settings
from papertrack.features.ingest.columns import columns
from papertrack.store import Store
from papertrack.training.config import SweepConfig

FINGERPRINT_TAG = "input_fingerprint"
# options that do not change what is trained (or are not hashable): left out of the fingerprint
_NOT_INPUTS = {"data_paths", "crosswalks", "register", "force", "jobs", "extra_candidates"}
_CODE_FOLDERS = ("features", "models", "training")  # the training side; serving/ changes no model
_LIBRARIES = ("scikit-learn", "numpy", "scipy", "lightgbm", "mlflow")


@dataclass(frozen=True)
class Fingerprint:
    digest: str  # sha256 of ``parts``
    parts: dict[str, str]  # what went in: "data <name>" / "crosswalk <name>" -> sha256, "options", "code", ...

    def short(self) -> str:
        return self.digest[:12]


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while block := data.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def code_digest() -> str:
    """sha256 over the training side's source files (relative path and bytes), in a fixed order."""
    import papertrack

    package = Path(papertrack.__file__).resolve().parent
    files = [(path.name, path) for path in sorted(package.glob("*.py"))]
    for folder in _CODE_FOLDERS:
        root = (package / folder).resolve()
        files += [
            (f"{folder}/{path.relative_to(root)}", path)
            for path in sorted(root.rglob("*"))
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts
        ]
    digest = hashlib.sha256()
    for name, path in files:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _versions() -> str:
    found = []
    for name in _LIBRARIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def input_fingerprint(config: SweepConfig) -> Fingerprint | None:
    """The fingerprint of ``config``'s inputs; None when it cannot be told (candidates given as objects, which no
    file describes): such a sweep always trains."""
    import papertrack

    if config.extra_candidates:
        return None
    parts: dict[str, str] = {}
    for index, path in enumerate(config.paths):
        parts[f"data {index} {Path(path).name}"] = file_digest(Path(path))
    for path in config.crosswalk_paths:
        parts[f"crosswalk {Path(path).name}"] = file_digest(Path(path))
    options = {f.name: repr(getattr(config, f.name)) for f in fields(config) if f.name not in _NOT_INPUTS}
    options["columns"] = repr(columns())
    parts["options"] = json.dumps(options, sort_keys=True)
    parts["code"] = f"papertrack {papertrack.__version__} {code_digest()}"
    parts["libraries"] = _versions()
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return Fingerprint(digest, parts)


def unchanged(store: Store, fingerprint: Fingerprint | None) -> str | None:
    """The sentence to print when the champion (or the challenger) was trained from exactly these inputs, else
    None."""
    if fingerprint is None:
        return None
    for alias in (settings.CHAMPION, settings.CHALLENGER):
        version = registry.version_by_alias(store, alias)
        if version is not None and (version.tags or {}).get(FINGERPRINT_TAG) == fingerprint.digest:
            candidate = (version.tags or {}).get("candidate", "?")
            return (
                f"Nothing changed since {settings.MODEL_NAME} version {version.version} ({alias}, {candidate}): same "
                f"data files, options, code and crosswalks (fingerprint {fingerprint.short()}). Not retraining; "
                f"--force retrains."
            )
    return None


def tag_version(store: Store, version: str, fingerprint: Fingerprint | None) -> None:
    """Record on a registered version the fingerprint of the inputs it was trained from."""
    if fingerprint is not None:
        store.client().set_model_version_tag(settings.MODEL_NAME, version, FINGERPRINT_TAG, fingerprint.digest)
