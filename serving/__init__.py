"""Using a model, by runtime: :mod:`.http` (the BentoML service and its ``serve``/``build`` commands) and :mod:`.batch`
(the labeler, suggest, the drift report and their commands), which never import each other; what both use lies here
(:mod:`.model_loader`, :mod:`.limits`, :mod:`.command_output`). Imports features, models and
the shared layer — never training (no matplotlib in a worker)."""
