"""The approved game rules as data: every numbered clause of each seed (seeds/, copied verbatim
from the regulators' texts), the citations of clauses in code and tests, and the trace of one to
the other (docs/traceability.md)."""
