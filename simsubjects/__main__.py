"""`python -m simsubjects` runs the same CLI as the `simsubjects` command (through a preload server
when one runs; `python -m simsubjects.cli` always runs in-process)."""
from simsubjects.launch import main

if __name__ == "__main__":
    main()
