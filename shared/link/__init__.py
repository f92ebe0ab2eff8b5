"""The MQTT link as both ends speak it: `contract` (the topics and versioned payload schemas,
docs/mqtt.md, docs/asyncapi.yaml), `patron` (the Player Card messages, issue 29) and
`transport` (aiomqtt behind `connect`, the only aiomqtt user). The table's side of the link is
controller/link/; head office's is headoffice/worker.py."""
