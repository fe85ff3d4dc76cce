"""Reading paper abstracts: the package that ``features/ingest.py`` became (split into modules next)."""

from papertrack.features.ingest.decoding import *  # noqa: F403
