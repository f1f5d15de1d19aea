"""`hh convert` commands (in progress)."""

commands: list = []
