"""Which registered model a command means, and the one message when there is no such model.

Every command that uses a model asks here: ``label``/``suggest`` ``--model``, ``serve``/``build`` ``--alias`` and
``papertrack.load()``. A reference is an MLflow model URI (``models:/papertrack@champion``, ``models:/papertrack/3``,
``runs:/…``, ``file:…``), a local folder written as a path (``./champion``, ``/abs/model``, ``~/model``) or a short form
of a registry reference: ``challenger`` (an alias of ``papertrack``), ``3`` (one of its versions), ``name@alias``.
Names come before paths: a bare ``champion`` or ``3`` always means the registry, even when a folder of that name is in
the working directory (a data bundle unpacked there must not be loaded, and its pickle run, by ``--model champion``);
such a folder gets a warning saying how to name it. When the model, alias or version does not exist,
:class:`~papertrack.errors.NoModelError` says, in one line, what was asked, where it looked, what the store has
(names, aliases, versions) and the fix::

    cannot load models:/papertrack@prod from /p/.papertrack (PAPERTRACK_HOME): model 'papertrack' has no alias
    'prod'. Registered: papertrack (aliases champion = version 2, challenger = version 3; versions 1-3). Pass one of
    them, e.g. --model champion, or run `papertrack train` to register a new version.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from papertrack import settings
from papertrack.errors import NoModelError
from papertrack.store import Store

logger = logging.getLogger(__name__)

TRAIN_HINT = "Run `papertrack train` to train and register a champion"
# how each caller names the reference in the fix ("e.g. --model champion")
MODEL_OPTION, ALIAS_OPTION, API_ARGUMENT = "--model", "--alias", "papertrack.load()"


@dataclass(frozen=True)
class Target:
    """What a reference means: the URI MLflow loads, and the registered name/alias/version when it names one."""

    asked: str
    uri: str
    name: str | None = None
    alias: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class Registered:
    """One registered model of the store: its aliases (alias -> version) and versions (ascending)."""

    name: str
    aliases: dict[str, str] = field(default_factory=dict)
    versions: tuple[int, ...] = ()

    def describe(self) -> str:
        parts = []
        if self.aliases:
            parts.append("aliases " + ", ".join(f"{a} = version {v}" for a, v in sorted(self.aliases.items())))
        if self.versions:
            parts.append(("version " if len(self.versions) == 1 else "versions ") + _ranges(self.versions))
        return f"{self.name} ({'; '.join(parts) or 'no versions'})"


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def parse(reference: str) -> Target:
    """The :class:`Target` of a reference (no store access; see the module doc for the short forms)."""
    text = reference.strip()
    if match := re.fullmatch(r"models:/([^/@]+)@([^/]+)", text):
        return Target(reference, text, match[1], alias=match[2])
    if match := re.fullmatch(r"models:/([^/@]+)/(\d+)", text):
        return Target(reference, text, match[1], version=match[2])
    if re.match(r"[A-Za-z][\w+.-]*:/", text) or _is_path(text):
        return Target(reference, str(Path(text).expanduser()) if text.startswith("~") else text)  # MLflow reads it
    target = None
    if text.isdigit():
        target = Target(reference, f"models:/{settings.MODEL_NAME}/{text}", settings.MODEL_NAME, version=text)
    elif (match := re.fullmatch(r"([^/@\s]+)@([^/@\s]+)", text)) and _WORD.fullmatch(match[2]):
        target = Target(reference, f"models:/{match[1]}@{match[2]}", match[1], alias=match[2])
    elif _WORD.fullmatch(text):
        target = Target(reference, f"models:/{settings.MODEL_NAME}@{text}", settings.MODEL_NAME, alias=text)
    if target is None:
        return Target(reference, text)
    if Path(text).exists():
        logger.warning(
            "%r means %s in the registry, not the folder ./%s in %s; to load that folder, pass ./%s",
            text,
            target.uri,
            text,
            Path.cwd(),
            text,
        )
    return target


def _is_path(text: str) -> bool:
    """A reference written as a path: it has a folder separator or starts with ``.`` or ``~`` (``./champion``,
    ``/abs/model``, ``~/model``, ``..``). A bare name never is, even when a folder of that name exists."""
    return "/" in text or "\\" in text or text.startswith((".", "~"))


def registered_models(store: Store) -> list[Registered]:
    """Every registered model of ``store``, with its aliases and versions."""
    c = store.client()
    found = []
    for model in c.search_registered_models():
        versions = sorted(int(v.version) for v in c.search_model_versions(f"name='{model.name}'"))
        found.append(Registered(model.name, {a: str(v) for a, v in (model.aliases or {}).items()}, tuple(versions)))
    return sorted(found, key=lambda m: m.name)


def resolve(store: Store, reference: str | Target, option: str = MODEL_OPTION) -> Target:
    """The target of ``reference`` (or of a :func:`parse` d one) in ``store``, checked: NoModelError (the one
    message) when it names a registered model, alias or version that does not exist. Other URIs are left to MLflow."""
    target = reference if isinstance(reference, Target) else parse(reference)
    if target.name is None:
        return target
    models = {m.name: m for m in registered_models(store)}
    model = models.get(target.name)
    if model is None:
        close = difflib.get_close_matches(target.name, list(models), n=1)
        problem = f"no model is registered as {target.name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    elif target.alias is not None and target.alias not in model.aliases:
        close = difflib.get_close_matches(target.alias, list(model.aliases), n=1)
        problem = f"model {target.name!r} has no alias {target.alias!r}" + (
            f" (did you mean {close[0]!r}?)" if close else ""
        )
    elif target.version is not None and int(target.version) not in model.versions:
        problem = f"model {target.name!r} has no version {target.version}"
    else:
        return target
    raise NoModelError(missing(store, target, problem, option, list(models.values())))


def registered_version(store: Store, alias: str, name: str = settings.MODEL_NAME, option: str = ALIAS_OPTION) -> Any:
    """The ModelVersion behind ``name@alias`` in ``store``; NoModelError with the one message when there is
    none."""
    target = resolve(store, f"models:/{name}@{alias}", option)
    return store.client().get_model_version_by_alias(name, target.alias)


def missing(store: Store, target: Target, problem: str, option: str, models: list[Registered] | None = None) -> str:
    """The one message: what was asked, where, what is wrong, what the store has, and the fix."""
    if models is None:
        try:
            models = registered_models(store)
        except Exception:  # the store itself fails: the problem already says what went wrong
            models = []
    asked = target.uri if target.uri == target.asked.strip() else f"{target.asked.strip()} ({target.uri})"
    head = f"cannot load {asked} from {store.where()}: {problem.rstrip('.')}."
    if not any(m.versions for m in models):
        return (
            f"{head} Nothing is registered in this store yet. {TRAIN_HINT} (or set {settings.HOME_ENV} / "
            f"{settings.TRACKING_URI_ENV} to the store that has one)."
        )
    listed = "; ".join(m.describe() for m in models)
    example = _example(models, option)
    fix = f"Pass one of them, e.g. {example}, or run" if example else "Run"
    return f"{head} Registered: {listed}. {fix} `papertrack train` to register a new version."


def _example(models: list[Registered], option: str) -> str | None:
    """A reference that exists, as the caller would pass it (``--model champion``, ``--alias champion``, ...)."""
    ours = next((m for m in models if m.name == settings.MODEL_NAME), None)
    model = ours or next(m for m in models if m.versions)
    prefix = "" if model.name == settings.MODEL_NAME else f"{model.name}@"
    alias = settings.CHAMPION if settings.CHAMPION in model.aliases else min(model.aliases, default=None)
    if option == ALIAS_OPTION:
        return f"--alias {alias}" if alias and ours is not None else None
    reference = f"{prefix}{alias}" if alias else f"models:/{model.name}/{model.versions[-1]}"
    if option == API_ARGUMENT:
        return f"papertrack.load({reference!r})"
    return f"{option} {reference}"


def _ranges(numbers: tuple[int, ...]) -> str:
    """``1, 2, 3, 5`` -> ``1-3, 5``."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
