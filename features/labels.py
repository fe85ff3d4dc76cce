"""The label grammar: how a track is written and read — "Area · Subarea", "Area->Subarea" or "Area".

The one place that knows the separators, the canonical spelling and the known areas of the
ICML/ICLR virtual-site taxonomy; ingestion, the label space and every output use it.
"""

from __future__ import annotations

import re

AREA_SEPARATOR = " · "
KNOWN_AREAS = (
    "Applications",
    "Deep Learning",
    "Miscellaneous Aspects of Machine Learning",
    "Optimization",
    "Probabilistic Methods",
    "Reinforcement Learning",
    "Social Aspects",
    "Theory",
)
_LABEL_SEPARATOR = re.compile(r"\s*(?:·|->)\s*")


def normalise_label(text: str) -> tuple[str, str | None]:
    """Split a label written as "Area · Subarea", "Area·Subarea", "Area -> Subarea" or "Area".

    Surrounding whitespace and a BOM are removed and inner whitespace runs collapse to one space.
    Raises ``ValueError`` for an empty label, an empty area or subarea, or several separators.
    """
    cleaned = " ".join(text.replace("\ufeff", " ").split())
    if not cleaned:
        raise ValueError("empty label")
    parts = _LABEL_SEPARATOR.split(cleaned)
    if len(parts) > 2:
        raise ValueError("more than one separator (expected 'Area · Subarea' or 'Area')")
    if not parts[0]:
        raise ValueError("empty area before the separator")
    if len(parts) == 1:
        return parts[0], None
    if not parts[1]:
        raise ValueError("empty subarea after the separator")
    return parts[0], parts[1]


def format_label(area: str, subarea: str | None) -> str:
    """The canonical label text: "Area · Subarea", or "Area" when there is no subarea."""
    return f"{area}{AREA_SEPARATOR}{subarea}" if subarea else area
