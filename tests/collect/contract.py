"""Every JSON answer the in-process app gives during the tests is held to the model its route
documents in /api/v1/openapi.json (hhrlhf.collect.web.schemas, unknown keys forbidden): the
documentation cannot drift from the code without a test failing."""

from __future__ import annotations

from typing import Any

from starlette.routing import Match

#: answers checked, by route: the suite's coverage of the contract (tests/collect/test_openapi.py)
CHECKED: dict[tuple[str, str], int] = {}


def _routes(routes: Any) -> Any:
    """Every route, included routers' routes too (the app lists an included router as one)."""
    for r in routes:
        if hasattr(r, "original_router"):
            yield from _routes(r.original_router.routes)
        else:
            yield r


def documented_model(app: Any, method: str, path: str, status: int) -> tuple[str, Any] | None:
    """(route path, the model documented for ``status``) of the route answering, if any."""
    scope = {"type": "http", "method": method, "path": path, "root_path": ""}
    for route in _routes(app.routes):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            responses = getattr(route, "responses", None) or {}
            model = (responses.get(status) or {}).get("model")
            return (route.path, model) if model is not None else None
    return None


def check_answer(app: Any, response: Any) -> None:
    request = response.request
    if not request.url.path.startswith("/api/v1/") or not 200 <= response.status_code < 300:
        return
    if not response.headers.get("content-type", "").startswith("application/json"):
        return
    found = documented_model(app, request.method, request.url.path, response.status_code)
    if found is None:
        return
    route, model = found
    model.model_validate(response.json())
    key = (request.method, route)
    CHECKED[key] = CHECKED.get(key, 0) + 1


def checked_client(client: Any) -> Any:
    """``client`` whose every answer is checked against its documented model."""
    send = client.request

    def request(method: str, url: Any, *args: Any, **kwargs: Any) -> Any:
        response = send(method, url, *args, **kwargs)
        check_answer(client.app, response)
        return response

    client.request = request
    return client
