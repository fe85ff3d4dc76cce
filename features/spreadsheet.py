"""Text bound for a spreadsheet: every CSV papertrack writes (labeled rows, crosswalk matrices) goes through here."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run as a formula (OWASP)


def spreadsheet_safe(text: str) -> str:
    """``text`` with a ``'`` in front when it starts like a formula (``=``, ``+``, ``-``, ``@``, tab, CR), so a
    spreadsheet opening the CSV shows it as text instead of running it (OWASP's CSV-injection advice)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
