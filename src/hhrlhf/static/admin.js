// The review page and the admin pages: plain JavaScript over the /api/v1 routes.
// Text from the server is set with textContent only (never parsed as HTML).
"use strict";

(function () {
  // The request and message helpers come from collect.js (base.html loads it first).
  const { $, $$, api, say, pageKey, toggleAllRaw } = window.hhCollect;
  const post = (url, body) => api("POST", url, body);

  // -- review: a click or keys 1..2N send the answer, then the next task loads -------------
  function initReview(root) {
    const status = $("#review-status");
    const points = $$(".review-point", root);
    let busy = false;
    async function answer(btn) {
      if (busy) return;
      busy = true;
      points.forEach((b) => (b.disabled = true));
      btn.classList.add("selected");
      say(status, "Saving…");
      try {
        await post("/api/v1/reviews/" + root.dataset.id, {
          pick: btn.dataset.slot,
          strength: parseInt(btn.dataset.strength, 10),
        });
        say(status, "Saved. Loading the next one…", "ok");
        window.location.reload();
      } catch (err) {
        say(status, err.message, "error");
        points.forEach((b) => (b.disabled = false));
        btn.classList.remove("selected");
        busy = false;
      }
    }
    async function skip() {
      if (busy) return;
      busy = true;
      say(status, "Skipping…");
      try {
        await post("/api/v1/reviews/" + root.dataset.id + "/skip");
        window.location.reload();
      } catch (err) {
        say(status, err.message, "error");
        busy = false;
      }
    }
    // red-team: the content warning first; nothing is shown or answered before "Show"
    const content = $("#review-content");
    const reveal = $("#reveal");
    if (reveal)
      reveal.addEventListener("click", () => {
        content.hidden = false;
        $("#content-warning").hidden = true;
        (points[0] || content).focus();
      });
    points.forEach((b) => b.addEventListener("click", () => answer(b)));
    $("#skip").addEventListener("click", skip);
    document.addEventListener("keydown", (ev) => {
      if (!pageKey(ev)) return;
      if (ev.key === "s") {
        skip();
        return;
      }
      if (content.hidden) return;
      const btn = points.find((b) => b.dataset.key === ev.key);
      if (btn) answer(btn);
      else if (ev.key === "v") toggleAllRaw();
    });
  }

  // -- admin: add, enable/disable, change role ---------------------------------------------
  function initAdmin() {
    const status = $("#annotator-status");
    $$("#annotators tr[data-name]").forEach((row) => {
      const name = row.dataset.name;
      const toggle = $(".annotator-toggle", row);
      const role = $(".annotator-role", row);
      if (toggle)
        toggle.addEventListener("click", async () => {
          try {
            await post("/api/v1/admin/annotators/" + encodeURIComponent(name), {
              disabled: toggle.dataset.disabled === "true",
            });
            window.location.reload();
          } catch (err) {
            say(status, err.message, "error");
          }
        });
      if (role)
        role.addEventListener("click", async () => {
          try {
            await post("/api/v1/admin/annotators/" + encodeURIComponent(name), {
              role: role.dataset.role,
            });
            window.location.reload();
          } catch (err) {
            say(status, err.message, "error");
          }
        });
    });
    const form = $("#add-annotator");
    if (form)
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const addStatus = $("#add-status");
        try {
          const data = await post("/api/v1/admin/annotators", {
            name: $("#new-name").value,
            role: $("#new-role").value,
            attributes: { is_upworker: $("#new-upworker").checked },
          });
          say(addStatus, "Added " + data.annotator.name + ". Reload the page to see them in the table.", "ok");
          $("#new-token-link").textContent =
            window.location.origin + "/login?token=" + encodeURIComponent(data.token);
          $("#new-token").hidden = false;
          form.reset();
        } catch (err) {
          say(addStatus, err.message, "error");
        }
      });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const review = $("#review");
    if (review) initReview(review);
    if ($("#annotators")) initAdmin();
  });
})();
