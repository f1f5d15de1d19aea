"""``hh download``: fetch subset files into the cache (a thin layer over :mod:`hhrlhf.download`)."""

from __future__ import annotations

from pathlib import Path

import click

from .. import download as dl
from ..errors import OfflineError
from .options import Choice, emit_json, json_option

__all__ = ["download_command"]


@click.command("download")
@click.argument("subsets", nargs=-1, metavar="[SUBSET]...")
@click.option(
    "--split",
    "splits",
    multiple=True,
    type=Choice(["train", "test"]),
    help="Only this split (repeatable); default: every split.",
)
@click.option(
    "--source",
    type=click.Choice(list(dl.SOURCES)),
    default="hub",
    show_default=True,
    help="hub: huggingface.co/datasets/Anthropic/hh-rlhf (HF_ENDPOINT, HF_TOKEN honoured); "
    "github: github.com/anthropics/hh-rlhf.",
)
@click.option(
    "--revision",
    metavar="REV",
    default=None,
    help="Branch, tag or commit (default: main on the Hub, master on GitHub). Files of other "
    "revisions are cached apart and trusted on first use.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Cache directory (default: $HH_RLHF_CACHE, else $XDG_CACHE_HOME/hhrlhf, else "
    "~/.cache/hhrlhf).",
)
@click.option(
    "--offline",
    is_flag=True,
    help="Never touch the network: fail on any file not already cached (also HH_RLHF_OFFLINE=1).",
)
@click.option("--no-verify", is_flag=True, help="Skip the sha256 check of the files.")
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Say what is happening on stderr: a progress bar on a terminal, plain lines "
    "otherwise (connecting, retries, every 10 s, done).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Connect and read timeout; a silent server is retried once, then the download "
    "fails (default: $HH_RLHF_TIMEOUT, else 10).",
)
@json_option
def download_command(
    subsets, splits, source, revision, cache_dir, offline, no_verify, progress, timeout, as_json
):
    """Download SUBSET files into the local cache, resuming and verifying them.

    SUBSET is a subset name (harmless-base, helpful-base, helpful-online,
    helpful-rejection-sampled, red-team-attempts), "default" (the four preference subsets)
    or "all". Without SUBSET, everything published is downloaded. Files already in the
    cache are verified, not fetched again; an interrupted download resumes where it stopped.
    The paths are printed on stdout (or, with --json, a list of
    {subset, split, path, sha256, status}); progress goes to stderr.

    \b
    Examples:
      hh download                                  # all five subsets, nine files
      hh download helpful-base --split test        # one file
      hh download harmless-base --source github --json
      HH_RLHF_OFFLINE=1 hh download all            # the status of every file, no network

    Offline, every file is listed with its status ("missing" when it is not cached) and the
    command fails at the end when one is missing.
    """
    names = list(subsets) if subsets else ["all"]
    specs = dl.registry_files(names, list(splits) or None)
    show = progress
    verify = not no_verify
    root = dl.cache_dir(cache_dir)
    rows = []
    missing: list[str] = []
    for spec in specs:
        target = dl.cached_path(spec, cache_dir=root, revision=revision)
        was_cached = target.is_file()
        if not was_cached and dl.is_offline(offline or None):  # say so, and go on to the next
            status = dl.checksum_status(spec, cache_dir=root, revision=revision)
            click.echo(f"not cached: {spec.path} ({status})", err=True)
            missing.append(spec.path)
            rows.append(
                {
                    "subset": spec.subset,
                    "split": spec.split,
                    "path": None,
                    "sha256": None,
                    "status": status,
                }
            )
            continue
        path = dl.ensure_file(
            spec,
            cache_dir=root,
            source=source,
            revision=revision,
            offline=offline or None,
            verify=verify,
            progress=show,
            timeout=timeout,
        )
        status = dl.checksum_status(spec, cache_dir=root, revision=revision)
        click.echo(f"{'cached' if was_cached else 'downloaded'}: {spec.path} ({status})", err=True)
        rows.append(
            {
                "subset": spec.subset,
                "split": spec.split,
                "path": str(path),
                "sha256": dl.cached_sha256(path),
                "status": status,
            }
        )
    if as_json:
        emit_json(rows)
    else:
        for row in rows:
            if row["path"] is not None:
                click.echo(row["path"])
    if missing:
        if len(missing) == 1:
            raise OfflineError(missing[0])
        raise OfflineError(f"{len(missing)} of {len(specs)} files", many=True)


commands = [download_command]
