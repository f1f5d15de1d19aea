"""The collection's rules, as typed functions over the database (:mod:`hhrlhf.collect.db`):
review and agreement, statistics and the leaderboard, export. The web layer calls these; they
know nothing of HTTP."""
