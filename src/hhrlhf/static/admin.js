// The review page and the admin pages: plain JavaScript over the /api/v1 routes.
// Text from the server is set with textContent only (never parsed as HTML).
"use strict";

(function () {
  // The request and message helpers come from collect.js (base.html loads it first).
  const { $, $$, api, say, pageKey, toggleAllRaw } = window.hhCollect;
  const post = (url, body) => api("POST", url, body);

  // -- review: a click or keys 1..2N send the answer, then the next task loads -------------
  const LAST = "hh-review-last"; // what happened to the last review, said on the next page
  function sayLast() {
    const box = $("#review-last");
    const last = window.sessionStorage.getItem(LAST);
    window.sessionStorage.removeItem(LAST);
    if (!box || !last) return;
    box.textContent = last;
    box.hidden = false;
  }
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
        window.sessionStorage.setItem(LAST, "Saved: your answer to the last review is stored.");
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
        say(status, "Skipped. Loading the next one…", "ok");
        window.sessionStorage.setItem(
          LAST,
          "Skipped: the last review was put aside; it comes back once nothing else is left.",
        );
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
        ($(".candidate .text", content) || content).focus(); // A first: the scale opens once both are seen
      });
    // the scale opens once A and B have both been in view (read, not answered blind)
    const seen = new Set();
    const hint = $("#review-hint");
    let open = false;
    const watcher = new IntersectionObserver(
      (entries) => {
        entries.forEach((e) => {
          if (e.isIntersecting) seen.add(e.target.closest(".candidate"));
        });
        if (open || seen.size < 2) return;
        open = true;
        watcher.disconnect();
        points.forEach((b) => (b.disabled = false));
        hint.textContent = "Pick a point: click it or press its key.";
      },
      { threshold: 0.5 },
    );
    $$(".candidate .text", root).forEach((t) => watcher.observe(t)); // formatted or raw
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
      if (btn && !open) say(status, "Read A and B first: the scale opens once both have been in view.", "error");
      else if (btn) answer(btn);
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

  // -- backends: pause, resume, weight (the page reloads with the new state and log) -------
  function initBackends(root) {
    const status = $("#backend-status");
    const LAST_CHANGE = "hh-backend-last"; // what the last change did, said after the reload
    const last = window.sessionStorage.getItem(LAST_CHANGE);
    window.sessionStorage.removeItem(LAST_CHANGE);
    if (last) say(status, last, "ok");
    const base = (name) => "/api/v1/admin/backends/" + encodeURIComponent(name);
    async function change(url, body, done) {
      say(status, "Saving…");
      try {
        await post(url, body);
        window.sessionStorage.setItem(LAST_CHANGE, done);
        window.location.reload();
      } catch (err) {
        say(status, err.message, "error");
      }
    }
    $$(".backend-action", root).forEach((btn) =>
      btn.addEventListener("click", () => {
        const { name, action } = btn.dataset;
        const done = name + (action === "pause" ? " is paused." : " is drawn again.");
        change(base(name) + "/" + action, undefined, done);
      }),
    );
    $$(".backend-weight", root).forEach((form) =>
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        const input = $("input[name=weight]", form);
        const weight = Number(input.value);
        if (!input.value || !Number.isFinite(weight) || weight <= 0) {
          say(status, "The weight must be a number above 0.", "error");
          input.focus();
          return;
        }
        const name = form.dataset.name;
        change(base(name) + "/weight", { weight }, name + "'s weight is now " + weight + ".");
      }),
    );
  }

  document.addEventListener("DOMContentLoaded", () => {
    sayLast();
    const review = $("#review");
    if (review) initReview(review);
    if ($("#annotators")) initAdmin();
    const live = $("#live");
    if (live) initBackends(live);
  });
})();
