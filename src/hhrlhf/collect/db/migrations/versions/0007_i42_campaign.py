"""The campaign layer (docs/collect.md, "Running a campaign"): live campaign settings,
versioned guidelines and their acknowledgements, imported tasks, live backend states and
their log, gold comparisons (reviewed like collected ones), the qualification round, and the
reviewers' verdicts. A deployment that uses none of it has empty tables and NULL columns.

Revision ID: 0007_campaign
Revises: 0006_stop_requested
Create Date: 2026-11-28 10:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_campaign"
down_revision = "0006_stop_requested"
branch_labels = None
depends_on = None


def _pk(table: str, *cols: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*cols, name=op.f(f"pk_{table}"))


def _fk(
    table: str, col: str, target: str, ondelete: str | None = "CASCADE"
) -> sa.ForeignKeyConstraint:
    ref = target.split(".")[0]
    return sa.ForeignKeyConstraint(
        [col], [target], name=op.f(f"fk_{table}_{col}_{ref}"), ondelete=ondelete
    )


def _when(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    _create_tables()
    with op.batch_alter_table("annotators") as batch:
        batch.add_column(sa.Column("qualification", sa.String(length=20), nullable=True))
        batch.add_column(_when("qualified_at", nullable=True))
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(sa.Column("task_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("guidelines_version", sa.Integer(), nullable=True))
        batch.create_index(batch.f("ix_conversations_task_id"), ["task_id"])
        batch.create_foreign_key(
            batch.f("fk_conversations_task_id_tasks"),
            "tasks",
            ["task_id"],
            ["id"],
            ondelete="SET NULL",
        )
    with op.batch_alter_table("reviews") as batch:
        batch.add_column(sa.Column("gold_id", sa.Integer(), nullable=True))
        batch.alter_column("comparison_id", existing_type=sa.Integer(), nullable=True)
        batch.create_index(batch.f("ix_reviews_gold_id"), ["gold_id"])
        batch.create_unique_constraint(batch.f("uq_reviews_gold_id"), ["gold_id", "reviewer_id"])
        batch.create_foreign_key(
            batch.f("fk_reviews_gold_id_gold_items"),
            "gold_items",
            ["gold_id"],
            ["id"],
            ondelete="CASCADE",
        )


def _create_tables() -> None:
    op.create_table(
        "campaign_settings",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=True),
        _when("updated_at"),
        _pk("campaign_settings", "key"),
    )
    op.create_table(
        "guidelines",
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("important", sa.Boolean(), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=True),
        _when("created_at"),
        _pk("guidelines", "version"),
    )
    op.create_table(
        "guidelines_acks",
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        _when("acked_at"),
        _fk("guidelines_acks", "annotator_id", "annotators.id"),
        _fk("guidelines_acks", "version", "guidelines.version"),
        _pk("guidelines_acks", "annotator_id", "version"),
    )
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("served", sa.Integer(), server_default="0", nullable=False),
        sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False),
        _when("created_at"),
        _pk("tasks", "id"),
    )
    op.create_table(
        "backend_states",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=True),
        sa.Column("updated_by", sa.String(length=200), nullable=True),
        _when("updated_at"),
        _pk("backend_states", "name"),
    )
    op.create_table(
        "backend_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("by", sa.String(length=200), nullable=True),
        _when("at"),
        _pk("backend_events", "id"),
    )
    op.create_index(op.f("ix_backend_events_backend"), "backend_events", ["backend"])
    op.create_table(
        "gold_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("prefix", sa.Text(), nullable=False),
        sa.Column("chosen", sa.Text(), nullable=False),
        sa.Column("rejected", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=True),
        _when("created_at"),
        _pk("gold_items", "id"),
        sa.UniqueConstraint("digest", name=op.f("uq_gold_items_digest")),
    )
    op.create_table(
        "verdicts",
        sa.Column("comparison_id", sa.Integer(), nullable=False),
        sa.Column("reviewer_id", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(length=10), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("fixed_pick", sa.String(length=1), nullable=True),
        sa.Column("fixed_strength", sa.Integer(), nullable=True),
        _when("decided_at"),
        _fk("verdicts", "comparison_id", "comparisons.id"),
        _fk("verdicts", "reviewer_id", "annotators.id", ondelete=None),
        _pk("verdicts", "comparison_id"),
    )
    op.create_index(op.f("ix_verdicts_reviewer_id"), "verdicts", ["reviewer_id"])


def downgrade() -> None:
    with op.batch_alter_table("reviews") as batch:
        batch.drop_constraint(batch.f("fk_reviews_gold_id_gold_items"), type_="foreignkey")
        batch.drop_constraint(batch.f("uq_reviews_gold_id"), type_="unique")
        batch.drop_index(batch.f("ix_reviews_gold_id"))
        batch.alter_column("comparison_id", existing_type=sa.Integer(), nullable=False)
        batch.drop_column("gold_id")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_constraint(batch.f("fk_conversations_task_id_tasks"), type_="foreignkey")
        batch.drop_index(batch.f("ix_conversations_task_id"))
        batch.drop_column("guidelines_version")
        batch.drop_column("task_id")
    with op.batch_alter_table("annotators") as batch:
        batch.drop_column("qualified_at")
        batch.drop_column("qualification")
    op.drop_index(op.f("ix_verdicts_reviewer_id"), table_name="verdicts")
    op.drop_index(op.f("ix_backend_events_backend"), table_name="backend_events")
    for table in (
        "verdicts",
        "gold_items",
        "backend_events",
        "backend_states",
        "tasks",
        "guidelines_acks",
        "guidelines",
        "campaign_settings",
    ):
        op.drop_table(table)
