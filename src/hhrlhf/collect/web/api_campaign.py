"""The campaign's routes under ``/api/v1``: an annotator's own progress (``/progress``), and
for admins the tasks, the campaign's settings and its progress (``/api/v1/admin/...``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt

from ...errors import Invalid
from ..domain import AnnotatorInfo, Mode
from ..services import assign, campaign, tasks
from ..textrules import Text
from .api import _Body
from .auth import logged_in, logged_in_admin
from .context import app_context
from .schemas import answers

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")

Who = Annotated[AnnotatorInfo, Depends(logged_in)]
Admin = Annotated[AnnotatorInfo, Depends(logged_in_admin)]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetsModel(_Answer):
    unit: Literal["turns", "conversations"]
    per_day: int | None
    per_week: int | None
    total: int | None


class TotalModel(_Answer):
    unit: Literal["turns", "conversations"]
    count: int


class CountsModel(_Answer):
    today: int
    week: int
    total: int


class TaskPreview(_Answer):
    id: int
    text: str
    mode: Literal["helpful", "red-team"]
    tags: list[str]


class MyProgress(_Answer):
    """An annotator's targets, counts, next task and whether they may start a conversation"""

    targets: TargetsModel | None
    unit: Literal["turns", "conversations"]
    counts: CountsModel
    next_task: TaskPreview | None
    can_start: bool
    refused: str | None
    campaign_open: bool
    free_allowed: bool


class TaskModel(_Answer):
    """A task prompt"""

    id: int
    text: str
    mode: Literal["helpful", "red-team"]
    repeat: int
    served: int
    tags: list[str]
    disabled: bool
    created_at: str | None


class TaskList(_Answer):
    """Every task, oldest first"""

    tasks: list[TaskModel]


class CampaignSettings(_Answer):
    """The campaign's live settings"""

    free_conversations: bool
    targets: TargetsModel | None
    campaign_total: TotalModel | None
    #: annotator id -> their own targets
    annotator_targets: dict[str, TargetsModel]


class AnnotatorProgressModel(_Answer):
    name: str
    targets: TargetsModel | None
    unit: Literal["turns", "conversations"]
    counts: CountsModel
    reached: str | None


class CampaignProgressModel(_Answer):
    """The campaign's total, tasks served and every annotator's progress"""

    campaign_total: TotalModel | None
    count: int
    closed: bool
    tasks_served: int
    tasks_repeats: int
    annotators: list[AnnotatorProgressModel]


class NewTask(_Body):
    text: Text
    mode: Text = Mode.HELPFUL
    repeat: StrictInt = 1
    tags: list[Text] = []


class TaskChange(_Body):
    disabled: StrictBool = True


class TargetsBody(_Body):
    unit: Text = "turns"
    per_day: StrictInt | None = None
    per_week: StrictInt | None = None
    total: StrictInt | None = None


class TotalBody(_Body):
    unit: Text = "turns"
    count: StrictInt


class CampaignChange(_Body):
    """Only the keys given change; ``targets`` or ``campaign_total`` null removes it;
    ``annotator``: ``targets`` are that annotator's own."""

    free_conversations: StrictBool | None = None
    targets: TargetsBody | None = None
    annotator: Text | None = None
    campaign_total: TotalBody | None = None


@router.get("/progress", response_model=None, responses=answers(MyProgress))
def my_progress(request: Request, who: Who) -> dict[str, Any]:
    """The caller's targets, counts (UTC days, ISO weeks), the task they would be handed
    next, and whether they may start a conversation now (``refused``: why not)."""
    return assign.my_progress(app_context(request).storage, who).to_dict()


@router.get("/admin/tasks", response_model=None, responses=answers(TaskList))
def list_tasks(request: Request, who: Admin) -> dict[str, Any]:
    return {"tasks": [t.to_dict() for t in tasks.list_tasks(app_context(request).storage)]}


@router.post(
    "/admin/tasks", status_code=201, response_model=None, responses=answers(TaskModel, 201)
)
def add_task(body: NewTask, request: Request, who: Admin) -> dict[str, Any]:
    st = app_context(request)
    added = tasks.add_task(
        st.storage,
        body.text,
        body.mode,
        body.repeat,
        body.tags,
        max_chars=st.settings.max_task_chars,
    )
    return added.to_dict()


@router.post("/admin/tasks/{task_id}/disable", response_model=None, responses=answers(TaskModel))
def disable_task(
    task_id: int, request: Request, who: Admin, body: TaskChange | None = None
) -> dict[str, Any]:
    """Disable a task (``{"disabled": false}``: enable it again)."""
    body = body or TaskChange()
    return tasks.set_task_disabled(app_context(request).storage, task_id, body.disabled).to_dict()


@router.get("/admin/campaign", response_model=None, responses=answers(CampaignSettings))
def get_campaign(request: Request, who: Admin) -> dict[str, Any]:
    return campaign.campaign(app_context(request).storage).to_dict()


@router.post("/admin/campaign", response_model=None, responses=answers(CampaignSettings))
def set_campaign(body: CampaignChange, request: Request, who: Admin) -> dict[str, Any]:
    """Change the settings given; each change is logged with the admin's name."""
    storage = app_context(request).storage
    given = body.model_fields_set
    if body.annotator is not None and "targets" not in given:
        raise Invalid('"annotator" names whose targets: send "targets" with it')
    # every value checked before anything is stored: a bad one changes nothing
    t, c = body.targets, body.campaign_total
    targets = None if t is None else campaign.parse_targets(t.model_dump())
    total = None if c is None else campaign.parse_total(c.model_dump())
    out = campaign.campaign(storage)
    if body.free_conversations is not None:
        out = campaign.set_free_conversations(storage, who.name, body.free_conversations)
    if "targets" in given:
        out = campaign.set_targets(storage, who.name, targets, annotator=body.annotator)
    if "campaign_total" in given:
        out = campaign.set_campaign_total(storage, who.name, total)
    return out.to_dict()


@router.get(
    "/admin/campaign/progress", response_model=None, responses=answers(CampaignProgressModel)
)
def get_campaign_progress(request: Request, who: Admin) -> dict[str, Any]:
    return assign.campaign_progress(app_context(request).storage).to_dict()
