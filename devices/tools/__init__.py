"""The technician's device service tests, run by the daemon between rounds
(`tablectl devices lamps|buttons|loopback`, docs/operations.md):

    lamps.py     light each jackpot lamp in turn, read each pin back, restore the lamps
    buttons.py   wait for one named input to be pressed and released, and say what else moved
    loopback.py  send a pattern through a serial port with a loopback plug and compare

Each works on the real driver (GPIO pins, a serial port), so under `tablectld --simulate=pty` it
exercises the same code a table runs: gpiozero's mock pins, a pty with a loopback at its end.
"""
