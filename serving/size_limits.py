"""The size limits of one paper and of one request, shared by the HTTP service (its request schemas) and batch
work (the labeler rejects what the service would reject, so labeling locally and through ``--url`` give the same
rows and errors)."""

from __future__ import annotations

MAX_ABSTRACT_CHARS = 20_000
"""Longest abstract accepted (characters). Real abstracts are under 5,000."""
MAX_TITLE_CHARS = 1_000
"""Longest title accepted (characters)."""
MAX_BATCH = 1_000
"""Most papers in one ``/predict_batch`` request; send larger dumps in several requests or use ``papertrack label``."""


def too_long(field: str, length: int, limit: int) -> str:
    """Why a paper's ``field`` (abstract, title) of ``length`` characters is refused (the service's 400, the labeler's
    error row: one wording)."""
    hint = ": paste the abstract, not the whole paper" if field == "abstract" else ""
    return f"{field} has {length:,} characters; at most {limit:,} are accepted{hint}"
