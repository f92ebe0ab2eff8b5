"""What the table (`controller`, `devices`) and head office (`headoffice`) both speak, in a room
neither owns: the errors' root and the money formatter (docs/architecture.md). It imports
nothing of the others."""
