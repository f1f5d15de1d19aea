"""``hh serve`` and ``hh collect``: the collection app, its annotators and its export.

A thin layer over :mod:`hhrlhf.collect`; the web extra is imported only when a command runs.
"""

from __future__ import annotations

import os
import sys
import threading

import click

from ..errors import HHError, require
from ..text import printable
from .options import check_outputs, emit_json, out_dir_option, print_table

__all__ = ["commands", "serve", "collect"]


def _web():
    for module in ("fastapi", "sqlalchemy", "alembic", "uvicorn"):
        require(module, "web", "the collection app")


def _default_db() -> str:
    return os.environ.get("HH_COLLECT_DB") or "sqlite:///hh-collect.db"


def db_option(f):
    return click.option(
        "--db",
        "db_url",
        default=None,
        metavar="URL",
        help="Database URL (sqlite:///path.db, postgresql+psycopg://...; behind PgBouncer "
        "in transaction mode add ?prepare_threshold=none); "
        "default: $HH_COLLECT_DB, else sqlite:///hh-collect.db.",
    )(f)


def _database_reads(db_url: str | None) -> list:
    """The SQLite files of ``db_url`` (none for PostgreSQL): no output may be or hold them."""
    _web()
    from ..collect.services.export import database_files

    return database_files(db_url or _default_db())


def _storage(db_url: str | None, *, migrate: bool = False):
    _web()
    from ..collect.db import Storage
    from ..collect.db.engine import shown_url
    from ..collect.db.errors import DATABASE_ERRORS, describe

    url = db_url or _default_db()
    storage = Storage(url)
    try:
        if migrate:
            storage.upgrade()
        else:
            storage.check_current()
    except DATABASE_ERRORS as exc:  # no server there, a wrong password, a missing database
        storage.dispose()
        raise HHError(f"--db {shown_url(url)}: cannot open the database: {describe(exc)}") from exc
    return storage


@click.command()
@db_option
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML config with [collect] and [[backend]] tables.",
)
@click.option("--demo", is_flag=True, help="Demo backends (no model, no network) and a demo admin.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on; 0: a free one, printed with the URL.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes, one per core (on Linux each listens on its own socket on the port, "
    "so connections spread evenly).",
)
@click.option(
    "--demo-delay",
    default=0.0,
    type=click.FloatRange(0, 5),
    help="Demo backend: seconds per word (load tests).",
    hidden=True,
)
@click.option(
    "--data",
    "data",
    metavar="PATH|sample",
    default=None,
    help="Also browse HH data at /data: a folder laid out like upstream, one file, "
    "'sample' (the bundled sample) or 'cache' (the download cache).",
)
@click.option(
    "--forwarded-allow-ips",
    "forwarded_allow_ips",
    envvar="FORWARDED_ALLOW_IPS",
    default=None,
    metavar="ADDRESSES",
    help="Proxies whose X-Forwarded-For/-Proto are believed (comma-separated addresses or "
    "networks, '*' for any, '' for none; as uvicorn's option). Default: the config's "
    "forwarded_allow_ips, else 127.0.0.1.",
)
@click.option(
    "--header-timeout",
    default=20.0,
    show_default=True,
    type=click.FloatRange(1, 600),
    help="Seconds a connection has to send a request's complete headers before it is closed.",
)
@click.option(
    "--max-connections",
    default=1000,
    show_default=True,
    type=click.IntRange(10, 1_000_000),
    help="Open connections per worker; past it the oldest one still sending its headers is closed.",
)
@click.option(
    "--hsts",
    is_flag=True,
    default=False,
    help="Send Strict-Transport-Security (only when the site is served over https).",
)
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
    _web()
    from ..collect.config import check_model_folders, demo_settings, load_config
    from ..collect.services import annotators

    db_url = db_url or _default_db()
    settings = (
        load_config(config_path, db_url=db_url)
        if config_path
        else demo_settings(db_url, token_delay=demo_delay)
    )
    if config_path:
        check_model_folders(settings, config_path)
    if data:
        from ..layout import select_files

        data = data if data in ("sample", "cache") else os.path.abspath(data)
        files = select_files("all", data=data, download=False)
        click.echo(f"data: {len(files)} files to browse at /data", err=True)
    storage = _storage(settings.db_url, migrate=True)
    if port == 0:  # the URL printed must be the one served
        from ..collect.web.workers import free_port

        port = free_port(host)
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    from ..collect.db.engine import shown_url

    shown = shown_url(settings.db_url)
    click.echo(f"database: {shown} (migrated to {storage.revision()})", err=True)
    if not settings.db_url.startswith("sqlite"):
        from ..collect.db.engine import worker_connections

        each = worker_connections(settings.db_connections, workers)
        click.echo(
            f"database connections: up to {each * workers} ({each} per worker; "
            f"db_connections = {settings.db_connections})",
            err=True,
        )
    click.echo(f"backends: {', '.join(settings.backend_names)}", err=True)
    _check_backends(settings)
    ready = []
    if demo:
        who = annotators.annotator_by_name(storage, "demo")
        if who is None:
            _, token = annotators.add_annotator(storage, "demo", role="admin")
        else:
            token = annotators.rotate_token(storage, "demo")
        ready.append(f"log in: {base}/login?token={token}")
    ready.append(f"serving on {base}/ (Ctrl+C to stop)")
    storage.dispose()
    announcing = _announce_when_ready(host, port, ready)
    import uvicorn

    from ..collect.web.server import guarded_protocol
    from ..collect.web.workers import balances, run_workers

    env = {"HH_COLLECT_DB": settings.db_url}
    if data:
        env["HH_COLLECT_DATA"] = data
    else:
        os.environ.pop("HH_COLLECT_DATA", None)
    if forwarded_allow_ips is not None:
        env["HH_COLLECT_FORWARDED_ALLOW_IPS"] = forwarded_allow_ips
    else:
        os.environ.pop("HH_COLLECT_FORWARDED_ALLOW_IPS", None)
    env["HH_COLLECT_HSTS"] = "1" if hsts else "0"
    env["HH_COLLECT_HEADER_TIMEOUT"] = str(header_timeout)
    env["HH_COLLECT_MAX_CONNECTIONS"] = str(max_connections)
    env["HH_COLLECT_WORKERS"] = str(workers)
    if config_path:
        env["HH_COLLECT_CONFIG"] = os.path.abspath(config_path)
    else:
        env["HH_COLLECT_DEMO_DELAY"] = str(demo_delay)
    os.environ.update(env)
    if not config_path:
        os.environ.pop("HH_COLLECT_CONFIG", None)
    options = dict(
        app="hhrlhf.collect.web.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=False,  # the app reads the proxy headers itself (forwarded_allow_ips)
        http=guarded_protocol(),  # a deadline for headers, a cap on connections
        # Ctrl+C: open event streams (a stalled backend's) get this long, then are cut
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )
    try:
        if workers > 1 and balances():
            # a listening socket per worker: the kernel spreads the connections over them
            sys.exit(run_workers(workers, **options))
        uvicorn.run(workers=workers, **options)
    finally:  # a server that never answered: stop asking
        announcing.set()


#: seconds ``hh serve`` waits for open requests after Ctrl+C before it cuts them
SHUTDOWN_GRACE = 1.0


def _check_backends(settings) -> None:
    """One line per OpenAI-compatible backend: ok, or what is wrong (the start goes on)."""
    from ..collect.generation.health import check_backends

    for health in check_backends(settings.backends):
        if health.kind not in ("openai-chat", "openai-completions"):
            continue
        if health.ok:
            click.echo(f"backend {health.name}: ok ({health.latency_ms} ms)", err=True)
        else:
            click.echo(f"warning: backend {health.name}: {health.problem}", err=True)


def _announce_when_ready(host: str, port: int, lines: list[str]) -> threading.Event:
    """Print ``lines`` once the app answers on ``host:port`` (the data index is built, the
    workers are up), from a thread that polls its health route until it answers or the
    returned event is set (the server has stopped)."""
    import http.client

    stop = threading.Event()
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)

    def poll() -> None:
        while not stop.is_set():
            try:
                conn = http.client.HTTPConnection(target, port, timeout=2)
                conn.request("GET", "/api/v1/health")
                answered = conn.getresponse().status < 500
                conn.close()
            except OSError:
                answered = False
            if answered:
                for line in lines:
                    click.echo(line)
                return
            stop.wait(0.05)

    threading.Thread(target=poll, name="hh-serve-ready", daemon=True).start()
    return stop


@click.group()
def collect():
    """Manage the collection database: annotators and the export.

    \b
    Examples:
      hh collect annotator add alice
      hh collect annotator list
      hh collect export --out collected/
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
    type=click.Choice(["annotator", "admin"]),
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
    storage = _storage(db_url, migrate=True)
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
    storage = _storage(db_url)
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
    storage = _storage(db_url)
    from ..collect.services import annotators

    who = annotators.set_disabled(storage, name, not enable)
    click.echo(f"{who.name}: {'disabled' if who.disabled else 'enabled'}")


@annotator.command("set")
@click.argument("name")
@click.option("--role", type=click.Choice(["annotator", "admin"]), default=None, help="New role.")
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
    storage = _storage(db_url)
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
    storage = _storage(db_url)
    from dataclasses import asdict

    from ..collect.services.stats import collection_stats

    out = asdict(collection_stats(storage, resamples=resamples))
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
    check_outputs(force, reads=_database_reads(db_url), out=(out_dir, "dir"))
    backends = None
    if config_path:
        from ..collect.config import load_config

        backends = {b.name: b for b in load_config(config_path).backends}
    storage = _storage(db_url)
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


commands = [serve, collect]
