"""tablectld, the table daemon: `main` (the entry point), `build` (a table from its
configuration), `service` (the loop that owns the state: emit, consume, process_batch),
`effects`, `commands` and `control` (the control socket's daemon side), `supervisor`,
`accounting` (the meters and the shift close), `logbook` (recent lines, the error history),
`notify` (systemd), `lifecycle` (start and stop lines). Only entry points import this package.
"""
