"""The lines the serving commands print (results on stdout; ``note:``/``error:`` on stderr), on the CLI's consoles
(:mod:`papertrack.console`). Used by the command modules of both the HTTP service and batch work."""

from __future__ import annotations

from rich.text import Text

from papertrack.console import console, err_console


def say(message: str) -> None:
    """A result line on stdout, as written (no markup, no highlighting, not wrapped)."""
    console.print(message, soft_wrap=True, markup=False, highlight=False)


def note(message: object) -> None:
    """A ``note:`` line on stderr."""
    err_console.print(Text.assemble(("note:", "yellow"), " ", str(message)), soft_wrap=True)


def error(message: object) -> None:
    """An ``error:`` line on stderr (for the exits that are not a PapertrackError, e.g. exit status 3)."""
    err_console.print(Text.assemble(("error:", "red"), " ", str(message)), soft_wrap=True)


def status(message: str) -> None:
    """A status line on stderr, as written (e.g. ``Labeling with ...``)."""
    err_console.print(message, soft_wrap=True, markup=False, highlight=False)
