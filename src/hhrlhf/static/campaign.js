// The campaign's parts of the pages: the home page's "Start" of the next task, and the
// /admin/campaign forms (settings, targets, tasks). Plain JavaScript over /api/v1.
"use strict";

(function () {
  const { $, $$, api, say } = window.hhCollect;
  const post = (url, body) => api("POST", url, body);
  const number = (el) => (el.value.trim() === "" ? null : parseInt(el.value, 10));

  // a form whose submit sends ``body()`` to ``url`` and reloads the page once saved
  function sendForm(form, status, url, body) {
    if (!form) return;
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      say(status, "Saving…");
      try {
        await post(url, body());
        say(status, "Saved.", "ok");
        window.location.reload();
      } catch (err) {
        say(status, err.message, "error");
        button.disabled = false;
      }
    });
  }

  function setupNextTask() {
    const form = $("#start-task");
    if (!form) return;
    const status = $("#start-task-status");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      say(status, "Starting…");
      try {
        const conv = await post("/api/v1/conversations", {}); // no text: the next task
        window.location.assign("/conversations/" + conv.id);
      } catch (err) {
        say(status, err.message, "error");
        button.disabled = false;
      }
    });
  }

  function setupAdmin() {
    const status = $("#settings-status");
    sendForm($("#free-form"), status, "/api/v1/admin/campaign", () => ({
      free_conversations: $("#free-conversations").checked,
    }));
    sendForm($("#targets-form"), status, "/api/v1/admin/campaign", () => {
      const targets = {
        unit: $("#target-unit").value,
        per_day: number($("#target-day")),
        per_week: number($("#target-week")),
        total: number($("#target-total")),
      };
      const limited = targets.per_day || targets.per_week || targets.total;
      const body = { targets: limited ? targets : null };
      const name = $("#target-annotator").value.trim();
      if (name) body.annotator = name;
      return body;
    });
    sendForm($("#total-form"), status, "/api/v1/admin/campaign", () => {
      const count = number($("#total-count"));
      return { campaign_total: count ? { unit: $("#total-unit").value, count } : null };
    });
    sendForm($("#task-form"), $("#task-status"), "/api/v1/admin/tasks", () => ({
      text: $("#task-text").value,
      mode: $("#task-mode").value,
      repeat: number($("#task-repeat")) || 1,
      tags: $("#task-tags").value.split(";").map((t) => t.trim()).filter(Boolean),
    }));
    $$(".task-toggle").forEach((btn) => {
      btn.addEventListener("click", async () => {
        btn.disabled = true;
        try {
          await post("/api/v1/admin/tasks/" + btn.dataset.id + "/disable", {
            disabled: btn.dataset.disabled === "1",
          });
          window.location.reload();
        } catch (err) {
          say($("#task-status"), err.message, "error");
          btn.disabled = false;
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    setupNextTask();
    setupAdmin();
  });
})();
