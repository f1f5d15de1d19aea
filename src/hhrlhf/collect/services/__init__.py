"""The collection's rules, as typed functions over the database handle
(:class:`hhrlhf.collect.db.Storage`, always the first argument): annotators and their logins,
conversations and turns, pairing, generation leases, choices, review, statistics and the
leaderboard's games, the export. The web layer calls these; they know nothing of HTTP and
raise the domain errors of :mod:`hhrlhf.errors`. docs/architecture.md draws the layers."""
