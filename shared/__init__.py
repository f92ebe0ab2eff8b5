"""What the table (`controller`, `devices`) and head office (`headoffice`) both speak, in a room
neither owns (docs/architecture.md): the MQTT link's contract and transport (`link`), the
errors' root (`errors`), money (`money`), the clock (`clock`), the TOML reader
(`config_reader`) and ending asyncio tasks (`stopping`). It imports nothing of the others
(tests/test_architecture.py)."""
