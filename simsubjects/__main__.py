"""`python -m simsubjects` runs the same CLI as the `simsubjects` command."""
from simsubjects.cli import main

if __name__ == "__main__":
    main()
