"""The champion in the BentoML model store: imported from the MLflow registry, referenced by tag.

``import_champion`` copies the registered version behind an alias (default ``champion``) into the
BentoML model store with ``bentoml.mlflow.import_model``. The tag is deterministic,
``papertrack:v<version>-<run id prefix>``, so importing the same champion twice reuses the stored copy.
The service finds its model by the tag in ``$PAPERTRACK_BENTO_MODEL`` (set by ``papertrack serve`` and
``papertrack build``), else ``papertrack:latest`` — inside a built Bento the one packed model.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from papertrack import settings
from papertrack.errors import NoModelError

if TYPE_CHECKING:  # the store, the registry and their lookups import MLflow: only where they are used (the
    # service imports this module in `bentoml serve`'s own process, which never reads the registry)
    from papertrack.store import Store

BENTO_MODEL_NAME = "papertrack"
DEFAULT_MODEL_TAG = f"{BENTO_MODEL_NAME}:latest"
MLFLOW_MODEL_FOLDER = "mlflow_model"  # where bentoml.mlflow keeps the MLflow model inside a BentoML model

logger = logging.getLogger(__name__)


def model_tag() -> str:
    """The BentoML tag the service loads."""
    return settings.current().bento_model or DEFAULT_MODEL_TAG


def service_env(tag: str, workers: int = 1, access_log: bool = False, store: Store | None = None) -> dict[str, str]:
    """The environment for ``bentoml serve``/``bentoml build`` of the service with the model ``tag`` (and the
    MLflow ``store`` it came from: its PAPERTRACK_HOME, passed explicitly, e.g. the recorded store)."""
    settings.quiet_third_parties()
    env = {
        **os.environ,
        **(store.environment() if store is not None else {}),
        settings.BENTO_MODEL_ENV: tag,
        settings.WORKERS_ENV: str(workers),
        settings.ACCESS_LOG_ENV: str(access_log).lower(),
    }
    # a served model must not store the embedding of every distinct request abstract on disk for ever
    # (~5.5 kB each); the embedder's in-memory cache is bounded. An explicit setting wins.
    env.setdefault(settings.EMBEDDING_CACHE_ENV, "off")
    return env


@dataclass(frozen=True)
class Champion:
    name: str
    version: str
    run_id: str
    alias: str
    tags: dict[str, str]

    @property
    def model_uri(self) -> str:
        return f"models:/{self.name}/{self.version}"

    @property
    def bento_tag(self) -> str:
        return f"{BENTO_MODEL_NAME}:v{self.version}-{self.run_id[:12]}".lower()


def find_champion(store: Store, alias: str = settings.CHAMPION, name: str = settings.MODEL_NAME) -> Champion:
    """The registered version of ``store`` behind ``alias``; ``NoModelError`` (with what to do) when there is
    none. Asks MLflow (see :func:`cached_champion` for the version alone, without it)."""
    from papertrack import model_lookup

    version = model_lookup.registered_version(store, alias, name)  # the one message when there is none
    tags = dict(version.tags or {})
    run_id = tags.get("run_id") or version.run_id or ""
    return Champion(name, str(version.version), run_id, alias, tags)


def cached_champion(store: Store, alias: str = settings.CHAMPION, name: str = settings.MODEL_NAME) -> Champion | None:
    """The version behind ``alias`` as :mod:`papertrack.registry_cache` has it (MLflow's answer, while the store has
    not changed since), without its tags; None: ask MLflow."""
    from papertrack import registry_cache

    entry = registry_cache.lookup(store, name, alias)
    return None if entry is None else Champion(name, entry.version, entry.run_id, alias, {})


def import_champion(store: Store, alias: str = settings.CHAMPION, name: str = settings.MODEL_NAME):
    """Import ``models:/<name>@<alias>`` of ``store`` (the MLflow store) into the BentoML store (once per version)
    and return the bentoml.Model.

    The copy is checked against the artifact's manifest (format, sha256): a damaged stored copy is replaced by a
    fresh import from the registry; a model of another format, or a damaged one in the registry, is an
    :class:`~papertrack.models.manifest.ArtifactError` that says what to do. When the registry cache knows the
    version and its copy is in the BentoML store and sound, MLflow is not imported."""
    import bentoml
    from bentoml.exceptions import NotFound

    from papertrack.models.manifest import DamagedArtifact

    cached = cached_champion(store, alias, name)
    if cached is not None:
        try:
            model = bentoml.models.get(cached.bento_tag)
            check_stored(model)
            return model
        except (NotFound, DamagedArtifact):
            pass  # imported (again) from the registry below, which says what is wrong
    return _import_from_registry(store, alias, name)


def _import_from_registry(store: Store, alias: str, name: str):
    import bentoml
    from bentoml.exceptions import NotFound

    from papertrack import registry, registry_cache
    from papertrack.models.manifest import DamagedArtifact
    from papertrack.store import using

    before = registry_cache.state(store)  # the database as it is before MLflow is asked
    champion = find_champion(store, alias, name)
    try:
        model = bentoml.models.get(champion.bento_tag)
    except NotFound:
        pass
    else:
        try:
            check_stored(model)
        except DamagedArtifact as exc:
            logger.warning("%s; importing it again from %s", exc, champion.model_uri)
            bentoml.models.delete(champion.bento_tag)
        else:
            _remember(store, champion, before)
            return model
    metrics = registry.version_metrics(champion)
    with using(store):  # bentoml.mlflow.import_model reads MLflow's process-wide registry URI only
        _import(champion, name, alias, metrics)
    model = bentoml.models.get(champion.bento_tag)  # the copy in the store (import_model's is its staging copy)
    try:
        check_stored(model, champion.model_uri)
    except DamagedArtifact:  # the registry's own copy is damaged: keep no copy of it, name the registry's file
        bentoml.models.delete(champion.bento_tag)
        from papertrack.models.loading import load_predictor

        with using(store):
            load_predictor(champion.model_uri)  # the same check on the registry's copy; its error names the file
        raise
    _remember(store, champion, before)
    return model


def _remember(store: Store, champion: Champion, before) -> None:
    """Keep the version's registry folder and recorded digests in the registry cache (see
    :func:`papertrack.registry_cache.remember`: only if the store did not change since ``before``)."""
    from papertrack import registry_cache
    from papertrack.models.loading import pin, stored_at
    from papertrack.store import using

    try:
        with using(store):
            pinned = pin(champion.model_uri)
            folder = Path(stored_at(pinned.uri))
    except Exception as exc:  # only a cache: the next start asks MLflow again
        logger.debug("the registry cache is not updated: %s", exc)
        return
    registry_cache.remember_pinned(store, registry_cache.key(champion.name, champion.alias), pinned, folder, before)


def _import(champion: Champion, name: str, alias: str, metrics: dict[str, float]) -> None:
    import bentoml

    bentoml.mlflow.import_model(
        champion.bento_tag,
        champion.model_uri,
        labels={"registered_model": name, "version": champion.version, "alias": alias},
        metadata={
            "registered_model": name,
            "version": champion.version,
            "run_id": champion.run_id,
            "alias": alias,
            "model_uri": champion.model_uri,
            "candidate": champion.tags.get("candidate"),
            "data_digest": champion.tags.get("data_digest"),
            "metrics": metrics,
        },
    )


def check_stored(model, shown: str | None = None) -> None:
    """Check a stored copy's manifest (format version, sha256 of its files) before it is served."""
    from papertrack.models.manifest import ARTIFACTS_FOLDER, check  # not the artifact's module: no scikit-learn

    check(Path(model.path_of(MLFLOW_MODEL_FOLDER)) / ARTIFACTS_FOLDER, shown or str(model.tag))


def stored_model(tag: str | None = None):
    """The bentoml.Model for ``tag`` (default: ``model_tag()``) from the local store, or NoModelError."""
    import bentoml
    from bentoml.exceptions import NotFound

    tag = tag or model_tag()
    try:
        return bentoml.models.get(tag)
    except NotFound:
        raise NoModelError(missing_message(tag)) from None


def missing_message(tag: str) -> str:
    from papertrack.model_lookup import TRAIN_HINT

    return (
        f"model {tag} is not in the BentoML model store. {TRAIN_HINT}, then `papertrack serve` or "
        f"`papertrack build` (both import the champion into the store first)."
    )
