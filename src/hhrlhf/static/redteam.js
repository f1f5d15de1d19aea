// Red-team conversations: the bar that stays at the top (warning, turn count, a way to stop).
// The turn count follows the transcript that collect.js writes; about four turns is a
// suggestion, never a limit. "Stop and rate" opens the end-of-conversation form at the rating.
"use strict";

(function () {
  function turnText(n, suggested) {
    if (n === 0) return "About four turns on one topic is suggested, not required.";
    if (n < suggested) return "Turn " + n + " of about " + suggested + " suggested. Stop whenever you want.";
    if (n === suggested) return "Turn " + n + ": the suggested " + suggested + " reached. Stop and rate, or go on if it helps.";
    return "Turn " + n + ": past the suggested " + suggested + ". Go on if it helps, or stop and rate.";
  }

  function setup() {
    const bar = document.getElementById("redteam-bar");
    const root = document.getElementById("conversation");
    if (!bar || !root) return;
    const count = document.getElementById("turn-count");
    const transcript = document.getElementById("transcript");
    const finish = document.getElementById("finish");
    const stop = document.getElementById("stop");
    const suggested = parseInt(count.dataset.suggested, 10) || 4;

    function update() {
      const n = transcript.querySelectorAll(".msg.human").length;
      count.textContent = turnText(n, suggested);
      count.dataset.turns = String(n);
      const done = root.dataset.status === "finished";
      if (stop) stop.hidden = done;
      if (done) count.textContent = "This conversation is finished.";
    }

    // an admin reading another annotator's conversation has no end form, so no Stop and rate
    if (stop && finish) stop.addEventListener("click", () => {
      finish.hidden = false;
      finish.open = true;
      finish.scrollIntoView({ block: "center" });
      const rating = document.getElementById("rating");
      if (rating) rating.focus();
    });

    new MutationObserver(update).observe(transcript, { childList: true });
    new MutationObserver(update).observe(root, { attributes: true, attributeFilter: ["data-status"] });
    update();
  }

  document.addEventListener("DOMContentLoaded", setup);
})();
