"""`hh pm` commands (in progress)."""

commands: list = []
