"""Rate limits count in the database: each worker's requests per minute, read by every worker.

Before this revision each worker process kept its own windows, so with N workers (or hosts) a
key could reach N times a limit. The table holds a few minutes of counts at most.

Revision ID: 0004_rate_counts
Revises: 0003_model_info
Create Date: 2026-11-27 07:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_rate_counts"
down_revision = "0003_model_info"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_counts",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("minute", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=64), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "key", "minute", "worker", name=op.f("pk_rate_counts")),
    )


def downgrade() -> None:
    op.drop_table("rate_counts")
