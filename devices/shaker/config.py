"""The shaker's config section, `[devices.shaker]`: a serial device
(devices/proto/serial_config.py) with its own default port and baud rate."""

from devices.proto.serial_config import SerialSection

SECTION = SerialSection("shaker", "/dev/tablectl-shaker", 115200)
