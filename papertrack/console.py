"""The command line's consoles: the CLI owns the terminal.

Library code (features, models, training, serving's engines) never builds a console or prints: it logs to
``logging.getLogger(__name__)`` (under ``papertrack``) or returns what it has to say, and the command that called it
prints with these. ``papertrack.cli`` routes the ``papertrack`` loggers to ``err_console``.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

# stdout: results and reports. Piped or redirected (a log file), nothing is wrapped or cut: a line is as long as
# it is, a table at its natural width with plain lines instead of box drawing (no `--json` needed to read it)
_STDOUT_TTY = sys.stdout.isatty()
console = Console(width=None if _STDOUT_TTY else 100_000, soft_wrap=not _STDOUT_TTY)
# stderr: progress, warnings and the one `error:` line (never wrapped when it goes to a file)
err_console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())


def table(**options) -> Table:
    """A rich Table for ``console``: box lines on a terminal, plain space-separated columns elsewhere."""
    if not console.is_terminal:
        options = {**options, "box": None}
    return Table(**options)
