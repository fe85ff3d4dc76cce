"""``papertrack taxonomies``: the taxonomies a model answers in — labels, training records per label, sources."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from papertrack import settings
from papertrack.console import console
from papertrack.console import table as plain_table


def taxonomies(
    model: Annotated[
        str, typer.Option("--model", "-m", help="MLflow model URI.")
    ] = f"models:/{settings.MODEL_NAME}@{settings.CHAMPION}",
    labels: Annotated[bool, typer.Option("--labels", help="List every label with its training records.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """The taxonomies the model answers in (--taxonomy of label/suggest, "taxonomy" of the HTTP requests)."""
    from papertrack import store
    from papertrack.serving.model_loader import describe_taxonomies

    found = describe_taxonomies(model, store.open(create=False))
    if as_json:
        console.print_json(json.dumps(found, ensure_ascii=False))
        return
    table = plain_table(title=f"Taxonomies of {model}")
    for column in ("taxonomy", "labels", "areas", "own papers", "sources", "set coverage / size"):
        table.add_column(column, overflow="fold")
    for t in found:
        table.add_row(
            t["name"] + (" (default)" if t["default"] else ""),
            f"{t['n_labels']}",
            f"{len(t['areas'])}",
            f"{t['training_records']:,}" if t["training_records"] is not None else "?",
            ", ".join(t["sources"]) or "-",
            f"{t['coverage']:.3f} / {t['mean_set_size']:.1f}" if t["coverage"] is not None else "-",
        )
    console.print(table)
    if labels:
        for t in found:
            listing = plain_table(title=f"{t['name']}: labels (its own papers)")
            listing.add_column("label", overflow="fold")
            listing.add_column("papers", justify="right")
            for item in sorted(t["labels"], key=lambda x: -(x["records"] or 0)):
                listing.add_row(item["label"], "?" if item["records"] is None else f"{item['records']:,}")
            console.print(listing)


def add_commands(app: typer.Typer) -> None:
    app.command()(taxonomies)
