// The /judge page: accept, reject with a reason, or fix a label, by click or key; then the
// next comparison loads. Text from the server is set with textContent only.
"use strict";

(function () {
  const { $, $$, api, say, pageKey, toggleAllRaw } = window.hhCollect;
  const LAST = "hh-judge-last"; // what happened to the last comparison, said on the next page

  function sayLast() {
    const box = $("#judge-last");
    const last = window.sessionStorage.getItem(LAST);
    window.sessionStorage.removeItem(LAST);
    if (!box || !last) return;
    box.textContent = last;
    box.hidden = false;
  }

  function initJudge(root) {
    const status = $("#judge-status");
    const reason = $("#reason");
    const points = $$(".judge-point", root);
    const controls = [$("#accept"), $("#reject"), ...points];
    let busy = false;
    // the label's own point: marked, and no fix (that would be an accept)
    points.forEach((b) => {
      if (b.dataset.slot === root.dataset.pick && b.dataset.strength === root.dataset.strength) {
        b.classList.add("selected");
        b.disabled = true;
        b.title += " (the label as given)";
      }
    });
    async function send(body, done) {
      if (busy) return;
      busy = true;
      const enabled = controls.filter((b) => !b.disabled);
      enabled.forEach((b) => (b.disabled = true));
      say(status, "Saving…");
      try {
        await api("POST", "/api/v1/judge/" + root.dataset.id, body);
        window.sessionStorage.setItem(LAST, done);
        say(status, "Saved. Loading the next one…", "ok");
        window.location.assign($("#skip").getAttribute("href")); // skipped ones stay skipped
      } catch (err) {
        say(status, err.message, "error");
        enabled.forEach((b) => (b.disabled = false));
        busy = false;
      }
    }
    const accept = () => send({ verdict: "accept" }, "Accepted: the last label stands.");
    function reject() {
      const why = reason.value.trim();
      if (!why) {
        say(status, "A rejection needs a reason: type it in the Reason box.", "error");
        reason.focus();
        return;
      }
      send({ verdict: "reject", reason: why }, "Rejected: the last label is left out of --accepted-only exports.");
    }
    function fix(btn) {
      if (btn.classList.contains("selected")) {
        say(status, "That is the label as given: press a to accept it.", "error");
        return;
      }
      if (btn.disabled) return;
      send(
        { verdict: "fix", pick: btn.dataset.slot, strength: parseInt(btn.dataset.strength, 10) },
        "Fixed: the last label is now " + btn.dataset.slot.toUpperCase() + btn.dataset.strength + ".",
      );
    }
    $("#accept").addEventListener("click", accept);
    $("#reject-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      reject();
    });
    points.forEach((b) => b.addEventListener("click", () => fix(b)));
    reason.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") reason.blur();
    });
    document.addEventListener("keydown", (ev) => {
      if (!pageKey(ev) || busy) return;
      if (ev.key === "a") accept();
      else if (ev.key === "r") {
        ev.preventDefault(); // the key moves the focus, it does not type an "r"
        reason.focus();
      } else if (ev.key === "s") window.location.assign($("#skip").getAttribute("href"));
      else if (ev.key === "v") toggleAllRaw();
      else {
        const btn = points.find((b) => b.dataset.key === ev.key);
        if (btn) fix(btn);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    sayLast();
    const root = $("#judge");
    if (root) initJudge(root);
  });
})();
