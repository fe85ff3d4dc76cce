"""The labeler's Spark engine: ``papertrack label DUMP... -o OUT --engine spark`` (see :mod:`.job`).

* :mod:`.session` — the Spark session (this interpreter's workers, loopback, a quiet JVM);
* :mod:`.inputs` — the dumps as one frame of items, each layout read its way;
* :mod:`.rows` — the labeler's rows and error rows, built on the executors;
* :mod:`.job` — the job: model, labels, errors, counts, the output folder.
"""

from papertrack.serving.batch.labeler.spark.job import SparkLabelResult, label_with_spark
from papertrack.serving.batch.labeler.spark.session import SparkJobError, SparkJvmDied, SparkOptions

__all__ = ["SparkJobError", "SparkJvmDied", "SparkLabelResult", "SparkOptions", "label_with_spark"]
