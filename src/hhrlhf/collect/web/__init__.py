"""The collection app's web layer: FastAPI routes and pages that parse a request, call one
service and render its answer, and the one map from the app's errors to HTTP."""
