"""The guidelines' JSON routes under ``/api/v1``: read the current version and acknowledge it
(any annotator); publish, preview and list the versions (``/api/v1/admin/...``: admins)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from ..domain import AnnotatorInfo
from ..services import guidelines
from ..services.guidelines import GuidelinesStatus
from .auth import logged_in, logged_in_admin
from .context import app_context
from .markdown import render_markdown
from .schemas import answers

__all__ = ["router", "status_json"]

router = APIRouter(prefix="/api/v1")

Who = Annotated[AnnotatorInfo, Depends(logged_in)]
Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Acknowledge(_Body):
    version: StrictInt


class NewGuidelines(_Body):
    #: Markdown (rendered with the pages' sanitiser; speaker markers are allowed here: the
    #: guidelines are never part of a transcript)
    text: StrictStr
    #: every annotator must read and acknowledge it again before their next conversation
    important: StrictBool = False


class Preview(_Body):
    text: StrictStr


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuidelinesVersionAnswer(_Answer):
    """One published version of the guidelines."""

    version: int
    important: bool
    author: str | None
    created_at: str | None


class GuidelinesAnswer(_Answer):
    """The current guidelines and whether the caller must acknowledge them."""

    #: None: no guidelines are published (nothing to read)
    current: GuidelinesVersionAnswer | None
    #: the Markdown as written, and as the pages show it (sanitised HTML)
    text: str | None
    html: str | None
    #: the latest version the caller acknowledged
    acknowledged: int | None
    must_acknowledge: bool
    #: until acknowledged, new conversations are refused (annotators; admins are not held)
    blocks_new_conversations: bool


class GuidelinesPublished(_Answer):
    """The version just published."""

    guidelines: GuidelinesVersionAnswer


class GuidelinesPreview(_Answer):
    """The text as the guidelines page would show it (nothing is published)."""

    html: str


class GuidelinesVersions(_Answer):
    """Every version, newest first."""

    versions: list[GuidelinesVersionAnswer]


def status_json(st: GuidelinesStatus) -> dict[str, Any]:
    return {
        "current": st.current.to_dict() if st.current else None,
        "text": st.text,
        "html": render_markdown(st.text) if st.text is not None else None,
        "acknowledged": st.acknowledged,
        "must_acknowledge": st.must_acknowledge,
        "blocks_new_conversations": st.blocks_new_conversations,
    }


@router.get("/guidelines", response_model=None, responses=answers(GuidelinesAnswer))
def current_guidelines(request: Request, who: Who) -> dict[str, Any]:
    return status_json(guidelines.status(app_context(request).storage, who))


@router.post("/guidelines/acknowledge", response_model=None, responses=answers(GuidelinesAnswer))
def acknowledge_guidelines(body: Acknowledge, request: Request, who: Who) -> dict[str, Any]:
    """The caller has read ``version`` (the current one); sending it again changes nothing."""
    return status_json(guidelines.acknowledge(app_context(request).storage, who, body.version))


@router.get("/admin/guidelines", response_model=None, responses=answers(GuidelinesVersions))
def guidelines_versions(request: Request, who: Admin) -> dict[str, Any]:
    return {"versions": [v.to_dict() for v in guidelines.versions(app_context(request).storage)]}


@router.post(
    "/admin/guidelines",
    response_model=None,
    status_code=201,
    responses=answers(GuidelinesPublished, 201),
)
def publish_guidelines(body: NewGuidelines, request: Request, who: Admin) -> dict[str, Any]:
    published = guidelines.publish(
        app_context(request).storage, who, body.text, important=body.important
    )
    return {"guidelines": published.to_dict()}


@router.post("/admin/guidelines/preview", response_model=None, responses=answers(GuidelinesPreview))
def preview_guidelines(body: Preview, who: Admin) -> dict[str, str]:
    return {"html": render_markdown(guidelines.check_text(body.text))}
