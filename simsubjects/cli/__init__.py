"""The commands: the click group (commands.py), its subcommands, and the preload client and server.

Kept free of imports on purpose: `simsubjects.launch` imports `cli.preload` before it knows whether
the heavy command module is needed. `main` and `cli` of this package still resolve
(lazily) for scripts that named them when all the commands were one module.
"""


def __getattr__(name):
    if name in ("main", "cli"):
        from . import commands  # lazy: off --help's path (click)

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
