"""The daemon's parts beside the round machine: `devices` (technician device tests), `verify`
(software verification), `link` (head office over MQTT). Each works against the narrow `Table`
protocol in `base`, which the daemon's service offers; none imports `controller.daemon`.
"""
