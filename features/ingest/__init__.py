"""Read paper abstracts (and optional "Area · Subarea" labels) from the input layouts we accept.

Layouts (``FORMATS``): JSON lines, a JSON array, CSV, and two plain-text layouts pasted from
paper-search pages ("text-labeled": label / authors / abstract blocks, "text-unlabeled": one
abstract per paragraph).  Every layout may be gzip-compressed, start with a UTF-8 BOM and use CRLF.

``iter_records`` streams one ``Record`` or ``BadRecord`` per record found, in input order.
Problems with a single record become a ``BadRecord``; problems with the whole file raise
``IngestError`` (always with the path, and the line when there is one). The strict reader for
training (invalid records fatal, empty abstracts and duplicates counted) is
:func:`papertrack.training.dataset.load_dataset`.

Hostile text: a record whose used fields hold a lone surrogate escape is a ``BadRecord`` naming the
field; a UTF-16/UTF-32 file is an ``IngestError`` saying how to convert it. Standard input is read from
a copy that rows and messages name ``<stdin>`` (:func:`display_name`, :mod:`papertrack.features.stdin`).

The modules: :mod:`.records` (Record, BadRecord, IngestError, ids and normalisation), :mod:`.limits`,
:mod:`.decoding` (gzip, size cap, UTF-8/UTF-16 detection), :mod:`.detection` (format sniffing),
:mod:`.readers` (``iter_records``) and one module per layout: :mod:`.jsonl`, :mod:`.json_array`,
:mod:`.csv_rows`, :mod:`.text_labeled`, :mod:`.text_unlabeled` (their shared field rules in
:mod:`.mapping`, the text layouts' paragraphs in :mod:`.text_blocks`).
"""

from papertrack.features.ingest.decoding import open_input
from papertrack.features.ingest.detection import FORMATS, detect_format
from papertrack.features.ingest.jsonl import json_line_record
from papertrack.features.ingest.limits import InputLimits, input_limits, limits
from papertrack.features.ingest.mapping import record_from_mapping
from papertrack.features.ingest.readers import iter_records
from papertrack.features.ingest.records import (
    STDIN_NAME,
    SUGGESTED_FIELD,
    SUGGESTED_MARKER,
    BadRecord,
    IngestError,
    Record,
    abstract_key,
    display_name,
    has_content,
    make_id,
    make_record,
    name_input,
    normalise_text,
)

__all__ = [
    "FORMATS",
    "STDIN_NAME",
    "SUGGESTED_FIELD",
    "SUGGESTED_MARKER",
    "BadRecord",
    "IngestError",
    "InputLimits",
    "Record",
    "abstract_key",
    "detect_format",
    "display_name",
    "has_content",
    "input_limits",
    "iter_records",
    "json_line_record",
    "limits",
    "make_id",
    "make_record",
    "name_input",
    "normalise_text",
    "open_input",
    "record_from_mapping",
]
