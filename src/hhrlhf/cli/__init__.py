"""The ``hh`` command: a thin layer over the library.

Every command lives in a module of this package and is registered here. Errors the user
can cause (:class:`hhrlhf.errors.HHError`) become one line on stderr and exit status 1, or 2
for a name on the command line that is not there (a split, a subset, a file ending), as for
click's own usage errors; Ctrl-C becomes one line and exit status 130 (the outputs'
temporaries are removed on the way out: :mod:`hhrlhf.outputs`).
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import HHError, UnknownNameError

__all__ = ["main", "cli"]


#: Names a command line gives (a split, a subset, a format, an --out file's ending): one
#: that is not there is a usage error, exit 2, as click's own are.
USAGE_KINDS = frozenset({"split", "subset", "file ending", "format", "check class", "source"})


class _UserError(click.ClickException):
    exit_code = 1

    def __init__(self, error: HHError):
        super().__init__(str(error))
        self.error = error

    def show(self, file=None):
        file = file or sys.stderr
        click.echo(f"error: {self.error}", file=file)
        if getattr(self.error, "hint", None):
            click.echo(f"hint: {self.error.hint}", file=file)


class _Interrupted(click.ClickException):
    """Ctrl-C: one line and the shell's exit status for SIGINT (128 + 2)."""

    exit_code = 130

    def __init__(self) -> None:
        super().__init__("interrupted")

    def show(self, file=None):
        click.echo(
            "error: interrupted (Ctrl-C); outputs not finished were not put in place",
            file=file or sys.stderr,
        )


class _UsageError(_UserError):
    exit_code = 2


def _user_error(error: HHError) -> _UserError:
    if isinstance(error, UnknownNameError) and error.kind in USAGE_KINDS:
        return _UsageError(error)
    return _UserError(error)


class HHGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted() from None
        except HHError as exc:
            raise _user_error(exc) from exc
        except Exception as exc:
            failure = _database_failure(exc)
            if failure is None:
                raise
            raise _UserError(failure) from exc


def _database_failure(exc: Exception) -> HHError | None:
    """A collection database's failure during a command (the server gone, a full disk) as
    one line in the driver's words; None for any other exception."""
    if "sqlalchemy" not in sys.modules:  # only the collection commands load it
        return None
    from ..collect.db.errors import DATABASE_ERRORS, describe

    if not isinstance(exc, DATABASE_ERRORS):
        return None
    return HHError(f"the database failed: {describe(exc)}; the command stopped there")


QUIET_HELP = "No progress bars or progress lines on stderr (those of datasets included)."


def _quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``-q`` given after a command's name: what ``hh -q`` does (which has already run)."""
    if value:
        from ..progress import enable, quiet_libraries

        enable(False)
        quiet_libraries(True)


def _quiet_everywhere(command: click.Command) -> None:
    """Give ``command`` (and a group's commands) ``-q/--quiet`` too: ``hh clean -q`` works as
    ``hh -q clean`` does, where people put it by habit."""
    if not any("--quiet" in p.opts for p in command.params):
        command.params.append(
            click.Option(
                ["--quiet", "-q"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_quiet,
                help=QUIET_HELP,
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _quiet_everywhere(sub)


def _loader() -> str:
    from ..fastload import NATIVE

    return "native block parser (hhrlhf._jsonl)" if NATIVE else "pure Python (no C extension)"


@click.group(cls=HHGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, prog_name="hh", message=f"%(prog)s, version %(version)s; loader: {_loader()}"
)
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
def cli(quiet):
    """hh: Anthropic's HH-RLHF data, loaded exactly, converted, audited and learned from.

    \b
    Start with the bundled sample (no network):
      hh demo
      hh stats --data sample
      hh show harmless-base --split test --index 0 --data sample

    Long work (check, export, pm train, redteam report) shows a progress bar on a terminal and
    a line every few seconds on stderr otherwise; --quiet turns both off.
    """
    from ..progress import enable, quiet_libraries

    _warn_as_lines()
    enable(not quiet)
    quiet_libraries(quiet)  # datasets' and huggingface_hub's own bars too


def _warn_as_lines() -> None:
    """The library's warnings about the data (files ignored) as one ``warning:`` line each,
    each said once per command (a command may select its files more than once)."""
    import warnings

    from ..layout import IgnoredFilesWarning
    from ..text import printable

    warnings.filterwarnings("always", category=IgnoredFilesWarning)
    shown = warnings.showwarning
    if getattr(shown, "_hh", False):
        return

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if not issubclass(category, IgnoredFilesWarning):
            shown(message, category, filename, lineno, file, line)
            return
        ctx = click.get_current_context(silent=True)
        said = ctx.find_root().meta.setdefault("hhrlhf.warned", set()) if ctx else set()
        if str(message) not in said:
            said.add(str(message))
            click.echo(f"warning: {printable(str(message))}", err=True)

    show._hh = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def _register() -> None:
    from . import data, demo

    for command in (*data.commands, demo.demo_command):
        cli.add_command(command)
    for module_name in ("download", "convert", "audit", "redteam", "pm", "collect", "leaderboard"):
        module = __import__(f"{__name__}.{module_name}", fromlist=["commands"])
        for command in module.commands:
            cli.add_command(command)
    from .collect import collect
    from .collect_backend import collect_backend
    from .collect_flag import collect_flag
    from .collect_gold import gold, qualification
    from .collect_tasks import campaign_group, tasks_group
    from .collect_trends import collect_trends
    from .flag import flag
    from .pm import pm

    pm.add_command(flag)  # `hh pm flag` lives in its own module (pm.py is long enough)
    collect.add_command(collect_flag)  # `hh collect flag` too (collect.py is long enough)
    collect.add_command(gold)
    collect.add_command(qualification)
    collect.add_command(tasks_group)  # `hh collect tasks` and `campaign`: collect_tasks.py
    collect.add_command(campaign_group)
    collect.add_command(collect_backend)
    collect.add_command(collect_trends)
    for command in cli.commands.values():
        _quiet_everywhere(command)


def main(argv=None):
    """Entry point of the ``hh`` console script."""
    try:
        cli.main(args=argv, prog_name="hh")
    except BrokenPipeError:  # `hh ... | head`
        sys.stderr.close()
        sys.exit(0)


_register()
