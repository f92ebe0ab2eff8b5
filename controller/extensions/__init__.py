"""The daemon's parts beside the round machine: `devices` (technician device tests),
`service_menu` (lamp walk, guided buttons, serial loopback), `verify` (software verification).
Each works against the narrow `Table` protocol in `base`, which the daemon's service offers;
none imports `controller.daemon`. The head-office link is such a part too, in its own room
(controller/link/extension.py).
"""
