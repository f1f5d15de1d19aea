"""Serving the app: ``hh serve``'s start (:mod:`.bootstrap`), the options its workers share
(:mod:`.options`, through the ``HH_COLLECT_*`` environment), each worker's app
(:mod:`.factory`), the worker processes (:mod:`.workers`) and their HTTP protocol
(:mod:`.server`). Above ``web/``: it builds the app, the app knows nothing of it."""
