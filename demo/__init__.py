"""Developer demonstrations started by ./dev (not installed with the package)."""
