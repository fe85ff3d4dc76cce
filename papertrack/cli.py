"""The ``papertrack`` command line."""

from __future__ import annotations

import warnings

import typer

from papertrack import config
from papertrack.serving import commands as serving_commands
from papertrack.training import commands as training_commands

app = typer.Typer(name="papertrack", no_args_is_help=True, add_completion=False,
                  help="Tell which conference track (Area · Subarea) an ML paper belongs to, from its abstract.")
training_commands.add_commands(app)
serving_commands.add_commands(app)


def main() -> None:
    config.quiet_third_parties()
    # MLflow's own notices that say nothing to a papertrack user
    warnings.filterwarnings("ignore", message="The specified dataset source can be interpreted in multiple ways")
    warnings.filterwarnings("ignore", message="Operation with range is deprecated")
    app()
