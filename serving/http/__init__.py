"""The HTTP service: the BentoML service, its page, middleware, request schemas, the BentoML model store and the
``serve``/``build`` commands. Never imports batch work (:mod:`papertrack.serving.batch`)."""
