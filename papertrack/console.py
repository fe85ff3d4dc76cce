"""The command line's consoles: the CLI owns the terminal.

Library code (features, models, training, serving's engines) never builds a console or prints: it logs to
``logging.getLogger(__name__)`` (under ``papertrack``) or returns what it has to say, and the command that called it
prints with these. ``papertrack.cli`` routes the ``papertrack`` loggers to ``err_console``.
"""

from __future__ import annotations

import sys

from rich.console import Console

# stdout: results and reports; piped or redirected, lines keep up to 160 columns instead of rich's 80
console = Console(width=None if sys.stdout.isatty() else 160)
# stderr: progress, warnings and the one `error:` line
err_console = Console(stderr=True)
