"""Using a model: the BentoML service, the batch labeler and their commands. Imports features, models and the
shared layer — never training (no matplotlib in a worker)."""
