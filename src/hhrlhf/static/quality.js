// The admin's quality page: a failed annotator's Reset button starts them a new round.
"use strict";

(function () {
  const { $, $$, api, say } = window.hhCollect;
  function init() {
    const status = $("#reset-status");
    $$("#qualification-table tr[data-name]").forEach((row) => {
      const button = $(".qualification-reset", row);
      if (!button) return;
      button.addEventListener("click", async () => {
        const name = row.dataset.name;
        button.disabled = true;
        try {
          await api(
            "POST",
            "/api/v1/admin/qualification/" + encodeURIComponent(name) + "/reset",
          );
          window.location.reload();
        } catch (err) {
          say(status, err.message, "error");
          button.disabled = false;
        }
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
