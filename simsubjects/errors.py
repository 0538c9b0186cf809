"""The one exception users see: a message that says what to fix; the CLI exits with code 2."""


class UserError(Exception):
    """Bad input from the user (file, argument, spec). Printed as one line, exit code 2."""
