"""The table's side of the head-office link (issue 6), in one room.

`extension` (`LinkExtension`) is the daemon's part that wires the link into the table (an
extension against the `Table` protocol; tablectld adds it when `[link] enabled`); `relay`
(`OutboxRelay`) moves the journal's outbox to head office; `numbering` checks head office's acks
against the journal; `pool_values` decides which pool values are journaled; `patron_device`
(`PatronDevice`) asks head office about Player Cards; `supervise` keeps the long-lived tasks
running. What goes over the wire, the contract and the MQTT transport, is both programs' and
lives in shared/link/.
"""
