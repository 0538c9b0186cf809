"""The `simsubjects` command's entry point: through a running preload server when one fits, else in-process.

Kept tiny on purpose (standard library only until the in-process path is chosen): with a preload
server (`simsubjects preload start`, simsubjects/cli/preload.py) a run then starts in a fraction of a
second instead of importing torch and transformers (~7 s). Without one, it is exactly `cli.main()`.
`simsubjects preload ...` itself always runs in-process.
"""

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] != ["preload"]:
        from simsubjects.cli.preload import run_via_server

        code = run_via_server(argv)
        if code is not None:
            sys.exit(code)
    from .cli import main as cli_main

    sys.exit(cli_main())


if __name__ == "__main__":
    main()
