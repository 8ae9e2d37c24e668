"""The one-line usage error every command raises, apart from the rest of `common` (which reads YAML): the dispatcher
catches it for every command, and a command that reads no YAML should not import a YAML library for it."""


class CliError(Exception):
    """A bad option or input: printed as one `error:` line, exit status 2."""
