"""The HTML pages (a placeholder: the full pages replace it)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()


@router.get("/help", response_class=HTMLResponse)
def help_page():
    return "<!doctype html><title>Help</title><h1>How to compare responses</h1>"
