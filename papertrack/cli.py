"""The ``papertrack`` command line."""

from __future__ import annotations

import warnings

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from papertrack import settings, tracking_server
from papertrack.errors import NoModelError, PapertrackError
from papertrack.serving import commands as serving_commands
from papertrack.training import commands as training_commands


class _Commands(TyperGroup):
    """Every command: a PapertrackError (the user's to fix) is one ``error:`` line and exit status 2 (1 when
    there is no model to use); any other exception is a bug in papertrack and keeps its traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except PapertrackError as exc:
            Console(stderr=True).print(Text.assemble(("error:", "red"), " ", str(exc)), soft_wrap=True)
            raise typer.Exit(1 if isinstance(exc, NoModelError) else 2) from None


app = typer.Typer(name="papertrack", cls=_Commands, no_args_is_help=True, add_completion=False,
                  help="Tell which conference track (Area · Subarea) an ML paper belongs to, from its abstract.")


def _version(value: bool) -> None:
    if value:
        from papertrack import __version__

        typer.echo(f"papertrack {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print papertrack's version and exit.")) -> None:
    pass


training_commands.add_commands(app)
serving_commands.add_commands(app)
tracking_server.add_commands(app)


def main() -> None:
    settings.quiet_third_parties()
    # MLflow's own notices that say nothing to a papertrack user
    warnings.filterwarnings("ignore", message="The specified dataset source can be interpreted in multiple ways")
    warnings.filterwarnings("ignore", message="Operation with range is deprecated")
    app()


if __name__ == "__main__":  # spark-submit runs a Python file: spark-submit papertrack/cli.py label ...
    main()
