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


def operational_problem(exc: BaseException) -> str | None:
    """One line for a failure of the machine rather than of papertrack — a full disk, a store another process has
    locked, a working folder that was deleted — found anywhere in ``exc``'s chain; None for anything else (a bug:
    it keeps its traceback)."""
    import errno
    import os

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f" writing {current.filename}" if current.filename else ""
            return (
                f"no space left on the device{where}: free some space (df -h) and run the command again; "
                f"nothing that was complete before is lost"
            )
        if "database is locked" in str(current):
            return (
                f"the store's database is locked by another process{_holders()}: wait for it to finish (a "
                f"`papertrack train`, `mlflow ui`, ...) and run the command again"
            )
        if isinstance(current, FileNotFoundError) and not working_folder_exists():
            return (
                f"the working folder no longer exists (it was deleted or moved: {os.environ.get('PWD', '?')}); cd "
                f"to a folder that exists and run the command again"
            )
        current = current.__cause__ or current.__context__
    return None


def working_folder_exists() -> bool:
    import os

    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def _holders() -> str:
    """`` (held by pid N: papertrack train)`` for the processes that have the store's database open (best effort)."""
    try:
        import os

        import psutil

        from papertrack import settings

        database = str(settings.current().home / settings.STORE_DATABASE)
        found = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            try:
                if process.pid != os.getpid() and any(f.path == database for f in process.open_files()):
                    found.append(f"pid {process.pid}: {' '.join(process.info['cmdline'] or [])[:60]}")
            except psutil.Error:
                continue
        return f" (held by {'; '.join(found[:3])})" if found else ""
    except Exception:  # only for the message
        return ""
