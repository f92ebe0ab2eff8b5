"""The root of every error tablectl raises on purpose, and the families under it.

`TablectlError` is the one root (tests/test_architecture.py counts them): the daemon, the CLI
and head office catch it (never bare `ValueError`) where an error from outside must be logged,
counted and survived. It lives here, not in `controller`, because `devices/` never imports
`controller` and its `DevicesError` is a family under it too. Each family subclasses it;
`InputError` also stays a `ValueError` because callers and tests rely on that.
"""


class TablectlError(Exception):
    """An error tablectl raises deliberately (as opposed to a bug)."""


class InputError(TablectlError, ValueError):
    """Input from outside (a user, a device, a message) that the rules cannot accept.

    The message names the offending token so a technician can find it.
    """
