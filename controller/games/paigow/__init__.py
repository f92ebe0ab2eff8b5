"""Pai Gow tiles: pure rules for the nsw, nz and act profiles. No I/O."""
