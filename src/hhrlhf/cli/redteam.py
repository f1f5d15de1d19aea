"""`hh redteam` commands (in progress)."""

commands: list = []
