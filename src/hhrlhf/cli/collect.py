"""``hh serve`` and ``hh collect``: the collection app, its annotators and its export.

A thin layer over :mod:`hhrlhf.collect`; the web extra is imported only when a command runs.
"""

from __future__ import annotations

import os

import click

from ..text import printable
from .collect_db import database_reads, db_option, open_db, web_extra
from .options import check_outputs, emit_json, out_dir_option, print_table
from .serve_options import serve_options

__all__ = ["commands", "serve", "collect"]


@click.command()
@db_option
@serve_options
def serve(
    db_url,
    config_path,
    demo,
    host,
    port,
    workers,
    demo_delay,
    data,
    forwarded_allow_ips,
    header_timeout,
    max_connections,
    hsts,
):
    """Run the collection app: create or migrate the database, print the URL, serve.

    \b
    Examples:
      hh serve --demo                      # try it: prints a login URL
      hh serve --config collect.toml --db sqlite:///hh-collect.db --port 8000
      hh serve --demo --data sample        # browse the sample at /data
    """
    if bool(config_path) == bool(demo):
        raise click.UsageError("pass exactly one of --config FILE or --demo")
    web_extra()
    from ..collect.config import DB_ENV, default_db_url, load_config
    from ..collect.serve.bootstrap import serve as run
    from ..collect.serve.options import ServeOptions

    if data and data not in ("sample", "cache"):
        data = os.path.abspath(data)
    if db_url is None and config_path and not os.environ.get(DB_ENV):
        db_url = load_config(config_path).db_url  # the file's [collect] db, else the default
    options = ServeOptions(
        db_url=db_url or default_db_url(),
        config=config_path,
        demo_delay=demo_delay,
        data=data,
        forwarded_allow_ips=forwarded_allow_ips,
        hsts=hsts,
        header_timeout=header_timeout,
        max_connections=max_connections,
        workers=workers,
    )
    run(options, host, port)


@click.group()
def collect():
    """Manage the collection database: annotators, the campaign, quality control and the
    export.

    \b
    Examples:
      hh collect annotator add alice
      hh collect tasks import tasks.jsonl
      hh collect export --out collected/ --accepted-only
    """


@collect.group()
def annotator():
    """Add, list or disable annotators (a token is printed once; only its hash is stored).

    \b
    Examples:
      hh collect annotator add alice --role admin
      hh collect annotator list --json
      hh collect annotator disable alice
    """


@annotator.command("add")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(["annotator", "reviewer", "admin"]),
    default="annotator",
    show_default=True,
)
@click.option(
    "--upworker", is_flag=True, help="Record the annotator as a contractor (is_upworker)."
)
@db_option
def annotator_add(name, role, upworker, db_url):
    """Add an annotator; the login token is the last line of stdout.

    \b
    Example:
      hh collect annotator add alice --role admin
    """
    storage = open_db(db_url, migrate=True)
    from ..collect.services import annotators

    who, token = annotators.add_annotator(
        storage, name, role=role, attributes={"is_upworker": upworker}
    )
    click.echo(
        f"added {who.name} ({who.role}, member {who.member_id}); token (shown once):", err=True
    )
    click.echo(f"login path: /login?token={token}", err=True)
    click.echo(token)


@annotator.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
def annotator_list(db_url, as_json):
    """List annotators (never their tokens).

    \b
    Example:
      hh collect annotator list --db sqlite:///hh-collect.db
    """
    storage = open_db(db_url)
    from ..collect.services import annotators

    rows = [a.to_dict() for a in annotators.list_annotators(storage)]
    if as_json:
        emit_json({"annotators": rows})
        return
    print_table(rows, ["name", "role", "disabled", "member_id", "created_at"])


@annotator.command("disable")
@click.argument("name")
@click.option("--enable", is_flag=True, help="Enable again instead.")
@db_option
def annotator_disable(name, enable, db_url):
    """Disable an annotator (their sessions end; their data stays).

    \b
    Examples:
      hh collect annotator disable alice
      hh collect annotator disable alice --enable
    """
    storage = open_db(db_url)
    from ..collect.services import annotators

    who = annotators.set_disabled(storage, name, not enable)
    click.echo(f"{who.name}: {'disabled' if who.disabled else 'enabled'}")


@annotator.command("set")
@click.argument("name")
@click.option(
    "--role", type=click.Choice(["annotator", "reviewer", "admin"]), default=None, help="New role."
)
@click.option(
    "--attr",
    "attrs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set an attribute (true/false/integers are typed; an empty VALUE removes KEY). Repeatable.",
)
@db_option
def annotator_set(name, role, attrs, db_url):
    """Change an annotator's role or attributes.

    \b
    Examples:
      hh collect annotator set alice --role admin
      hh collect annotator set bob --attr is_upworker=true --attr team=north
    """
    attributes = {}
    for item in attrs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"--attr {item!r}: expected KEY=VALUE")
        attributes[key.strip()] = _attr_value(value)
    if role is None and not attributes:
        raise click.UsageError("nothing to change: pass --role and/or --attr")
    storage = open_db(db_url)
    from ..collect.services.annotators import set_annotator

    out = set_annotator(storage, name, role=role, attributes=attributes)
    attrs_text = ", ".join(f"{k}={v}" for k, v in sorted(out.attributes.items()))
    click.echo(f"{out.name}: {out.role}; {attrs_text or 'no attributes'}")


def _attr_value(value: str):
    if value == "":
        return None
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value.lstrip("-").isdigit():
        return int(value)
    return value


def _ci(row: dict, key: str) -> str:
    value, (lo, hi) = row.get(key), row.get(f"{key}_ci") or (None, None)
    if value is None:
        return "-"
    if lo is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _resamples_option(help_text: str):
    return click.option(
        "--resamples",
        default=1000,
        show_default=True,
        type=click.IntRange(0, 100_000),
        help=help_text,
    )


@collect.command("stats")
@db_option
@_resamples_option("Bootstrap resamples for the intervals.")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of tables.")
def stats(db_url, resamples, as_json):
    """Per-annotator counts, time per comparison, strengths, position bias, and agreement.

    Also the comparisons each pair of backends got (an identical pair is none).

    Agreement comes from review tasks (finished comparisons re-shown, blind, to other
    annotators): percent agreement and Fleiss' kappa for the pick, Krippendorff's alpha
    (ordinal) for the signed strength, each with a 95% bootstrap interval over comparisons;
    per annotator, Cohen's kappa of their picks against the other raters'.

    \b
    Examples:
      hh collect stats
      hh collect stats --json --resamples 2000
    """
    storage = open_db(db_url)
    from ..collect.services.stats import collection_stats, stats_dict
    from .collect_gold import echo_gold

    out = stats_dict(collection_stats(storage, resamples=resamples))
    if as_json:
        emit_json(out)
        return
    rows = []
    for r in out["annotators"]:
        ag = r["agreement"] or {}
        rows.append(
            {
                "name": r["name"],
                "role": r["role"] + (" (disabled)" if r["disabled"] else ""),
                "conversations": r["conversations"],
                "comparisons": r["comparisons"],
                "edits": r["edits"],
                "reviews": r["reviews"],
                "median_s": r["median_seconds"],
                "share_A": None if r["share_a"] is None else f"{r['share_a']:.0%}",
                "strengths": " ".join(f"{k}:{v}" for k, v in r["strengths"].items()) or None,
                "agree": None if not ag else f"{ag['percent_agreement']:.0%}",
                "kappa": None if not ag else _ci(ag, "cohen_kappa"),
            }
        )
    print_table(rows)
    echo_gold(out.get("gold"))
    if out["pairs"]:
        click.echo("")
        click.echo("comparisons per backend pair:")
        for p in out["pairs"]:
            x, y = (printable(b) for b in p["backends"])
            click.echo(f"  {x} vs {y}: {p['comparisons']:,}")
    a = out["agreement"]
    click.echo("")
    if not a["units"]:
        click.echo("agreement: no reviewed comparisons yet (review tasks: review_fraction)")
        return
    click.echo(f"agreement over {a['units']:,} reviewed comparisons ({a['ratings']:,} ratings):")
    for label, key in (
        ("percent agreement (pick)", "percent_agreement"),
        ("Fleiss' kappa (pick)", "fleiss_kappa"),
        ("Krippendorff's alpha (ordinal, signed strength)", "alpha_ordinal"),
    ):
        click.echo(f"  {label:<48} {_ci(a, key)}")


@collect.command("export")
@db_option
@out_dir_option("Output folder.")
@click.option(
    "--min-strength",
    default=2,
    show_default=True,
    type=int,
    help="Keep picks at least this strong.",
)
@click.option(
    "--test-fraction",
    default=0.05,
    show_default=True,
    type=float,
    help="Share of conversations in test.",
)
@click.option(
    "--subset",
    default="helpful-base",
    show_default=True,
    help="Subset folder for helpful comparisons.",
)
@click.option(
    "--red-team-subset",
    default="harmless-base",
    show_default=True,
    help="Subset folder for red-team comparisons.",
)
@click.option("--include-unfinished", is_flag=True, help="Also export unfinished conversations.")
@click.option(
    "--agreed-only",
    is_flag=True,
    help="Keep only comparisons that were reviewed and whose every review picks the same.",
)
@click.option(
    "--accepted-only",
    is_flag=True,
    help="Keep only comparisons a reviewer accepted or fixed (a fixed one as fixed).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The app's TOML config: red-team attempts whose responses did not record "
    "model_type/num_params (generated before they were) take them from its backends.",
)
@click.option(
    "--scorer",
    "scorer",
    type=click.Path(file_okay=False),
    default=None,
    metavar="PM_DIR",
    help="A model saved by 'hh pm train': scores the red-team attempts (else their scores are null).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an earlier export in --out (only a folder hhrlhf wrote, holding nothing else).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def export(
    db_url,
    out_dir,
    min_strength,
    test_fraction,
    subset,
    red_team_subset,
    include_unfinished,
    agreed_only,
    accepted_only,
    config_path,
    scorer,
    force,
    as_json,
):
    """Export comparisons in the upstream layout (<subset>/{train,test}.jsonl.gz + manifest.json).

    \b
    Examples:
      hh collect export --out collected/
      hh collect export --out collected/ --config collect.toml --scorer pm/
      hh check all --data collected/
      hh redteam report --data collected/ --out report/
      hh stats --data collected/ helpful-base
    """
    # an unwritable --out, or one that holds the database, fails before any database work
    check_outputs(force, reads=database_reads(db_url), out=(out_dir, "dir"))
    backends = _config_backends(config_path)
    storage = open_db(db_url)
    from ..collect.services.export import export_collection

    manifest = export_collection(
        storage,
        out_dir,
        min_strength=min_strength,
        test_fraction=test_fraction,
        subset=subset,
        red_team_subset=red_team_subset,
        include_unfinished=include_unfinished,
        agreed_only=agreed_only,
        accepted_only=accepted_only,
        force=force,
        backends=backends,
        scorer=scorer,
    )
    if as_json:
        emit_json(manifest)
        return
    for name, splits in manifest["subsets"].items():
        click.echo(
            f"{os.path.join(out_dir, name)}: "
            + ", ".join(
                f"{sp} {n:,} rows" if n else f"{sp} 0 rows (no file)" for sp, n in splits.items()
            )
        )
    rt = manifest["red_team_attempts"]
    if rt["rows"] or any(rt["left_out"].values()):
        click.echo(
            f"{os.path.join(out_dir, 'red-team-attempts')}: {rt['rows']:,} attempts"
            + (f", scored by {rt['scorer']}" if rt["scorer"] else ", scores null (no --scorer)")
            + "; left out: "
            + ", ".join(f"{k} {v:,}" for k, v in rt["left_out"].items())
        )
    if rt["unconfigured_backends"]:
        click.echo(
            "warning: no model_type/num_params configured for backend(s) "
            + ", ".join(
                printable(b) if b else "(none recorded)" for b in rt["unconfigured_backends"]
            )
            + ": the attempts say the backend's name and num_params 'unknown' (pass --config)",
            err=True,
        )
    lo = manifest["left_out"]
    click.echo(
        "left out: "
        + ", ".join(f"{k} {v:,}" for k, v in lo.items())
        + f" (see {os.path.join(out_dir, 'manifest.json')})"
    )


def _config_backends(config_path):
    """The backends of the config at ``config_path`` by name (None without one)."""
    if not config_path:
        return None
    from ..collect.config import load_config

    return {b.name: b for b in load_config(config_path).backends}


commands = [serve, collect]
