"""The devices' errors: one root, `DevicesError`, and the families under it.

`devices/` never imports `controller`, so this root is its own; the daemon catches
`DevicesError` (or one family) where a device, a frame or a packet may fail. It stays a
`ValueError`, as every family under it was before it had a root, because callers rely on that
(the control socket answers a refused `ValueError`).
"""


class DevicesError(ValueError):
    """An error a device module raises deliberately (as opposed to a bug)."""


class DeviceError(DevicesError):
    """A command a device cannot carry out: unknown command, bad argument, not started."""


class FrameError(DevicesError):
    """A frame we were asked to build cannot be built (too long, bad sequence or type)."""


class MessageError(DevicesError):
    """A payload that is not a message: empty, not printable ASCII, or a bad argument."""


class AlphaError(DevicesError):
    """An Alpha-protocol packet we were asked to build cannot be built."""
