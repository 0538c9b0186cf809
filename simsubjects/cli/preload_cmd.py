"""`simsubjects preload start|stop|status`: the fork server of simsubjects/cli/preload.py (docs/scaling.md)."""

from __future__ import annotations

import click


@click.group("preload")
def preload_group():
    """Keep torch and transformers imported in a background process, so that later commands start at once.

    \b
    A cold `simsubjects collect ...` spends ~7 s importing torch and transformers. After
      simsubjects preload start
    every `simsubjects` command of this user (same Python, package and import-time environment)
    runs as a fork of that process; output, progress bars, exit codes and Ctrl-C behave as before.
    It stops after --idle-minutes without a run, on `simsubjects preload stop`, or when its socket
    (in the user cache's run/ folder) is removed. SIMSUBJECTS_PRELOAD=off runs one command without it.
    Details, and when a command runs in its own process instead: docs/scaling.md.
    """


@preload_group.command("start")
@click.option("--idle-minutes", default=30.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Stop after this many minutes without a run.")
def preload_start(idle_minutes):
    """Start the preload server (no-op when one already runs); waits until it answers."""
    from .preload import start  # lazy: off --help's path (cli.preload)

    status, started = start(idle_minutes)
    what = f"started in {status['import_seconds']:g} s" if started else "already running"
    click.echo(f"preload server {what}: pid {status['pid']}, socket {status['socket']}, "
               f"stops after {status['idle_timeout_s'] / 60:g} min idle")


@preload_group.command("stop")
def preload_stop():
    """Stop the preload server; runs in progress finish first."""
    from .preload import stop  # lazy: off --help's path (cli.preload)

    answer = stop()
    click.echo("no preload server" if answer is None else f"preload server {answer['pid']} stopped")


@preload_group.command("status")
def preload_status():
    """Show whether a preload server answers (exit 0) or not (exit 1), its pid, runs and idle time."""
    from .preload import request  # lazy: off --help's path (cli.preload)

    status = request("ping")
    if status is None:
        click.echo("no preload server")
        raise click.exceptions.Exit(1)
    click.echo(f"preload server pid {status['pid']}: up {status['uptime_s']:g} s, {status['runs']} runs "
               f"({status['running']} running), idle {status['idle_s']:g} s of {status['idle_timeout_s']:g} s; "
               f"socket {status['socket']}; package {status['package']}")
