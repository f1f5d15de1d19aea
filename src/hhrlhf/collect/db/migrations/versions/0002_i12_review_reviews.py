"""Review tasks: finished comparisons re-shown, blind, to other annotators.

Revision ID: 0002_review
Revises: 0001
Create Date: 2026-11-23 04:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_review"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reviews",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("comparison_id", sa.Integer(), nullable=False),
        sa.Column("reviewer_id", sa.Integer(), nullable=False),
        sa.Column("swapped", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("pick", sa.String(length=1), nullable=True),
        sa.Column("strength", sa.Integer(), nullable=True),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["comparison_id"],
            ["comparisons.id"],
            name=op.f("fk_reviews_comparison_id_comparisons"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["reviewer_id"], ["annotators.id"], name=op.f("fk_reviews_reviewer_id_annotators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reviews")),
        sa.UniqueConstraint("comparison_id", "reviewer_id", name=op.f("uq_reviews_comparison_id")),
    )
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_reviews_comparison_id"), ["comparison_id"])
        batch_op.create_index(batch_op.f("ix_reviews_reviewer_id"), ["reviewer_id"])


def downgrade() -> None:
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_reviews_reviewer_id"))
        batch_op.drop_index(batch_op.f("ix_reviews_comparison_id"))
    op.drop_table("reviews")
