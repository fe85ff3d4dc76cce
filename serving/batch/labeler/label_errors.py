"""The labeler's fatal errors: bad options, unusable resume state, no model or no service."""

from __future__ import annotations

from papertrack.errors import NoModelError, PapertrackError


class LabelError(PapertrackError):
    """A fatal problem of a labeling run (bad options, unusable resume state, unreachable service)."""


class ModelMissing(LabelError, NoModelError):
    """No model to label with (no champion registered, or the service is unreachable)."""


class WorkerDied(LabelError):
    """A labeling worker process ended without answering (killed, out of memory): the run stops, resumable."""
