"""The head-office console in the browser: pools, tables, alarms and held jackpot hits, for
operators who log in (docs/headoffice-console.md). `tablectl-headoffice console` serves it."""
