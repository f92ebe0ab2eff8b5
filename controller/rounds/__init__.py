"""Round state machines: (state, event, now) -> (state, effects). Pure; no I/O."""
