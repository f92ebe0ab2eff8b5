"""tablectl: the firmware service of a casino gaming table."""

__version__ = "0.1.0"
