"""Batch labeling: every record of one or more dumps -> one output row (JSONL or CSV), in input order.

Modules, each owning one concern:

* :mod:`.backends` — where answers come from: ``LocalBackend`` (the registered model in this process)
  or ``HttpBackend`` (a running service's ``/predict_batch``);
* :mod:`.rows` — the output rows, built from the model's ``Answer`` (JSONL/CSV, error rows), one chunk labeled
  into rows, what a run counts and the end-of-run summary;
* :mod:`.checkpoint` — ``OUT.partial``, the checkpoint, ``--resume`` and the final rename;
* :mod:`.run` — ``label_dumps``: the local engine, the loop that reads, labels in chunks, writes and checkpoints;
* :mod:`.spark` — ``label_with_spark``: the Spark engine, the same rows from a Spark job.
"""

from papertrack.serving.batch.labeler.backends import Backend, HttpBackend, LocalBackend
from papertrack.serving.batch.labeler.checkpoint import partial_path
from papertrack.serving.batch.labeler.label_errors import LabelError, ModelMissing
from papertrack.serving.batch.labeler.rows import Counters, summary_lines
from papertrack.serving.batch.labeler.run import LabelResult, label_dumps

__all__ = [
    "Backend",
    "Counters",
    "HttpBackend",
    "LabelError",
    "LabelResult",
    "LocalBackend",
    "ModelMissing",
    "label_dumps",
    "partial_path",
    "summary_lines",
]
