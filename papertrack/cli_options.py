"""Options several commands share, declared once: the input column options of ``label``, ``suggest`` and ``train``
(:mod:`papertrack.features.ingest.columns` applies them)."""

from __future__ import annotations

from typing import Annotated

import typer

AbstractColumn = Annotated[
    str | None,
    typer.Option(help="The CSV column (or JSON field) that holds the abstract (default: 'abstract')."),
]
TitleColumn = Annotated[
    str | None, typer.Option(help="The CSV column (or JSON field) that holds the title (default: 'title').")
]
IdColumn = Annotated[str | None, typer.Option(help="The CSV column (or JSON field) that holds the id (default: 'id').")]
