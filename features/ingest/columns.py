"""Which CSV columns (or JSON fields) hold the abstract, the title and the id.

By default the columns named ``abstract``, ``title`` and ``id`` (any case). In JSON a name may be a dotted path into
nested objects (``content.abstract.value``, see :mod:`.notes`). ``--abstract-column``,
``--title-column`` and ``--id-column`` (``label``, ``suggest``, ``train``) name others for the run: inside
:func:`use_columns`, every reader takes the named column as the abstract (title, id), and a column that already has
the default name is then ignored. :func:`check_inputs` reads the CSV inputs' header rows — before a command loads a
model or trains — so a missing column is an error at once, naming the file, the columns it has and the option.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from os import PathLike
from typing import Any

from papertrack.features.ingest.notes import found, note_fields, resolve


@dataclass(frozen=True)
class Columns:
    abstract: str = "abstract"
    title: str = "title"
    id: str = "id"

    def chosen(self) -> dict[str, str]:
        """The names given instead of the defaults: the column's lower-case name -> the field it holds."""
        default = Columns()
        return {
            getattr(self, f.name).strip().lower(): f.name
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }


DEFAULT = Columns()
OPTIONS = {"abstract": "--abstract-column", "title": "--title-column", "id": "--id-column"}
_COLUMNS: ContextVar[Columns] = ContextVar("papertrack_ingest_columns", default=DEFAULT)  # noqa: B039 - frozen


def columns() -> Columns:
    """The columns of the current run (the defaults outside :func:`use_columns`)."""
    return _COLUMNS.get()


@contextmanager
def use_columns(abstract: str | None = None, title: str | None = None, id: str | None = None) -> Iterator[Columns]:
    """Read the abstract (title, id) from the named columns inside the block; None keeps the default."""
    from papertrack.errors import UsageError

    given = {"abstract": abstract, "title": title, "id": id}
    for field, name in given.items():
        if name is not None and not name.strip():
            raise UsageError(f"{OPTIONS[field]} needs a column name")
    named = [name.strip().lower() for name in given.values() if name is not None]
    if len(named) != len(set(named)):
        raise UsageError(f"one column is named by two of {', '.join(OPTIONS.values())}")
    chosen = Columns(**{k: v.strip() for k, v in given.items() if v is not None})
    token = _COLUMNS.set(chosen)
    try:
        yield chosen
    finally:
        _COLUMNS.reset(token)


def rename(record: dict[str, object]) -> dict[str, object]:
    """A record's fields (lower-case names) with each chosen column under its field's name; a field that already
    had that name is dropped (the chosen column replaces it)."""
    chosen = columns().chosen()
    if not chosen:
        return record
    out = {name: value for name, value in record.items() if name not in chosen and name not in chosen.values()}
    for column, field in chosen.items():
        if column in record:
            out[field] = record[column]
        elif "." in column and found(value := resolve(record, column)):
            out[field] = value  # a dotted path into nested objects (``content.abstract.value``)
    return out


def did_you_mean(wanted: str, names: Iterable[object]) -> str | None:
    """The given name that is most likely ``wanted`` misspelt (another letter case, a plural, a typo), else None."""
    given = [str(name) for name in names]
    same = [name for name in given if name.strip().casefold() == wanted.casefold()]
    if same:
        return same[0]
    close = difflib.get_close_matches(wanted, [name.strip().lower() for name in given], n=1, cutoff=0.75)
    return next((name for name in given if close and name.strip().lower() == close[0]), None)


def missing_columns(header: Sequence[str]) -> list[str]:
    """The columns a header (as written) lacks: the abstract's always, the title's and id's when they were named."""
    present = {name.strip().lower() for name in header}
    chosen = columns()
    needed = [("abstract", chosen.abstract)] + [
        (f, getattr(chosen, f)) for f in ("title", "id") if getattr(chosen, f) != getattr(DEFAULT, f)
    ]
    return [name for _, name in needed if name.strip().lower() not in present]


def missing_message(header: Sequence[str], missing: Sequence[str]) -> str:
    """``CSV has no 'text' column (columns: title, abstract)`` and how to name another one."""
    names = ", ".join(repr(m) for m in missing)
    plural = "columns" if len(missing) > 1 else "column"
    hint = (
        f"; name the abstract's column with {OPTIONS['abstract']}"
        if missing == [DEFAULT.abstract] and columns() == DEFAULT
        else ""
    )
    return f"CSV has no {names} {plural} (columns: {', '.join(header)}){hint}"


def check_inputs(paths: Sequence[str | PathLike], fmt: str | None = None) -> None:
    """Read the header row of every CSV input, and the first record of every JSON input when a column is named by
    an option, and raise ``IngestError`` (file, line, the fields it has) when a needed column is missing: done before
    a model loads. Other layouts are read as before."""
    from papertrack.features.ingest import detect_format
    from papertrack.features.ingest.csv_rows import read_header

    for path in paths:
        layout = detect_format(path, fmt)
        if layout == "csv":
            read_header(path)
        elif layout in ("json", "jsonl") and columns() != DEFAULT:
            _check_first_record(path, layout)


def _check_first_record(path: str | PathLike, layout: str) -> None:
    """``IngestError`` when the first JSON record lacks a column named by an option (a name or dotted path)."""
    from papertrack.features.ingest.records import IngestError, first_json_object, missing_field_message

    first = first_json_object(path, layout)
    if first is None:
        return  # no record, or a broken one: the reader reports it with its line
    line, obj = first
    fields = note_fields({str(key).strip().lower(): value for key, value in obj.items()})
    chosen = columns()
    for field in ("abstract", "title", "id"):
        name = getattr(chosen, field)
        if name == getattr(DEFAULT, field):
            continue
        if name.strip().lower() in fields or ("." in name and found(resolve(fields, name))):
            continue
        raise IngestError(path, line, f"the first record has {missing_field_message(obj, field)}")


def reading_columns(command: Callable[..., Any]) -> Callable[..., Any]:
    """A CLI command whose ``abstract_column``, ``title_column`` and ``id_column`` options are in force while it
    runs (:func:`use_columns`); its signature (the options typer reads) is the command's own."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        with use_columns(kwargs.get("abstract_column"), kwargs.get("title_column"), kwargs.get("id_column")):
            return command(*args, **kwargs)

    return run
