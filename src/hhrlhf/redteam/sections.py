"""The report's layout, shared by computing and rendering: its sections and its plots."""

from __future__ import annotations

__all__ = ["SECTIONS", "PLOTS"]

#: Section id -> title, in page order.
SECTIONS = {
    "table1": "Table 1: attempts per model type and size",
    "fig1": "Fig. 1: mean rating and min-harmlessness by model type and size",
    "success": "Attack success and rating vs min-harmlessness (Fig. 11)",
    "members": "Fig. 5: red-team members",
    "marginals": "Fig. 7: marginal distributions",
    "tags": "Fig. 9: tags, total vs successful",
    "themes": "Attack themes: clusters of task descriptions",
    "turns": "Turns: human turns per attempt vs success",
}

#: Plot file name -> (section, caption).
PLOTS = {
    "fig1_rating.png": (
        "fig1",
        "Mean success rating per model type and size, 95% bootstrap intervals",
    ),
    "fig1_min_harmlessness.png": (
        "fig1",
        "Mean min-harmlessness per model type and size, 95% "
        "bootstrap intervals; hollow markers: the paper",
    ),
    "min_harmlessness_by_model_type.png": (
        "fig1",
        "Distribution of min-harmlessness per model type",
    ),
    "success_by_cell.png": ("success", "Share of successful attempts per model type and size"),
    "rating_vs_harmlessness.png": ("success", "Rating vs min-harmlessness (jittered)"),
    "members_bar.png": ("members", "Attempts per member, most active first"),
    "members_lorenz.png": ("members", "Lorenz curve of attempts over members"),
    "members_success.png": ("members", "Per-member success share vs attempts"),
    "marginals.png": ("marginals", "Ratings, min-harmlessness and task-description scores"),
    "tags.png": ("tags", "Tag counts per model type, total vs successful"),
    "themes_silhouette.png": ("themes", "Silhouette per candidate k"),
    "themes.png": ("themes", "Cluster sizes, top terms and success"),
    "turns.png": ("turns", "Attempts and success share by number of human turns"),
}
