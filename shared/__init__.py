"""What every program of tablectl shares and no room owns: the table's daemon and CLI
(controller/), the device drivers (devices/, which never import controller) and head office
(headoffice/) may each import it; it imports none of them (tests/test_architecture.py)."""
