"""Where the upstream files come from: the Hub or GitHub, their URLs, the Hub token, and the
hint an HTTP refusal from either deserves."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from ..errors import UnknownNameError
from ..subsets import FileSpec

SOURCES: tuple[str, ...] = ("hub", "github")
HUB_REPO = "Anthropic/hh-rlhf"
GITHUB_REPO = "anthropics/hh-rlhf"
HUB_DEFAULT_REVISION = "main"
GITHUB_DEFAULT_REVISION = "master"
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_GITHUB_RAW = "https://raw.githubusercontent.com"
DEFAULT_GITHUB_MEDIA = "https://media.githubusercontent.com/media"

#: How a Git LFS pointer file starts (what GitHub's raw host serves for an LFS file).
LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def file_url(spec: FileSpec, *, source: str = "hub", revision: str | None = None) -> str:
    """The URL ``spec`` is downloaded from (``source`` is ``"hub"`` or ``"github"``)."""
    if source == "hub":
        base = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        rev = quote(revision or HUB_DEFAULT_REVISION, safe="")
        return f"{base}/datasets/{HUB_REPO}/resolve/{rev}/{quote(spec.path)}"
    if source == "github":
        if spec.lfs:
            base = os.environ.get("HH_RLHF_GITHUB_MEDIA") or DEFAULT_GITHUB_MEDIA
        else:
            base = os.environ.get("HH_RLHF_GITHUB_RAW") or DEFAULT_GITHUB_RAW
        rev = quote(revision or GITHUB_DEFAULT_REVISION, safe="/")
        return f"{base.rstrip('/')}/{GITHUB_REPO}/{rev}/{quote(spec.path)}"
    raise UnknownNameError("source", source, SOURCES)


def hub_token() -> str | None:
    """The Hugging Face token from ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, the file at
    ``HF_TOKEN_PATH``, or ``$HF_HOME/token``; None when there is none."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    token_path = os.environ.get("HF_TOKEN_PATH")
    if not token_path:
        hf_home = os.environ.get("HF_HOME")
        if not hf_home:
            xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
            hf_home = os.path.join(xdg, "huggingface")
        token_path = os.path.join(os.path.expanduser(hf_home), "token")
    try:
        value = Path(token_path).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value or None


def auth_headers(source: str) -> dict[str, str]:
    """The headers that authenticate a request to ``source`` (a Hub token, to the Hub only)."""
    headers = {}
    if source == "hub":
        token = hub_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
    return headers


def http_hint(status: int, source: str, revision: str | None) -> str | None:
    """What to do about an HTTP refusal ``status`` from ``source``, when there is advice."""
    if status in (401, 403):
        if source == "hub":
            return (
                "the Hub refused access: set HF_TOKEN (or run `huggingface-cli login`) "
                "and check the token can read Anthropic/hh-rlhf"
            )
        return "GitHub refused access (rate limit?): wait, or use --source hub"
    if status == 404:
        rev = revision or (HUB_DEFAULT_REVISION if source == "hub" else GITHUB_DEFAULT_REVISION)
        return (
            f"no such file at revision {rev!r}: check --revision (a branch, tag or "
            f"commit of the {source} repository) and the file path"
        )
    return None
