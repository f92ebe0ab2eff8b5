"""The meter's config section, `[devices.meter]`: a serial device
(devices/proto/serial_config.py) with its own default port and baud rate."""

from devices.proto.serial_config import SerialSection

SECTION = SerialSection("meter", "/dev/tablectl-meter", 9600)  # Alpha protocol: 9600 7E1
