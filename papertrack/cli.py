"""The ``papertrack`` command line.

The CLI owns the console: library code (papertrack's and the libraries it uses) reports through ``logging`` and
``warnings``, and :func:`quiet_libraries` decides what reaches the terminal — by default papertrack's own warnings
(``warning: ...``) and libraries' warnings and errors, without MLflow's INFO lines, artifact download bars, model
weight bars or the known notices that say nothing to a papertrack user; ``--verbose`` shows them all.

Help text is plain (click's formatter, no Rich markup): ``[spark]`` prints as written, long defaults wrap instead
of being cut, and placeholders read ``PATH``/``TEXT``/``INTEGER`` (not ``<list[Path]>`` or ``{dumps}``).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

import typer
from rich.text import Text
from typer.core import TyperArgument, TyperGroup, TyperOption

from papertrack import gc_command, settings, tracking_server, ui_command
from papertrack.console import err_console
from papertrack.errors import NoModelError, PapertrackError, operational_problem, working_folder_exists
from papertrack.serving import taxonomies_command
from papertrack.serving.batch import label_command, suggest_command
from papertrack.serving.http import serve_command
from papertrack.training import commands as training_commands
from papertrack.training import crosswalk_command

# Environment that keeps libraries quiet unless --verbose (read by the libraries when they start or at each call;
# also inherited by the processes a command starts: the server, spark-submit, pip/bentoml in build).
QUIET_ENV = {
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",  # "Downloading artifacts: 100%|...|" on every model load
    "MLFLOW_LOGGING_LEVEL": "WARNING",  # MLflow's INFO lines (database tables, input example validation)
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # sentence-transformers/transformers weight-loading bars
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
QUIET_LOGGERS = (
    "mlflow",
    "alembic",
    "bentoml",
    "sentence_transformers",
    "transformers",
    "urllib3",
    "httpx",
    "py4j",
    "matplotlib",
)
# Known notices with nothing for a papertrack user to do (papertrack logs its own models on purpose this way).
NOISY_MESSAGES = (
    "Passing a Python object as `python_model`",  # MLflow: the pyfunc is saved with cloudpickle
    "Hint: Inferred schema contains integer column",  # MLflow: an input example's int columns (ours have none)
    "The specified dataset source can be interpreted in multiple ways",
    "Operation with range is deprecated",
    # joblib/loky: a sweep worker whose memory grew (its leak check) is replaced after its task; no job is lost
    "A worker stopped while some jobs were given to the executor",
)


class _DropNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to hide
            return True
        return not any(noise in message for noise in NOISY_MESSAGES)


class _LevelPrefix(logging.Formatter):
    """papertrack's own log lines as the CLI writes its notes: ``warning: ...``, ``error: ...``."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            text = f"{record.levelname.lower()}: {text}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _Stderr(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (a test runner swaps it)."""

    _papertrack_cli = True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


_NOISE_FILTER = _DropNoise()


def quiet_libraries(verbose: bool = False) -> None:
    """Route papertrack's log records to stderr and keep the libraries quiet (unless ``verbose``)."""
    ours = logging.getLogger("papertrack")
    ours.setLevel(logging.INFO if verbose else logging.WARNING)
    if not any(getattr(h, "_papertrack_cli", False) for h in ours.handlers):
        handler = _Stderr()
        handler.setFormatter(_LevelPrefix())
        ours.addHandler(handler)
    if verbose:
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET or logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
    # MLflow's modules log through their own loggers, which reach MLflow's handler: filter where they are created
    for name in ("mlflow", "mlflow.pyfunc", "mlflow.models", "mlflow.models.model", "mlflow.types.utils"):
        if _NOISE_FILTER not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_NOISE_FILTER)
    for message in NOISY_MESSAGES:
        warnings.filterwarnings("ignore", message=f".*{_escape(message)}")


def _escape(text: str) -> str:
    import re

    return re.escape(text)


# --- help text: plain, readable at 80 columns ------------------------------------------------------------------

_PLAIN_TYPES = {
    "path": "PATH",
    "str": "TEXT",
    "int": "INTEGER",
    "int range": "INTEGER",
    "float": "NUMBER",
    "float range": "NUMBER",
    "datetime": "DATE",
    "bool": "BOOLEAN",
}


def _plain_type(display: str | None) -> str | None:
    """``<list[Path]>`` -> ``PATH``, ``<int range>`` -> ``INTEGER``, ``<str>`` -> ``TEXT``."""
    if not display:
        return display
    inner = display.strip("<>")
    inner = inner.removeprefix("list[").removesuffix("]")
    return _PLAIN_TYPES.get(inner.lower(), inner.upper())


class _PlainArgument(TyperArgument):
    """An argument shown as ``DUMP...`` in the usage line and the help (not ``{dumps}...`` and ``<list[Path]>``)."""

    def _plain_name(self) -> str:
        return (self.metavar or self.name or "ARG").upper()

    def _rich_display_name(self) -> str:
        return self._plain_name() + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"

    def display_type_rich(self, ctx) -> str | None:
        return None


class _PlainOption(TyperOption):
    """An option's value shown as ``PATH``, ``TEXT``, ``INTEGER`` (not ``<list[Path]>``, ``<str>``)."""

    def display_type_rich(self, ctx) -> str | None:
        if self.metavar is not None:
            return self.metavar
        return _plain_type(self.display_type(ctx))


def _plain_help(command) -> None:
    """Give every parameter of ``command`` (and its subcommands) the plain help display."""
    for param in getattr(command, "params", ()):
        if type(param) is TyperArgument:
            param.__class__ = _PlainArgument
        elif type(param) is TyperOption:
            param.__class__ = _PlainOption
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


class _Commands(TyperGroup):
    """Every command: a PapertrackError (the user's to fix) is one ``error:`` line and exit status 2 (1 when
    there is no model to use); any other exception is a bug in papertrack and keeps its traceback. Help text of
    every command is plain (:func:`_plain_help`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _plain_help(self)

    def format_commands(self, ctx, formatter) -> None:
        """Each command's whole first sentence, wrapped (click cuts it at the column's width with "...")."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx):
        if not _working_folder_exists():
            raise typer.Exit(2)
        try:
            return super().invoke(ctx)
        except PapertrackError as exc:
            err_console.print(Text.assemble(("error:", "red"), " ", str(exc)), soft_wrap=True)
            raise typer.Exit(1 if isinstance(exc, NoModelError) else 2) from None
        except Exception as exc:  # a full disk, a locked store, a deleted working folder: one line (-v: traceback)
            problem = operational_problem(exc)
            if problem is None:
                raise
            if logging.getLogger("papertrack").isEnabledFor(logging.INFO):  # papertrack -v
                err_console.print_exception()
            err_console.print(Text.assemble(("error:", "red"), " ", problem), soft_wrap=True)
            raise typer.Exit(2) from None


def _working_folder_exists() -> bool:
    """A command started in a folder that was deleted meanwhile stops at once with one line (every command resolves
    paths and the store from it)."""
    if working_folder_exists():
        return True
    err_console.print(
        Text.assemble(("error:", "red"), " ", operational_problem(FileNotFoundError()) or ""), soft_wrap=True
    )
    return False


app = typer.Typer(
    name="papertrack",
    cls=_Commands,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    help="Tell which conference track (Area · Subarea) an ML paper belongs to, from its abstract.",
)


def _version(value: bool) -> None:
    if value:
        from papertrack import __version__

        typer.echo(f"papertrack {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print papertrack's version and exit."
    ),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="Show the libraries' logs, warnings and progress bars (MLflow, "
        "BentoML, sentence-transformers); by default only papertrack's "
        "own output and the libraries' errors.",
    ),
) -> None:
    quiet_libraries(verbose)


training_commands.add_commands(app)
crosswalk_command.add_commands(app)
serve_command.add_commands(app)
label_command.add_commands(app)
suggest_command.add_commands(app)
taxonomies_command.add_commands(app)
tracking_server.add_commands(app)
ui_command.add_commands(app)
gc_command.add_commands(app)


def main() -> None:
    settings.quiet_third_parties()
    app()  # the callback (_options) sets up the console before any command imports a library


if __name__ == "__main__":  # spark-submit runs a Python file: spark-submit papertrack/cli.py label ...
    main()
