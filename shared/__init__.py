"""What the table (`controller`, `devices`) and head office (`headoffice`) both speak, in a room
neither owns: today the errors' root (docs/architecture.md). It imports nothing of the others."""
