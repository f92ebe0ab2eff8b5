"""The head-office link (issue 6): MQTT v5 through aiomqtt, kept behind `transport` (`connect`
gives a `Connection`; `LinkError` when the broker cannot be reached).

`contract` holds the topics and versioned payload schemas both ends share (docs/mqtt.md,
docs/asyncapi.yaml); `relay` (`OutboxRelay`) moves the journal's outbox to head office;
`supervise` keeps the long-lived tasks running. The daemon's part that wires it into the table
is `controller.link.extension.LinkExtension`.
"""
