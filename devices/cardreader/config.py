"""The card reader's config section, `[devices.cardreader]`: a serial device
(devices/proto/serial_config.py) with its own default port and baud rate. Optional: without it
the dealer keys each card (`dealer.player_card`)."""

from devices.proto.serial_config import SerialSection

SECTION = SerialSection("cardreader", "/dev/tablectl-cardreader", 9600)
