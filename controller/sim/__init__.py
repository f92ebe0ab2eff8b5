"""Simulated people at a table: players and dealer who answer the round machine's status with
the events they would cause. Devices (dice, shuffler) are simulated in devices/, not here."""
