"""The head-office link (issue 6): MQTT v5 through aiomqtt behind `transport.Transport`.

`contract` holds the topics and versioned payload schemas both ends share (docs/mqtt.md,
docs/asyncapi.yaml); `relay` moves the journal's outbox to head office; `extension` is the
daemon part (`LinkExtension`) that wires it into `TableService`.
"""
