"""The one way serving code gets a registered model: :func:`load_model` (the local labeler, the Spark engine,
suggest and ``papertrack.load()``), with one message saying how to get a model when there is none.

The HTTP service loads its model from the BentoML store instead (:mod:`papertrack.serving.http.bento_store`),
where ``papertrack serve``/``build`` imported it from the same registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from papertrack import model_lookup
from papertrack.errors import NoModelError
from papertrack.model_lookup import MODEL_OPTION, TRAIN_HINT, first_line

if TYPE_CHECKING:
    from papertrack import registry_cache
    from papertrack.models.artifact import TrackPredictor
    from papertrack.store import Store

__all__ = ["TRAIN_HINT", "LoadedModel", "describe_taxonomies", "load_model"]


@dataclass(frozen=True)
class LoadedModel:
    predictor: TrackPredictor
    path: str  # where it was loaded from: the URI, or the local folder it was downloaded to
    folder: Path | None = None  # the local model folder its files were read from

    @property
    def metadata(self) -> Any:
        """Its MLflow metadata (mlflow.models.Model: MLmodel's signature, flavors), read when asked (imports
        MLflow)."""
        from papertrack.models.loading import metadata

        return metadata(self.folder or Path(self.path))


def load_model(
    model_uri: str,
    store: Store,
    *,
    error: type[NoModelError] = NoModelError,
    download_to: Path | None = None,
    option: str = MODEL_OPTION,
) -> LoadedModel:
    """The model behind ``model_uri`` (an MLflow model URI, or a short form: ``challenger``, ``3``; see
    :mod:`papertrack.model_lookup`) from ``store`` (:func:`papertrack.store.open`, ``create=False``). With
    ``download_to``, the model is downloaded there first and loaded from that folder (an alias is resolved once: a
    Spark job's executors load the very same copy). ``error`` (a NoModelError) with the lookup's one message when it
    cannot be loaded; ``option``: how the caller names the reference in that message's fix.

    A registered version MLflow was asked for before, in a store that has not changed since, is loaded without MLflow
    (:mod:`papertrack.registry_cache`: its folder and recorded digests); every file is checked the same way."""
    from papertrack import registry_cache

    target = model_lookup.parse(model_uri)
    if download_to is None and target.name is not None:
        loaded = _from_cache(store, target)
        if loaded is not None:
            return loaded
    before = registry_cache.state(store)  # the database as it is before MLflow is asked
    from mlflow.exceptions import MlflowException

    from papertrack.models.loading import load_checked, load_pinned, pin
    from papertrack.models.manifest import check_model_files
    from papertrack.store import using

    try:
        target = model_lookup.resolve(store, target, option)
    except NoModelError as exc:
        raise error(str(exc)) from None
    try:
        # MLflow resolves models:/ and runs:/ URIs on its process-wide store only
        with using(store):
            if download_to is not None:  # the copy the Spark executors load: checked here, on the driver
                from mlflow.artifacts import download_artifacts

                pinned = pin(target.uri)  # an alias resolved once: the checked copy is the loaded one
                path = download_artifacts(artifact_uri=pinned.uri, dst_path=str(download_to))
                if pinned.expected is not None:
                    check_model_files(Path(path), pinned.expected, pinned.uri)
                return LoadedModel(load_checked(Path(path), None, path), path, Path(path))
            pinned = pin(target.uri)
            predictor, folder, stored = load_pinned(pinned, target.uri)
    except (MlflowException, OSError) as exc:
        raise error(model_lookup.missing(store, target, first_line(exc), option)) from None
    if str(folder) == stored:  # the artifact store's own folder, not a temporary download
        asked = registry_cache.key(target.name or "", target.alias, target.version)
        registry_cache.remember_pinned(store, asked, pinned, folder, before)
    return LoadedModel(predictor, target.uri, folder)


def describe_taxonomies(model_uri: str, store: Store) -> list[dict]:
    """What the model answers in, per taxonomy (:func:`papertrack.models.taxonomy_summary.describe`): read from the
    summary saved with it when the registry cache knows its files (nothing unpickled, no scikit-learn imported), else
    from the predictor :func:`load_model` loads (a model saved before the summary existed, or the store changed)."""
    from papertrack.models import taxonomy_summary

    target = model_lookup.parse(model_uri)
    entry = _cached(store, target)
    if entry is not None:
        found = taxonomy_summary.read(entry.folder, entry.files, target.uri)
        if found is not None:
            return found
    return taxonomy_summary.describe(load_model(model_uri, store).predictor)


def _cached(store: Store, target: model_lookup.Target) -> registry_cache.Entry | None:
    """The registry cache's entry for ``target`` when it has one whose folder is there, else None (ask MLflow)."""
    from papertrack import registry_cache

    if target.name is None:
        return None
    entry = registry_cache.lookup(store, target.name, target.alias, target.version)
    return entry if entry is not None and entry.folder.is_dir() else None


def _from_cache(store: Store, target: model_lookup.Target) -> LoadedModel | None:
    """The model from the registry cache's folder and digests, or None (ask MLflow): not cached, the store changed,
    or its files cannot be read (MLflow's path then says what is wrong)."""
    from papertrack.models.loading import load_checked

    entry = _cached(store, target)
    if entry is None:
        return None
    try:
        predictor = load_checked(entry.folder, entry.files, target.uri, str(entry.folder))
    except OSError:
        return None
    return LoadedModel(predictor, target.uri, entry.folder)
