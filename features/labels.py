"""The label grammar: how a track is written and read — "Area · Subarea", "Area->Subarea" or "Area".

The one place that knows the separators, the canonical spelling and the known taxonomy (the
ICML/ICLR virtual-site topics: 8 areas and their subareas); ingestion, the label space and every
output use it. Spelling variants of a known track — any letter case, "→", "•", " - " or "->" as the
separator, zero-width characters, a BOM — are read as that track (``normalise_label``), so they
cannot split the taxonomy; an area outside the known taxonomy is kept as written and reported by
:func:`is_known_area` callers (a warning, not an error: other taxonomies are allowed).
"""

from __future__ import annotations

import re
import unicodedata

AREA_SEPARATOR = " · "
KNOWN_TAXONOMY: dict[str, tuple[str, ...]] = {
    "Applications": (
        "Chemistry and Drug Discovery", "Computer Vision", "Everything Else", "Genetics, Cell Biology, etc",
        "Genetics, Cell Biology, Health, etc",  # its 2025 name (training.renames maps the old one to it)
        "Health", "Language, Speech and Dialog", "Neuroscience, Cognitive Science", "Physics", "Robotics",
        "Time Series"),
    "Deep Learning": (
        "Algorithms", "Attention Mechanisms", "Everything Else", "Generative Models and Autoencoders",
        "Graph Neural Networks", "Large Language Models", "Other Representation Learning", "Robustness",
        "Self-Supervised Learning", "Sequential Models, Time series", "Theory"),
    "Miscellaneous Aspects of Machine Learning": (
        "Causality", "Everything Else", "General Machine Learning Techniques", "Kernel methods",
        "Online Learning, Active Learning and Bandits", "Representation Learning", "Scalable Algorithms",
        "Sequential, Network, and Time Series Modeling", "Supervised Learning",
        "Transfer, Multitask and Meta-learning", "Unsupervised and Semi-supervised Learning"),
    "Optimization": (
        "Bilevel optimization", "Convex", "Discrete and Combinatorial Optimization", "Everything Else",
        "First-order", "Global Optimization", "Large Scale, Parallel and Distributed", "Learning for Optimization",
        "Non-Convex", "Optimization and Learning under Uncertainty", "Sampling and Optimization", "Stochastic",
        "Zero-order and Black-box Optimization"),
    "Probabilistic Methods": (
        "Bayesian Models and Methods", "Everything Else", "Gaussian Processes", "Graphical Models",
        "Monte Carlo and Sampling Methods", "Spectral Methods", "Structure Learning", "Variational Inference"),
    "Reinforcement Learning": (
        "Batch/Offline", "Deep RL", "Everything Else", "Function Approximation", "Inverse", "Multi-agent", "Online",
        "Planning", "Policy Search"),
    "Social Aspects": (
        "Accountability, Transparency and Interpretability", "Everything Else",
        "Fairness, Equity, Justice and Safety", "Privacy-preserving Statistics and Machine Learning",
        "Trustworthy Machine Learning"),
    "Theory": (
        "Active Learning and Interactive Learning", "Deep Learning", "Domain Adaptation and Transfer Learning",
        "Everything Else", "Game Theory", "Learning Theory", "Miscellaneous Aspects of Machine Learning",
        "Online Learning and Bandits", "Optimization", "Probabilistic Methods", "Reinforcement Learning and Planning"),
}
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


def normalise_label(text: str) -> tuple[str, str | None]:
    """Split a label written as "Area · Subarea", "Area·Subarea", "Area -> Subarea", "Area → Subarea",
    "Area • Subarea", "Area - Subarea" or "Area"; a known area or track in any letter case gets its
    canonical spelling.

    Zero-width characters and a BOM are removed and inner whitespace runs collapse to one space.
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
    return area, _SUBAREA_BY_KEY.get((area, _key(parts[1])), parts[1])


def is_known_area(area: str) -> bool:
    """True for one of the 8 areas of the known taxonomy (canonical spelling, as ``normalise_label`` returns)."""
    return area in KNOWN_TAXONOMY


def format_label(area: str, subarea: str | None) -> str:
    """The canonical label text: "Area · Subarea", or "Area" when there is no subarea."""
    return f"{area}{AREA_SEPARATOR}{subarea}" if subarea else area
