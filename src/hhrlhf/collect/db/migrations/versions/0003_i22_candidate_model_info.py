"""Candidates record their backend's model_type and num_params at generation time.

The red-team export reads them from here, so a later change of the config does not rewrite
what an old conversation was generated with. Rows from before this revision hold NULL: the
export then falls back to the config (``--config``) and to the backend's name / "unknown".

Revision ID: 0003_model_info
Revises: 0002_review
Create Date: 2026-11-25 05:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_model_info"
down_revision = "0002_review"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("candidates", schema=None) as batch_op:
        batch_op.add_column(sa.Column("model_type", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("num_params", sa.String(length=50), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("candidates", schema=None) as batch_op:
        batch_op.drop_column("num_params")
        batch_op.drop_column("model_type")
