"""The devices' errors: one family, `DevicesError`, and the kinds under it.

`devices/` never imports `controller`; its family is an `InputError` of the one root
(`shared/errors.py`, `TablectlError`), so the daemon and the control socket catch it with every
other refusal. It stays a `ValueError` (through `InputError`), as every kind under it was before
it had a root, because callers rely on that.
"""

from shared.errors import InputError


class DevicesError(InputError):
    """An error a device module raises deliberately (as opposed to a bug)."""


class DeviceError(DevicesError):
    """A command a device cannot carry out: unknown command, bad argument, not started."""


class FrameError(DevicesError):
    """A frame we were asked to build cannot be built (too long, bad sequence or type)."""


class MessageError(DevicesError):
    """A payload that is not a message: empty, not printable ASCII, or a bad argument."""


class AlphaError(DevicesError):
    """An Alpha-protocol packet we were asked to build cannot be built."""
