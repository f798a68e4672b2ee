"""A toy study kind, declared in this package alone (docs/architecture.md, "Add a study kind"):
the share of each evaluand's administrations that completed, and the minutes they took."""
