"""The label grammar: how a track is written and read — "Area · Subarea", "Area->Subarea" or "Area".

The one place that knows the separators, the canonical spelling and the known taxonomy (the grammar's base: the
2024 ICML/ICLR virtual-site topics, 8 areas and their subareas; every other venue's names are learned from its
labeled data when it is read, :func:`learn_names`); ingestion, the label space and every
output use it. Spelling variants of a known track — any letter case, "→", "•", " - " or "->" as the
separator, zero-width characters, a BOM — are read as that track (``normalise_label``), so they
cannot split the taxonomy; an area outside the known taxonomy is kept as written and reported by
:func:`is_known_area` callers (a warning, not an error: other taxonomies are allowed). A subarea that is not
one of its known area's but is spelled close to one ("Theory · Learning Theroy") is kept too (a new track),
with a warning naming the nearest known track (:func:`nearest_known_label`), once per label and process.
"""

from __future__ import annotations

import difflib
import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

AREA_SEPARATOR = " · "
KNOWN_TAXONOMY: dict[str, tuple[str, ...]] = {
    "Applications": (
        "Chemistry and Drug Discovery",
        "Computer Vision",
        "Everything Else",
        "Genetics, Cell Biology, etc",
        "Genetics, Cell Biology, Health, etc",  # its 2025 name (training.renames maps the old one to it)
        "Health",
        "Language, Speech and Dialog",
        "Neuroscience, Cognitive Science",
        "Physics",
        "Robotics",
        "Time Series",
    ),
    "Deep Learning": (
        "Algorithms",
        "Attention Mechanisms",
        "Everything Else",
        "Generative Models and Autoencoders",
        "Graph Neural Networks",
        "Large Language Models",
        "Other Representation Learning",
        "Robustness",
        "Self-Supervised Learning",
        "Sequential Models, Time series",
        "Theory",
    ),
    "Miscellaneous Aspects of Machine Learning": (
        "Causality",
        "Everything Else",
        "General Machine Learning Techniques",
        "Kernel methods",
        "Online Learning, Active Learning and Bandits",
        "Representation Learning",
        "Scalable Algorithms",
        "Sequential, Network, and Time Series Modeling",
        "Supervised Learning",
        "Transfer, Multitask and Meta-learning",
        "Unsupervised and Semi-supervised Learning",
    ),
    "Optimization": (
        "Bilevel optimization",
        "Convex",
        "Discrete and Combinatorial Optimization",
        "Everything Else",
        "First-order",
        "Global Optimization",
        "Large Scale, Parallel and Distributed",
        "Learning for Optimization",
        "Non-Convex",
        "Optimization and Learning under Uncertainty",
        "Sampling and Optimization",
        "Stochastic",
        "Zero-order and Black-box Optimization",
    ),
    "Probabilistic Methods": (
        "Bayesian Models and Methods",
        "Everything Else",
        "Gaussian Processes",
        "Graphical Models",
        "Monte Carlo and Sampling Methods",
        "Spectral Methods",
        "Structure Learning",
        "Variational Inference",
    ),
    "Reinforcement Learning": (
        "Batch/Offline",
        "Deep RL",
        "Everything Else",
        "Function Approximation",
        "Inverse",
        "Multi-agent",
        "Online",
        "Planning",
        "Policy Search",
    ),
    "Social Aspects": (
        "Accountability, Transparency and Interpretability",
        "Everything Else",
        "Fairness, Equity, Justice and Safety",
        "Privacy-preserving Statistics and Machine Learning",
        "Trustworthy Machine Learning",
    ),
    "Theory": (
        "Active Learning and Interactive Learning",
        "Deep Learning",
        "Domain Adaptation and Transfer Learning",
        "Everything Else",
        "Game Theory",
        "Learning Theory",
        "Miscellaneous Aspects of Machine Learning",
        "Online Learning and Bandits",
        "Optimization",
        "Probabilistic Methods",
        "Reinforcement Learning and Planning",
    ),
}
# the names every other taxonomy knows come from its data: the labels of the labeled files read (learn_names)
KNOWN_AREAS = tuple(KNOWN_TAXONOMY)
SEPARATORS = ("·", "->", "→", "•", "›")  # plus " - " / " – " / " — " with spaces around
_LABEL_SEPARATOR = re.compile(r"\s*(?:·|->|→|•|›)\s*")
_DASH_SEPARATOR = re.compile(r"\s+[-–—]\s+")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\u00ad"), None)  # zero-width chars, soft hyphen


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


_AREA_BY_KEY = {_key(area): area for area in KNOWN_AREAS}
_SUBAREA_BY_KEY = {(area, _key(sub)): sub for area, subs in KNOWN_TAXONOMY.items() for sub in subs}


def clean_label_text(text: str) -> str:
    """NFC, without zero-width characters or a BOM, whitespace runs collapsed to one space."""
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE).replace("\ufeff", " ")
    return " ".join(text.split())


def normalise_label(text: str, warn: bool = True) -> tuple[str, str | None]:
    """Split a label written as "Area · Subarea", "Area·Subarea", "Area -> Subarea", "Area → Subarea",
    "Area • Subarea", "Area - Subarea" or "Area"; a known area or track in any letter case gets its
    canonical spelling.

    Zero-width characters and a BOM are removed and inner whitespace runs collapse to one space. A subarea
    that is not its known area's but close to one of them is logged (a warning naming the nearest known
    track, once per label) unless ``warn`` is false.
    Raises ``ValueError`` for an empty label, an empty area or subarea, or several separators.
    """
    cleaned = clean_label_text(text)
    if not cleaned:
        raise ValueError("empty label")
    parts = _LABEL_SEPARATOR.split(cleaned)
    if len(parts) == 1:
        parts = _DASH_SEPARATOR.split(cleaned)
    if len(parts) > 2:
        raise ValueError("more than one separator (expected 'Area · Subarea' or 'Area')")
    if not parts[0]:
        raise ValueError("empty area before the separator")
    area = _AREA_BY_KEY.get(_key(parts[0]), parts[0])
    if len(parts) == 1:
        return area, None
    if not parts[1]:
        raise ValueError("empty subarea after the separator")
    subarea = _SUBAREA_BY_KEY.get((area, _key(parts[1])))
    if subarea is None:
        subarea = parts[1]
        if warn and area in KNOWN_TAXONOMY:
            _warn_unknown_subarea(area, subarea)
    return area, subarea


SUGGESTION_CUTOFF = 0.75  # difflib similarity a known name needs to be offered as "did you mean"
_warned: set[tuple[str, str]] = set()
_deferred: list[tuple[str, str]] | None = None  # while reading labeled files: the warnings not yet given


def learn_names(labels: Iterable[str]) -> None:
    """Make ``labels`` (canonical "Area · Subarea" or "Area", read from labeled data) known names: a venue's names
    come from its data, so none of them is taken for a misspelling of another's (for the rest of the process)."""
    global KNOWN_AREAS
    for label in labels:
        area, subarea = normalise_label(label, warn=False)
        subs = KNOWN_TAXONOMY.get(area, ())
        if subarea is not None and subarea not in subs:
            KNOWN_TAXONOMY[area] = tuple(sorted({*subs, subarea}))
            _SUBAREA_BY_KEY[(area, _key(subarea))] = subarea
        elif area not in KNOWN_TAXONOMY:
            KNOWN_TAXONOMY[area] = subs
        _AREA_BY_KEY.setdefault(_key(area), area)
    KNOWN_AREAS = tuple(KNOWN_TAXONOMY)


@contextmanager
def warnings_after_reading() -> Iterator[list[tuple[str, str]]]:
    """Within: "did you mean" warnings wait (in the yielded list); the caller learns the data's names
    (:func:`learn_names`), then :func:`give_warnings` gives the ones still unknown."""
    global _deferred
    outer, _deferred = _deferred, []
    try:
        yield _deferred
    finally:
        _deferred = outer


def give_warnings(pending: Iterable[tuple[str, str]]) -> None:
    """The waiting warnings of subareas that are still not known names."""
    for area, subarea in pending:
        if subarea not in KNOWN_TAXONOMY.get(area, ()):
            _warn_unknown_subarea(area, subarea)


def nearest_known_label(text: str) -> str | None:
    """The known track (or area) spelled closest to ``text`` when it is not itself known, else None:
    "Theory · Learning Theroy" -> "Theory · Learning Theory", "Theroy" -> "Theory"."""
    try:
        area, subarea = normalise_label(text, warn=False)
    except ValueError:
        return None
    if area not in KNOWN_TAXONOMY:
        areas = _close(area, KNOWN_AREAS)
        if areas is None:
            return None
        if subarea is None:
            return areas
        area = areas
    elif subarea is None or subarea in KNOWN_TAXONOMY[area]:
        return None
    if subarea is None:
        return area
    match = _close(subarea, KNOWN_TAXONOMY[area])
    return format_label(area, match) if match else None


def _close(name: str, known) -> str | None:
    keys = {_key(k): k for k in known}
    found = difflib.get_close_matches(_key(name), list(keys), n=1, cutoff=SUGGESTION_CUTOFF)
    return keys[found[0]] if found else None


def _warn_unknown_subarea(area: str, subarea: str) -> None:
    if _deferred is not None:
        _deferred.append((area, subarea))
        return
    if (area, subarea) in _warned:
        return
    _warned.add((area, subarea))
    match = _close(subarea, KNOWN_TAXONOMY[area])
    if match is not None:
        log.warning(
            "label %r: %r is not a subarea of %s; did you mean %r? (kept as a track of its own)",
            format_label(area, subarea),
            subarea,
            area,
            format_label(area, match),
        )


def is_known_area(area: str) -> bool:
    """True for an area of the known taxonomy (canonical spelling, as ``normalise_label`` returns): the built-in
    grammar's 8 and those learned from labeled data (:func:`learn_names`)."""
    return area in KNOWN_TAXONOMY


def canonical_label(text: str, warn: bool = False) -> str:
    """``text`` in its canonical spelling ("Area · Subarea"); ``ValueError`` as :func:`normalise_label`."""
    return format_label(*normalise_label(text, warn=warn))


def format_label(area: str, subarea: str | None) -> str:
    """The canonical label text: "Area · Subarea", or "Area" when there is no subarea."""
    return f"{area}{AREA_SEPARATOR}{subarea}" if subarea else area
