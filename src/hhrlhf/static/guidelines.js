// The guidelines pages: acknowledge the current version (/guidelines); preview and publish a
// new one (/admin/guidelines). The preview's HTML is the server's, sanitised by the same
// renderer as the guidelines page; every other text is set with textContent.
"use strict";

(function () {
  const { $, api, say } = window.hhCollect;

  function setupAcknowledge() {
    const form = $("#acknowledge");
    if (!form) return;
    const status = $("#acknowledge-status");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = $("#acknowledge-button");
      button.disabled = true;
      say(status, "Saving…");
      try {
        await api("POST", "/api/v1/guidelines/acknowledge", {
          version: Number(form.dataset.version),
        });
        window.location.assign("/");
      } catch (err) {
        say(status, err.message, "error");
        button.disabled = false;
      }
    });
  }

  function setupEditor() {
    const form = $("#guidelines-editor");
    if (!form) return;
    const source = $("#guidelines-source");
    const status = $("#guidelines-status");
    $("#guidelines-preview-button").addEventListener("click", async () => {
      say(status, "Rendering…");
      try {
        const data = await api("POST", "/api/v1/admin/guidelines/preview", { text: source.value });
        // the server's sanitised rendering, parsed inert and moved in (no HTML sink)
        const doc = new DOMParser().parseFromString(data.html, "text/html");
        $("#guidelines-preview").replaceChildren(...Array.from(doc.body.childNodes));
        $("#guidelines-preview-card").hidden = false;
        say(status, "Preview below; nothing is published yet.", "ok");
      } catch (err) {
        say(status, err.message, "error");
      }
    });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const important = $("#guidelines-important").checked;
      const button = $("#guidelines-publish");
      button.disabled = true;
      say(status, "Publishing…");
      try {
        const data = await api("POST", "/api/v1/admin/guidelines", { text: source.value, important });
        window.sessionStorage.setItem("hh-guidelines-published", String(data.guidelines.version));
        window.location.reload();
      } catch (err) {
        say(status, err.message, "error");
        button.disabled = false;
      }
    });
    const published = window.sessionStorage.getItem("hh-guidelines-published");
    window.sessionStorage.removeItem("hh-guidelines-published");
    if (published) say(status, "Version " + published + " is published.", "ok");
  }

  document.addEventListener("DOMContentLoaded", () => {
    setupAcknowledge();
    setupEditor();
  });
})();
