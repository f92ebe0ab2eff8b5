"""Errors shared by the rules engines, the CLI and the daemon."""


class InputError(ValueError):
    """Input from outside (a user, a device, a message) that the rules cannot accept.

    The message names the offending token so a technician can find it.
    """
