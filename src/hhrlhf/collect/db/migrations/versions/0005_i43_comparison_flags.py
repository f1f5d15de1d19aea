"""Mislabel flags of the collected comparisons (``hh collect flag``): one row per comparison,
the latest run's only (a new run replaces them all).

Revision ID: 0005_flags
Revises: 0004_rate_counts
Create Date: 2026-11-28 05:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_flags"
down_revision = "0004_rate_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "comparison_flags",
        sa.Column("comparison_id", sa.Integer(), nullable=False),
        sa.Column("margin", sa.Float(), nullable=False),
        sa.Column("margin_sd", sa.Float(), nullable=False),
        sa.Column("p_mislabelled", sa.Float(), nullable=False),
        sa.Column("class", sa.String(length=20), nullable=False),
        sa.Column("flagged_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["comparison_id"],
            ["comparisons.id"],
            name=op.f("fk_comparison_flags_comparison_id_comparisons"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("comparison_id", name=op.f("pk_comparison_flags")),
    )


def downgrade() -> None:
    op.drop_table("comparison_flags")
