"""CLI runs in processes forked from a multiprocessing fork server that has imported torch, transformers
and the CLI once (as `simsubjects preload` does for users): a start costs the model load, not the ~7 s
import, and SIGKILL still reaches the process that collects. Used by the kill-and-resume tests."""

from __future__ import annotations

import multiprocessing
import os
import sys

# what the fork server imports once
PRELOAD = ["torch", "transformers", "transformers.models.llama.modeling_llama", "simsubjects.cli.commands",
           "simsubjects.collect.models.hf", "simsubjects.collect.pipeline"]


def context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _main(argv: list[str], log: str) -> None:
    """`simsubjects ARGV` in this (forked) process, its output appended to `log`."""
    from simsubjects.cli.commands import main

    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.exit(main(argv))


class Start:
    """One forked run with what a test loop needs: poll(), returncode, pid (for SIGKILL), kill() and wait()."""

    def __init__(self, ctx, argv: list[str], log) -> None:
        self.proc = ctx.Process(target=_main, args=(list(argv), str(log)))
        self.proc.start()
        self.pid = self.proc.pid

    def poll(self):
        return self.proc.exitcode

    returncode = property(poll)

    def wait(self):
        self.proc.join()
        return self.proc.exitcode

    def kill(self):
        self.proc.kill()
