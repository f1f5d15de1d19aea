"""A Stop asked for through another worker (``turns.stop_requested``): the worker writing the
turn reads it, stops its responses and stores what they wrote, as its own Stop does.

Revision ID: 0006_stop_requested
Revises: 0005_flags
Create Date: 2026-11-28 08:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_stop_requested"
down_revision = "0005_flags"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(
            sa.Column("stop_requested", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("stop_requested")
