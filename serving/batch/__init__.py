"""Batch work: the labeler (one core, a local and a Spark engine), suggest, the drift report of a labeled dump and
the ``label``/``suggest`` commands. Never imports the HTTP service (:mod:`papertrack.serving.http`)."""
