"""The shuffler's config section, `[devices.shuffler]`: a serial device
(devices/proto/serial_config.py) with its own default port and baud rate."""

from devices.proto.serial_config import SerialSection

SECTION = SerialSection("shuffler", "/dev/tablectl-shuffler", 115200)
