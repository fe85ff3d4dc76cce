"""The one family of errors a papertrack user can cause and fix.

The CLI catches :class:`PapertrackError` (and only it): it prints the message and exits with status 2.
Anything else that escapes is a bug in papertrack and shows its traceback.
"""

from __future__ import annotations


class PapertrackError(Exception):
    """A problem the user can fix (bad input, missing model, bad option); the message says how."""


class UsageError(PapertrackError, ValueError):
    """An option or a combination of options that cannot work (e.g. an unknown candidate)."""


class NoModelError(PapertrackError):
    """No model to use: nothing registered behind the alias, not in the BentoML store, or unreachable."""
