"""Command line (click only): parse, build a request, call the app, map to an exit code.

``rocmbuild RECIPE... [OPTIONS]`` is shorthand for ``rocmbuild build``.  Every
build option can also be set as ``ROCMBUILD_<NAME>`` in the environment.
Errors print what/why/what-to-do and exit with their code, never a traceback;
a bug prints where its crash log is and exits 70.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import click

from rocmbuild import __version__, paths
from rocmbuild.errors import ExitCode, RocmbuildError, UsageError
from rocmbuild.options import (
    DEFAULT_BACKOFF_S,
    DEFAULT_MAX_ATTEMPTS,
    BuildOptions,
    DoctorOptions,
    parse_duration,
    parse_notify_timeout,
    parse_positive_int,
    parse_seconds,
)
from rocmbuild.process.console import guard_console
from rocmbuild.records.redact import redact, redact_text, secret_values

if TYPE_CHECKING:  # imported where used: each command imports what it runs
    from rocmbuild.records.recordfile import CorruptRecord
    from rocmbuild.services import Streams

COMMANDS = ("build", "plan", "diagnose", "doctor", "recipes", "report", "signatures", "history", "resume")


class DefaultToBuild(click.Group):
    """A group where anything that is not a sub-command means ``build``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["build", *args]
        return super().parse_args(ctx, args)


_Command = TypeVar("_Command", bound=Callable[..., object])


def _env_option(name: str, *decls: str, **kwargs: Any) -> Callable[[_Command], _Command]:
    envvar = "ROCMBUILD_" + name.upper().replace("-", "_")
    help_text = kwargs.pop("help", "")
    return click.option(*decls, envvar=envvar, show_envvar=True, help=help_text, **kwargs)


def build_options(func: _Command) -> _Command:
    """The build options of the contract, shared by build and plan."""
    decorators = [
        _env_option("arch", "--arch", default="auto", metavar="LIST",
                    help="gfx targets, comma or semicolon separated, or auto"),
        _env_option("source", "--source", metavar="DIR", help="the source tree to build in"),
        _env_option("rocm_path", "--rocm-path", metavar="DIR", help="ROCm root (default: discovered)"),
        _env_option("jobs", "--jobs", metavar="N", help="initial MAX_JOBS (default: from CPUs and memory)"),
        _env_option("max_attempts", "--max-attempts", metavar="N", default=str(DEFAULT_MAX_ATTEMPTS),
                    help="attempts in all"),
        _env_option("budget", "--budget", metavar="DURATION", help="wall-time budget for the whole run (90s, 45m, 8h)"),
        _env_option("stall_timeout", "--stall-timeout", metavar="DURATION", default="30m",
                    help="no output for this long = stalled"),
        _env_option("backoff", "--backoff", metavar="SECONDS", default=str(int(DEFAULT_BACKOFF_S)),
                    help="base delay before retrying a transient (network) failure"),
        _env_option("run_dir", "--run-dir", metavar="DIR", help="where this run's records go"),
        _env_option("dry_run", "--dry-run", is_flag=True, help="print the plan and exit; run and delete nothing"),
        _env_option("json", "--json", "as_json", is_flag=True,
                    help="print each recipe's summary as JSON on stdout; human text goes to stderr"),
        _env_option("escalate_unknown", "--escalate-unknown", is_flag=True,
                    help="apply the generic ladder to unrecognised failures instead of stopping "
                         "(not to a failure the catalogue names as the project's own bug)"),
        _env_option("fail_fast", "--fail-fast", is_flag=True,
                    help="stop the build at the first recognised failure (one known as the project's own bug "
                         "included)"),
        _env_option("skip_preflight", "--skip-preflight", is_flag=True,
                    help="skip the checks before the first attempt"),
        _env_option("no_cache", "--no-cache", is_flag=True, help="do not route compiles through a compiler cache"),
        _env_option("cache_remote", "--cache-remote", metavar="URL",
                    help="shared compiler-cache storage for a fleet (redis://host:6379, http://...)"),
        _env_option("hip_compiler", "--hip-compiler", metavar="PATH",
                    help="the build's HIP compiler (sets HIPCXX); preflight, arch checks and LLVM tools follow it"),
        _env_option("force", "--force", is_flag=True,
                    help="build even when the tree's last success has the same fingerprint"),
        _env_option("wheel_dir", "--wheel-dir", metavar="DIR",
                    help="after success, leave each recipe's verified wheel and a manifest in DIR"),
        _env_option("requires_from", "--requires-from", metavar="URL_OR_DIR",
                    help="install a recipe's requires (e.g. ROCm torch) from this wheel index or wheelhouse"),
        _env_option("notify", "--notify", metavar="CMD|URLS",
                    help="shell command run once when the run ends; summary JSON on stdin, ROCMBUILD_OUTCOME, "
                         "ROCMBUILD_EXIT_CODE, ROCMBUILD_RUN_DIR set; or notification URLs (apprise: slack://, "
                         "msteams://, matrixs://, mailtos://, ntfys://, json://host/path), space separated"),
        _env_option("detach", "--detach", is_flag=True,
                    help="run in the background in its own session (console output into the run dir); "
                         "print run dir and PID once it passed its refusals (else its refusal and exit code)"),
        _env_option("memory_reserve", "--memory-reserve", metavar="SIZE",
                    help="keep SIZE of memory available: pause the newest compile jobs when below, resume when "
                         "back (default: min(4G, 10% of memory); off: no guard)"),
        _env_option("quiet", "--quiet", is_flag=True, help="progress line only"),
        _env_option("verbose", "--verbose", is_flag=True, help="everything"),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _utf8_only(kw: dict[str, Any]) -> None:
    """A path or URL that is not UTF-8 (the surrogates Python decodes such bytes to) cannot go into the
    run's JSON records or events: refused here, not a crash when the first record is written."""
    for name in ("source", "run_dir", "wheel_dir", "rocm_path", "hip_compiler", "requires_from", "cache_remote"):
        value = kw.get(name)
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                option = "--" + name.replace("_", "-")
                raise UsageError(f"{option} {os.fsencode(value).decode('utf-8', 'backslashreplace')} is not UTF-8",
                                 why="rocmbuild writes paths into its run records, which are UTF-8 JSON",
                                 todo="rename it, or pass a symlink with a UTF-8 name that points to it") from None


def make_options(kw: dict[str, Any], dry_run: bool = False) -> BuildOptions:
    if kw["quiet"] and kw["verbose"]:
        raise UsageError("--quiet and --verbose contradict each other", todo="pass one of them")
    _utf8_only(kw)
    return BuildOptions(
        arch=kw["arch"].strip() or "auto",
        source=Path(kw["source"]) if kw["source"] else None,
        rocm_path=kw["rocm_path"] or None,
        jobs=parse_positive_int(kw["jobs"], "--jobs") if kw["jobs"] else None,
        max_attempts=parse_positive_int(kw["max_attempts"], "--max-attempts"),
        budget_s=parse_duration(kw["budget"], "--budget") if kw["budget"] else None,
        stall_timeout_s=parse_duration(kw["stall_timeout"], "--stall-timeout"),
        backoff_s=parse_seconds(kw["backoff"], "--backoff"),
        run_dir=Path(kw["run_dir"]).expanduser() if kw["run_dir"] else None,
        dry_run=dry_run or kw["dry_run"],
        json=kw["as_json"],
        escalate_unknown=kw["escalate_unknown"],
        fail_fast=kw["fail_fast"],
        skip_preflight=kw["skip_preflight"],
        no_cache=kw["no_cache"],
        cache_remote=kw["cache_remote"] or None,
        hip_compiler=kw["hip_compiler"] or None,
        verbosity="quiet" if kw["quiet"] else "verbose" if kw["verbose"] else "normal",
        force=kw["force"],
        wheel_dir=Path(kw["wheel_dir"]).expanduser().absolute() if kw["wheel_dir"] else None,
        requires_from=kw["requires_from"] or None,
        notify=(kw["notify"] or "").strip() or None,
        detach=kw["detach"],
        memory_reserve=_memory_reserve(kw["memory_reserve"]),
        notify_timeout_s=parse_notify_timeout(os.environ["ROCMBUILD_NOTIFY_TIMEOUT"])
        if os.environ.get("ROCMBUILD_NOTIFY_TIMEOUT") else 60.0,
    )


def _memory_reserve(text: str | None) -> int | None:
    from rocmbuild.process.memguard import parse_size

    return parse_size(text, "--memory-reserve") if text is not None and text.strip() else None


class _RedactedText:
    """rocmbuild's own text on stderr with secrets blanked (a ``?token=`` in --requires-from, the value of
    MY_API_TOKEN in an error message); everything else, the binary buffer the build's output is relayed
    through included, is the wrapped stream's."""

    def __init__(self, stream: TextIO, secrets: tuple[str, ...]) -> None:
        self._stream = stream
        self._secrets = secrets

    def write(self, text: str) -> int:
        return int(self._stream.write(redact_text(text, self._secrets)))

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _streams() -> Streams:
    from rocmbuild.services import Streams

    return Streams(out=sys.stdout, err=cast(TextIO, _RedactedText(sys.stderr, secret_values(os.environ))))


@click.group(cls=DefaultToBuild, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rocmbuild")
def cli() -> None:
    """Unattended, self-healing source builds of the ROCm AI stack (PyTorch, vLLM, HIP extensions).

    `rocmbuild RECIPE... [OPTIONS]` is short for `rocmbuild build RECIPE... [OPTIONS]`.
    """


@cli.command()
@click.argument("recipes", nargs=-1)
@build_options
def build(recipes: tuple[str, ...], **kw: Any) -> None:
    """Build RECIPE(s) in order, diagnosing failures and retrying with remedies."""
    options = make_options(kw)
    if os.environ.get("SLURM_JOB_ID") and not options.dry_run:  # in a batch job: its run, maybe to continue
        from dataclasses import replace

        from rocmbuild.commands.schedjob import job_run

        found = job_run(os.environ, recipes, options.run_dir)
        if found is not None and found.resume:  # a requeued job starting again: continue its run
            from rocmbuild.commands.resuming import resume_run

            raise SystemExit(resume_run(str(found.run_dir), dict(os.environ), _streams()))
        if found is not None:
            options = replace(options, run_dir=found.run_dir)
    if options.detach and not options.dry_run:
        options = _detach(recipes, options)
    from rocmbuild.commands.app import build as run_build

    raise SystemExit(run_build(recipes, options, dict(os.environ), _streams()))


def _detach(recipes: tuple[str, ...], options: BuildOptions) -> BuildOptions:
    """--detach: check what is cheap to check here, fork; the parent waits until the background run has
    passed its refusals (lock, run dir, preflight), prints where it runs and exits 0, or exits with the
    run's own code and refusal (detach.py)."""
    from dataclasses import replace

    from rocmbuild.planning.planning import load_recipes
    from rocmbuild.records.detach import CONSOLE_LOG, detach, detached_run_dir

    load_recipes(recipes)  # a bad recipe name is exit 2 here, not a line in a log nobody reads
    run_dir = detached_run_dir(recipes, options.run_dir)
    started = detach(run_dir)
    if started is None:
        return replace(options, run_dir=run_dir, detach=False)
    console = run_dir / CONSOLE_LOG
    follow = f"rocmbuild report {shlex.quote(str(run_dir))}"
    if started.exit_code is not None:  # it ended before it started building: refused, or nothing to do
        error = started.error or {}
        if options.json:
            click.echo(json.dumps({"run_dir": str(run_dir), "pid": started.pid, "console": str(console),
                                   "follow": follow, "exit_code": started.exit_code, **error}))
        if error:
            click.echo(RocmbuildError(str(error.get("error")), str(error.get("why") or ""),
                                      str(error.get("todo") or "")).render(), err=True)
        ended = ("finished: nothing to build (up to date)" if started.exit_code == 0
                 else f"ended with exit {started.exit_code} before it started building")
        click.echo(f"rocmbuild: the background run (PID {started.pid}) {ended}; console: {console}", err=True)
        raise SystemExit(started.exit_code)
    if options.json:
        click.echo(json.dumps({"run_dir": str(run_dir), "pid": started.pid, "console": str(console),
                               "follow": follow, "stop": f"kill -TERM {started.pid}",
                               "resume": f"rocmbuild resume {shlex.quote(str(run_dir))}", "exit_code": None}))
    else:
        click.echo(f"rocmbuild: running in the background, PID {started.pid}\n"
                   f"  run dir: {run_dir}\n  console: {console}\n  progress: {follow}")
    raise SystemExit(0)


@cli.command()
@click.argument("recipes", nargs=-1)
@build_options
def plan(recipes: tuple[str, ...], **kw: Any) -> None:
    """Print the plan (= build --dry-run): ROCm, arch, MAX_JOBS, env diff, steps, clean paths, ladder."""
    options = make_options(kw, dry_run=True)
    from rocmbuild.commands.app import show_plans

    raise SystemExit(show_plans(recipes, options, dict(os.environ), _streams()))


@cli.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per log (the contract's keys)")
@click.option("--explain", is_flag=True, help="also show the runner-up matches and why they lost")
def diagnose(logs: tuple[str, ...], as_json: bool, explain: bool) -> None:
    """Diagnose saved build logs (`-` reads stdin). Exit 0 recognised, 1 not, 2 usage."""
    from rocmbuild.diagnosis.diagnose import diagnose_logs

    raise SystemExit(diagnose_logs(logs, as_json=as_json, explain=explain, out=sys.stdout))


@cli.command()
@click.option("--arch", default=None, metavar="LIST", help="check these targets against the compiler")
@click.option("--rocm-path", default=None, metavar="DIR", help="ROCm root (default: discovered)")
@click.option("--json", "as_json", is_flag=True, help="print the checks as one JSON object")
@_env_option("hip_compiler", "--hip-compiler", default=None, metavar="PATH",
             help="check this HIP compiler (default: $HIPCXX, else hipcc)")
@_env_option("wheel_dir", "--wheel-dir", default=None, metavar="DIR", help="the wheel dir builds would fill")
@_env_option("requires_from", "--requires-from", default=None, metavar="URL_OR_DIR",
             help="the wheel index or wheelhouse builds would install requires from")
@_env_option("cache_remote", "--cache-remote", default=None, metavar="URL", help="the shared compiler cache")
def doctor(**kw: Any) -> None:
    """Check this machine: toolchain, versions, GPUs, loader config, MAX_JOBS, fleet settings."""
    from rocmbuild.commands.doctor import run_doctor

    # click names each option's parameter after a DoctorOptions field.
    raise SystemExit(run_doctor(DoctorOptions(**kw), environ=dict(os.environ), out=sys.stdout))


@cli.command("recipes")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per recipe")
def recipes_cmd(as_json: bool) -> None:
    """List the bundled and user recipes."""
    from rocmbuild.planning.recipe import available_recipes, find_recipe

    for name, path in available_recipes().items():
        try:
            recipe = find_recipe(str(path))
        except RocmbuildError as exc:
            click.echo(f"{name}: {exc.what}", err=True)
            continue
        if as_json:
            click.echo(json.dumps({"name": recipe.name, "description": recipe.description, "path": str(path),
                                   "requires": list(recipe.requires), "packages": list(recipe.packages),
                                   "source": recipe.source.git or recipe.source.path}))
        else:
            click.echo(f"{name:<10} {recipe.description}  [{path}]")


@cli.command()
@click.argument("run_dir", required=False, default="latest")
@click.option("--json", "as_json", is_flag=True, help="print summary.json")
@click.option("--diff", "diff_with", is_flag=False, flag_value="", default=None, metavar="[OTHER]",
              help="what differs from the last successful run of the same recipe (or OTHER run dir)")
@click.option("--html", "as_html", is_flag=True,
              help="write one self-contained HTML page (default RUN_DIR/report.html; -o - for stdout)")
@click.option("-o", "--output", default=None, metavar="FILE", help="where --html writes the page")
def report(run_dir: str, as_json: bool, diff_with: str | None, as_html: bool, output: str | None) -> None:
    """Render a past run (RUN_DIR, or `latest`); --diff: against the last good run (after RUN_DIR)."""
    from rocmbuild.records.recorder import find_run_dir, load_run
    from rocmbuild.records.recordfile import as_str
    from rocmbuild.records.report import render_summary

    path = find_run_dir(run_dir)
    if as_html:
        from rocmbuild.records.htmlreport import report_html

        _write_page(report_html(path), output, path / "report.html")
    summary, events = load_run(path)
    if diff_with is not None:
        from rocmbuild.records.rundiff import diff_runs, last_good_run, render_diff

        other = find_run_dir(diff_with) if diff_with else last_good_run(path, summary)
        diff = diff_runs(path, other)
        click.echo(json.dumps(diff.to_json()) if as_json else render_diff(diff), nl=as_json)
        raise SystemExit(0)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(render_summary(summary, events), nl=False)
        if summary.get("outcome") == "running":  # a detached or killed run: where it is
            from rocmbuild.process.progress import live_state, render_live

            click.echo(render_live(path, live_state(path, as_str(summary.get("started")), events)), nl=False)
    raise SystemExit(0)


def _write_page(text: str, output: str | None, default: Path) -> None:
    """An HTML page to ``output`` (``-``: stdout), else to ``default``; says where, exit 0 (2 if unwritable)."""
    if output == "-":
        click.echo(text, nl=False)
        raise SystemExit(0)
    target = Path(output).expanduser() if output else default
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        from rocmbuild.records.recorder import write_private

        tmp = target.with_name(f".{target.name}.tmp")
        write_private(tmp, text)  # private like the records it is made of (chmod it to share it)
        tmp.replace(target)
    except OSError as exc:
        raise UsageError(f"cannot write {target}", why=exc.strerror or str(exc),
                         todo="pass -o FILE somewhere writable, or -o - for stdout") from None
    click.echo(f"file://{target.resolve()}")
    raise SystemExit(0)


@cli.command("inspect")
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="one JSON object: every binary and its gfx targets")
def inspect_cmd(paths: tuple[str, ...], as_json: bool) -> None:
    """The gfx targets of every code object in wheels, directories or .so files. Exit 0, 2 on bad input."""
    from rocmbuild.verification.codeobjects import run_inspect

    raise SystemExit(run_inspect(paths, as_json=as_json, out=sys.stdout))


@cli.command()
@click.option("--recipe", default=None, metavar="R", help="only runs of this recipe")
@click.option("--stats", is_flag=True, help="per signature: times seen, times cured and by which remedy")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per run (or per signature)")
@click.option("--html", "as_html", is_flag=True,
              help="write one self-contained HTML page (default: history.html in the state dir; -o - for stdout)")
@click.option("-o", "--output", default=None, metavar="FILE", help="where --html writes the page")
def history(recipe: str | None, stats: bool, as_json: bool, as_html: bool, output: str | None) -> None:
    """Past runs from the state dir (and --run-dir runs it indexed); --stats: which remedies cure what."""
    from rocmbuild.records.history import as_json as to_json
    from rocmbuild.records.history import (
        history_rows,
        load_summaries,
        render_rows,
        render_stats,
        run_dirs,
        signature_stats,
    )

    skipped: list[CorruptRecord] = []
    summaries = [s for s in load_summaries(run_dirs(), skipped) if recipe is None or s.get("recipe") == recipe]
    for record in skipped:  # one line each, on stderr: --json's stdout stays one object a line
        click.echo(f"rocmbuild: skipped {record.path}: {record.why}", err=True)
    if as_html:
        from rocmbuild.records.htmlhistory import render_history

        _write_page(render_history(summaries), output, paths.state_dir() / "history.html")
    if stats:
        stats_values = signature_stats(summaries)
        text, lines = render_stats(stats_values), [to_json(v) for v in stats_values]
    else:
        rows = history_rows(summaries)
        text, lines = render_rows(rows), [to_json(v) for v in rows]
    click.echo("".join(line + "\n" for line in lines) if as_json else text, nl=False)
    raise SystemExit(0)


@cli.command()
@click.argument("run_dir")
def resume(run_dir: str) -> None:
    """Continue a run stopped by SIGINT/SIGTERM/SIGHUP or killed, in RUN_DIR, where it stopped.

    Same run dir; the ladder's history, the remedies' environment, the build tree, the compiler cache
    and what is left of --budget are kept; the attempt the interrupt cut short is not counted."""
    from rocmbuild.commands.resuming import resume_run

    raise SystemExit(resume_run(run_dir, dict(os.environ), _streams()))


@cli.group()
def signatures() -> None:
    """The failure catalogue."""


@signatures.command("check")
@click.argument("file", required=False)
def signatures_check(file: str | None) -> None:
    """Verify a signature file's examples and near-misses (default: the bundled and user catalogue)."""
    from rocmbuild.diagnosis.catalogue import user_signature_files
    from rocmbuild.diagnosis.patterns import MAX_TIMEOUTS, SEARCH_TIMEOUT
    from rocmbuild.diagnosis.signature_check import check_catalogue

    if file and not Path(file).is_file():
        raise UsageError(f"signature file {file} does not exist", todo="pass the path of a .toml signature file")
    failures, checked = check_catalogue(Path(file) if file else None)
    for failure in failures:
        click.echo(f"FAIL {failure}")
    click.echo(f"{checked} signatures checked, {len(failures)} failures")
    if file or user_signature_files():
        # The static refusal knows the classic forms, not every slow pattern: say what else protects a build.
        click.echo(f"user patterns: nested or overlapping repetition is refused at load; any other slow pattern "
                   f"gives up after {SEARCH_TIMEOUT * 1000:.0f} ms a line and is switched off after "
                   f"{MAX_TIMEOUTS} time-outs")
    raise SystemExit(1 if failures else 0)


def _crash_log(exc: BaseException) -> Path:
    # Only after a crash: every command, `--help` too, would import them first (~3 ms).
    import traceback
    from datetime import datetime

    directory = paths.state_dir("crashes")
    directory.mkdir(parents=True, exist_ok=True)
    from rocmbuild.records.recorder import write_private

    directory.chmod(0o700)  # crash logs hold argv and paths: the owner's alone, like run dirs
    path = directory / f"crash-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    text = f"rocmbuild {__version__}\nargv: {sys.argv}\n\n" + "".join(
        traceback.format_exception(type(exc), exc, exc.__traceback__))
    write_private(path, redact_text(text, secret_values(os.environ)))
    return path


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn every ending into its exit code."""
    try:
        _main(argv)
    except SystemExit as exc:
        # A --detach run ending before it passed its refusals: the foreground exits with this code.
        if (detached := sys.modules.get("rocmbuild.records.detach")) is not None:
            detached.ended(exc.code if isinstance(exc.code, int) else 1)
        raise


def _main(argv: list[str] | None) -> None:
    # SIGTERM or SIGHUP outside a build (planning, diagnose, doctor) ends like Ctrl-C: exit 130, no
    # traceback.  During a build the runner's InterruptFlag takes over all three signals.
    guard_console()  # a reader going away (| head, a closed terminal) never stops a build
    previous = {sig: signal.signal(sig, _terminate) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        cli.main(args=argv, prog_name="rocmbuild", standalone_mode=False)
    except SystemExit as exc:
        sys.exit(exc.code)
    except RocmbuildError as exc:
        click.echo(redact_text(exc.render(), secret_values(os.environ)), err=True)
        _json_error(argv, exc.exit_code, exc.what, exc.why, exc.todo)
        if (detached := sys.modules.get("rocmbuild.records.detach")) is not None:  # for the foreground
            detached.refused(exc.what, exc.why, exc.todo)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("rocmbuild: interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except click.exceptions.ClickException as exc:
        exc.show()
        _json_error(argv, ExitCode.USAGE, exc.format_message(), "the command line is not valid",
                    "see `rocmbuild --help` or `rocmbuild build --help`")
        sys.exit(ExitCode.USAGE)
    except KeyboardInterrupt:
        click.echo("rocmbuild: interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug: keep the traceback in a file, not on the user's screen
        try:
            where = str(_crash_log(exc))
        except OSError:
            where = "(could not write a crash log)"
        click.echo(f"rocmbuild: internal error: {type(exc).__name__}: "
                   f"{redact_text(str(exc), secret_values(os.environ))}\n"
                   f"  this is a bug in rocmbuild; the crash log is {where}\n"
                   f"  please report it with that file", err=True)
        sys.exit(ExitCode.INTERNAL)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.exit(0)


def _json_error(argv: list[str] | None, exit_code: int, what: str, why: str, todo: str) -> None:
    """With --json (or ROCMBUILD_JSON), a refusal is also one JSON object on stdout (docs/reference-cli.md)."""
    args = sys.argv[1:] if argv is None else argv
    wanted = "--json" in args or os.environ.get("ROCMBUILD_JSON", "").strip().lower() in ("1", "true", "yes", "on")
    if wanted:
        error = {"exit_code": int(exit_code), "error": what, "why": why, "todo": todo}
        click.echo(json.dumps(redact(error, secret_values(os.environ))))


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
