"""`python -m simsubjects.cli`: the commands in-process (no preload server), e.g. for profilers."""
import sys

from simsubjects.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
