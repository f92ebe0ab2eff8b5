"""The reference head-office jackpot service (issue 6): linked pools, a durable ledger,
awards with the UTH engine's award function, and an MQTT worker (docs/headoffice.md)."""
