"""Helpers shared by several test modules: a daemon in a subprocess (daemon), a table with
its link against a real broker (link), a journald stand-in (journald_sink), a signed install
(signed_install), journal checks of a played table (journal_check)."""
