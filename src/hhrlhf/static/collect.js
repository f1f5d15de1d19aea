// The collection pages: plain JavaScript over the /api/v1 routes, no framework, no build step.
// Every piece of model or user text is set with textContent (never parsed as HTML).
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  function csrfToken() {
    const meta = $('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  // A request with the CSRF header (``accept``: the answer wanted; ``signal``: to abort it);
  // resolves to the response once its head is in, rejects with a clear message when the
  // server cannot be reached or refuses it.
  async function request(method, url, body, accept, signal) {
    const opts = {
      method,
      headers: { Accept: accept },
      credentials: "same-origin",
      cache: "no-store", // a page restored by Back must see the conversation as it is now
      signal,
    };
    if (method !== "GET") opts.headers["X-CSRF-Token"] = csrfToken();
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(url, opts);
    } catch (err) {
      throw new Error("The server cannot be reached. Check your connection and try again.");
    }
    if (!res.ok) throw refusal(res, await jsonOf(res));
    return res;
  }

  async function jsonOf(res) {
    try {
      return await res.json();
    } catch (err) {
      return null;
    }
  }

  // A JSON request; resolves to the parsed body.
  async function api(method, url, body) {
    return jsonOf(await request(method, url, body, "application/json"));
  }

  // The error for a refused request (``data``: its JSON body, if any).
  function refusal(res, data) {
    let msg = data && data.error ? data.error : "The server answered " + res.status + ".";
    if (res.status === 401) msg = "Your session has ended: open your login link again.";
    const e = new Error(msg);
    e.status = res.status;
    return e;
  }

  // A POST whose answer is server-sent events (a message sent with "stream": true).
  function postForEvents(url, body, signal) {
    return request("POST", url, body, "text/event-stream", signal);
  }

  // Reads server-sent events from a fetch answer's body, calling on(name, data) for each
  // (keep-alive comments skipped). Resolves true once it read an "end" event, false when
  // the body stopped before one (a dropped connection, an abort).
  async function readEvents(res, on) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        return false;
      }
      if (chunk.done) return false;
      buffer += decoder.decode(chunk.value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let name = "message";
        let data = "";
        block.split("\n").forEach((line) => {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        });
        if (!data) continue; // a comment line
        on(name, JSON.parse(data));
        if (name === "end") {
          reader.cancel().catch(() => {});
          return true;
        }
      }
    }
  }

  function say(el, text, kind) {
    if (!el) return;
    el.textContent = text || "";
    el.classList.toggle("error", kind === "error");
    el.classList.toggle("ok", kind === "ok");
  }

  // Data text as hh show prints it (hhrlhf.text.printable): C0 controls but newline and tab,
  // DEL and C1 as \xNN; the bidi controls and zero-width characters as \uNNNN.
  const HIDDEN = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;
  function visible(text) {
    return String(text).replace(HIDDEN, (c) => {
      const n = c.charCodeAt(0);
      return n < 0x100 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0");
    });
  }

  // A response shown formatted: ``html`` is the server's rendering (markdown-it, raw HTML off,
  // no images, only http/https/mailto links); without it, or with "Raw" pressed, the exact text.
  function showText(el, text, html) {
    el.hhText = text;
    el.hhHtml = html;
    const raw = html === undefined || html === null || el.classList.contains("raw");
    el.classList.toggle("md", !raw);
    if (raw) {
      el.textContent = visible(text);
      return;
    }
    const doc = new DOMParser().parseFromString(html, "text/html");
    el.replaceChildren(...Array.from(doc.body.childNodes));
  }

  // a "Raw" button switches its response between formatted and the text that is exported
  function rawToggle(el) {
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "raw-toggle link";
    btn.textContent = "Raw";
    btn.setAttribute("aria-pressed", "false");
    btn.title = "Show the exact text that is exported";
    btn.addEventListener("click", () => {
      const raw = !el.classList.contains("raw");
      el.classList.toggle("raw", raw);
      btn.setAttribute("aria-pressed", String(raw));
      if (el.hhText !== undefined) showText(el, el.hhText, el.hhHtml);
    });
    return btn;
  }

  // keys typed into a text field are text, not commands (a checkbox is not a text field)
  function isTyping(t) {
    if (!t || !t.tagName) return false;
    if (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable) return true;
    return t.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(t.type);
  }

  // a key for the page: not typed into a field, no modifier, no dialog open
  function pageKey(ev) {
    if (isTyping(ev.target) || ev.ctrlKey || ev.metaKey || ev.altKey) return false;
    return !document.querySelector("dialog[open]");
  }

  // key v: every response shown switches together between formatted and raw
  function toggleAllRaw() {
    const buttons = $$(".raw-toggle").filter((b) => b.offsetParent !== null);
    if (!buttons.length) return;
    const raw = buttons[0].getAttribute("aria-pressed") !== "true";
    buttons.forEach((b) => {
      if ((b.getAttribute("aria-pressed") === "true") !== raw) b.click();
    });
  }

  // "?" (or the Keys button) lists the page's keys; Escape or Close shuts the list
  function setupKeysHelp() {
    const dialog = $("#keys-help");
    if (!dialog) return;
    const open = () => {
      if (!dialog.open) dialog.showModal();
    };
    $("#keys-open").addEventListener("click", open);
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "?" && !isTyping(ev.target) && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
        ev.preventDefault();
        open();
      }
    });
  }

  // key g, on every page of a logged-in annotator: the guidelines (the nav's link)
  function setupGuidelinesKey() {
    const link = $("#guidelines-link");
    if (!link) return;
    document.addEventListener("keydown", (ev) => {
      if (ev.key !== "g" || ev.defaultPrevented || !pageKey(ev)) return;
      ev.preventDefault();
      window.location.assign(link.href);
    });
  }

  function newRequestId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return Date.now().toString(36) + Math.random().toString(36).slice(2);
  }

  // ---- every page: log out --------------------------------------------------------------
  function setupLogout() {
    const btn = $("#logout");
    if (!btn) return;
    btn.addEventListener("click", async () => {
      try {
        await api("POST", "/logout");
      } catch (err) {
        /* the cookie is cleared either way */
      }
      window.location.assign("/login?out=1");
    });
  }

  // ---- home: start a conversation -------------------------------------------------------
  function setupHome() {
    const form = $("#new-conversation");
    if (!form) return;
    const status = $("#new-status");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const task = $("#task").value.trim();
      const mode = (form.querySelector('input[name="mode"]:checked') || {}).value || "helpful";
      if (!task) {
        say(status, "Write a task description first.", "error");
        return;
      }
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      say(status, "Starting…");
      try {
        const conv = await api("POST", "/api/v1/conversations", { mode, task_description: task });
        window.location.assign("/conversations/" + conv.id);
      } catch (err) {
        say(status, err.message, "error");
        button.disabled = false;
      }
    });
  }

  // ---- a conversation -------------------------------------------------------------------
  function setupConversation() {
    const root = $("#conversation");
    if (!root) return;
    const convId = root.dataset.id;
    const transcript = $("#transcript");
    const compare = $("#compare");
    // an admin reading another annotator's conversation: the page has no message box and no
    // end form (the server leaves them out); stand-ins outside the page keep the code one path
    const writer = root.dataset.writer === "1";
    const composer = $("#composer") || document.createElement("form");
    const message = $("#message") || document.createElement("textarea");
    const sendStatus = $("#send-status");
    const choiceStatus = $("#choice-status");
    const turnError = $("#turn-error");
    const turnErrorText = $("#turn-error-text");
    const scaleHint = $("#scale-hint");
    const points = $$("#scale .point");
    const editToggle = $("#edit-toggle");
    const editor = $("#editor");
    const editText = $("#edit-text");
    const finishBox = $("#finish") || document.createElement("details");
    const finished = $("#finished");

    const state = {
      turn: null, // the undecided turn: {id, index, texts: {a, b}, done: {a, b}}
      source: null, // where the undecided turn's events are read: {close()}
      scaleOn: false,
      sending: false,
      pending: null, // {pick, strength} waiting for an edit
      requestId: null,
      requestKey: null,
      loaded: false, // the conversation as stored is shown (what another tab may change)
    };

    const panel = (slot) => $('.candidate[data-slot="' + slot + '"]', compare);
    const part = (slot, role) => $('[data-role="' + role + '"]', panel(slot));
    ["a", "b"].forEach((slot) => {
      const head = $('.candidate[data-slot="' + slot + '"] header', compare);
      head.append(rawToggle(part(slot, "text")));
    });

    function addBubble(kind, who, text, note, html) {
      const li = document.createElement("li");
      li.className = "msg " + kind;
      const head = document.createElement("div");
      head.className = "who";
      head.textContent = who;
      if (note) {
        const small = document.createElement("small");
        small.textContent = " " + note;
        head.appendChild(small);
      }
      const body = document.createElement("div");
      body.className = "body";
      body.dir = "auto";
      showText(body, text, html);
      if (html !== undefined) head.append(" ", rawToggle(body));
      li.append(head, body);
      transcript.appendChild(li);
      return li;
    }

    function addDecided(turn) {
      const picked = turn.pick ? turn.pick.toUpperCase() : "";
      let note = "(" + picked + (turn.strength ? turn.strength : "") + (turn.edit ? ", edited" : "") + ")";
      // red-team, red_team_continue = "other": the conversation goes on with the response not picked
      const other = (turn.candidates || []).find((c) => c.slot !== turn.pick);
      const chosen = (turn.candidates || []).find((c) => c.slot === turn.pick);
      if (!turn.edit && other && chosen && turn.continued === other.text && other.text !== chosen.text) {
        note = "(" + picked + turn.strength + " more harmful; continued with " + other.slot.toUpperCase() + ")";
      }
      addBubble("assistant", "Assistant", turn.continued || "", note, turn.continued_html);
    }

    function setScale(on) {
      on = on && writer; // the choice is the annotator's own
      state.scaleOn = on;
      points.forEach((b) => {
        b.disabled = !on;
      });
      scaleHint.textContent = on
        ? "Pick a point: click it or press its key."
        : "The scale opens when both responses are complete.";
      compare.classList.toggle("ready", on);
    }

    // both responses complete: the scale, or (the same text twice) no comparison to make
    function bothReady() {
      const same = state.turn.texts.a === state.turn.texts.b;
      $("#identical").hidden = !same;
      $("#scale").hidden = same;
      setScale(!same);
    }

    function showComposer(on) {
      // the message box is hidden while it has focus (Enter sent the message): focus goes to
      // the question above the responses, at once. Left to the browser, it reaches the body
      // only after a rendering step, and a key pressed before that (a pick, once the scale
      // opens) would go to the hidden box and be lost.
      const had = !on && composer.contains(document.activeElement);
      composer.hidden = !on;
      if (on) message.focus();
      else if (had) $("#compare-question").focus({ preventScroll: true });
    }

    // while responses are written: seconds since the stream opened, per response, and Stop
    function startClock() {
      stopClock();
      const t0 = Date.now();
      const tick = () => {
        const secs = Math.floor((Date.now() - t0) / 1000) + " s";
        ["a", "b"].forEach((slot) => {
          if (state.turn && !state.turn.done[slot] && !panel(slot).classList.contains("failed"))
            part(slot, "elapsed").textContent = secs;
        });
      };
      tick();
      state.clock = window.setInterval(tick, 1000);
      $("#generating").hidden = false;
    }

    function stopClock() {
      if (state.clock) window.clearInterval(state.clock);
      state.clock = null;
      $("#generating").hidden = true;
    }

    async function halt() {
      if (!state.turn || $("#generating").hidden) return;
      const btn = $("#halt");
      btn.disabled = true;
      try {
        const res = await api("POST", "/api/v1/turns/" + state.turn.id + "/stop");
        if (!res.stopped) say(choiceStatus, "Nothing to stop: the responses are written.");
        else if (!res.here) await reloadTurn(); // stopped through another worker: as stored now
      } catch (err) {
        say(choiceStatus, err.message, "error");
      } finally {
        btn.disabled = false;
      }
    }

    // the undecided turn as the server has it now (its stream is left)
    async function reloadTurn() {
      const id = state.turn.id;
      const conv = await api("GET", "/api/v1/conversations/" + convId);
      const turn = conv.turns.find((t) => t.id === id);
      if (!turn || !state.turn || state.turn.id !== id) return;
      closeStream();
      startTurn(turn);
    }

    function closeStream() {
      stopClock();
      if (state.source) {
        state.source.close();
        state.source = null;
      }
    }

    // Another tab (or device) may change this conversation: a message sent, a pick made, the
    // end. What this page shows is compared with what is stored; when they differ, the page
    // says so and offers a reload instead of answering as if nothing happened.
    function shownShape() {
      const finishedHere = root.dataset.status === "finished";
      return {
        turns: transcript.querySelectorAll(".msg.human").length,
        open: state.turn ? state.turn.id : null,
        finished: finishedHere,
      };
    }

    function storedShape(conv) {
      const open = conv.turns.find((t) => !t.pick);
      return { turns: conv.turns.length, open: open ? open.id : null, finished: conv.status === "finished" };
    }

    async function changedElsewhere() {
      if (state.sending || !state.loaded) return false;
      let conv;
      try {
        conv = await api("GET", "/api/v1/conversations/" + convId);
      } catch (err) {
        return false;
      }
      if (state.sending) return false;
      const here = shownShape();
      const there = storedShape(conv);
      const same = here.turns === there.turns && here.open === there.open && here.finished === there.finished;
      if (same) return false;
      closeStream();
      setScale(false);
      if (writer) $("#send").disabled = true;
      const box = $("#stale");
      box.hidden = false;
      $("#stale-reload").focus();
      return true;
    }

    function resetCandidates() {
      ["a", "b"].forEach((slot) => {
        showText(part(slot, "text"), "");
        part(slot, "state").textContent = "waiting…";
        part(slot, "elapsed").textContent = "";
        part(slot, "note").hidden = true;
        panel(slot).classList.remove("done", "failed", "picked");
      });
      points.forEach((b) => b.classList.remove("selected"));
      $("#identical").hidden = true;
      $("#scale").hidden = false;
      turnError.hidden = true;
      say(choiceStatus, "");
      if (editor) editor.hidden = true;
      if (editToggle) editToggle.checked = false;
      state.pending = null;
      state.requestId = null;
      state.requestKey = null;
    }

    // what the page says of a response cut short (the server's cut_reason); still rateable
    const CUT_NOTES = {
      size: "Cut: the response reached the length limit.",
      time: "Cut: the response took too long; this is what it wrote.",
      stopped: "Stopped: this is what it wrote before Stop.",
      speaker: "Cut where the model started a new speaker turn.",
    };

    function slotDone(slot, text, cut, cutReason, html) {
      state.turn.texts[slot] = text;
      state.turn.done[slot] = true;
      showText(part(slot, "text"), text, html);
      part(slot, "state").textContent = "complete";
      panel(slot).classList.add("done");
      panel(slot).classList.remove("failed");
      const note = part(slot, "note");
      note.hidden = !cut;
      note.textContent = cut ? CUT_NOTES[cutReason] || CUT_NOTES.speaker : "";
    }

    // a failed response, as it failed (the other may still be written) or as stored: the same
    // words either way, no clock
    function slotFailed(slot, msg) {
      panel(slot).classList.add("failed");
      part(slot, "state").textContent = "failed";
      part(slot, "elapsed").textContent = "";
      const note = part(slot, "note");
      note.hidden = false;
      note.textContent = msg;
    }

    function showTurnError(msg) {
      // every response failed: the message itself may be what fails (too long, filtered)
      const allFailed = ["a", "b"].every((slot) => panel(slot).classList.contains("failed"));
      const withdraw = $("#withdraw");
      if (withdraw) withdraw.hidden = !allFailed;
      turnErrorText.textContent = allFailed && withdraw
        ? "No response could be generated. Your message is kept: retry, or edit the message."
        : msg;
      turnError.hidden = false;
      setScale(false);
      // Retry in view (nothing sticky covers it: the page's scroll padding keeps it clear)
      turnError.scrollIntoView({ block: "nearest" });
    }

    // an event of the undecided turn's stream, from either way of reading it
    function onEvent(name, d) {
      const turn = state.turn;
      if (name === "delta") {
        if (turn.done[d.slot]) return;
        turn.texts[d.slot] = (turn.texts[d.slot] || "") + d.text;
        showText(part(d.slot, "text"), turn.texts[d.slot]); // plain text while it streams
      } else if (name === "done") {
        slotDone(d.slot, d.text, d.cut, d.cut_reason, d.html);
      } else if (name === "error") {
        slotFailed(d.slot, d.message);
      } else if (name === "end") {
        closeStream();
        if (d.status === "ready" && turn.done.a && turn.done.b) {
          bothReady();
        } else {
          showTurnError("A response could not be generated. Your message is kept: retry.");
        }
      }
    }

    // the responses not yet complete are written again from the start, read from source
    // (an EventSource, or {close} of a message's own answer)
    function beginStream(source) {
      closeStream();
      const turn = state.turn;
      turnError.hidden = true;
      ["a", "b"].forEach((slot) => {
        if (!turn.done[slot]) {
          showText(part(slot, "text"), "");
          part(slot, "state").textContent = "writing…";
          panel(slot).classList.remove("failed");
          part(slot, "note").hidden = true;
          turn.texts[slot] = "";
        }
      });
      state.source = source;
      startClock();
    }

    // follows the undecided turn by its own stream (a reload, a retry, a dropped answer):
    // it starts the turn if nobody is writing it, follows it if somebody is, replays it if done
    function openStream() {
      const es = new EventSource("/api/v1/turns/" + state.turn.id + "/stream");
      beginStream(es);
      let ended = false;
      ["delta", "done", "end"].forEach((name) =>
        es.addEventListener(name, (ev) => {
          ended = ended || name === "end";
          onEvent(name, JSON.parse(ev.data));
        }),
      );
      es.addEventListener("error", (ev) => {
        // a server-sent "error" event carries data; a dropped connection does not
        if (ev.data) {
          onEvent("error", JSON.parse(ev.data));
          return;
        }
        if (ended) return;
        closeStream();
        showTurnError("The connection to the server was lost while the responses were written.");
      });
    }

    async function retry() {
      const btn = $("#retry");
      btn.disabled = true;
      try {
        await api("POST", "/api/v1/turns/" + state.turn.id + "/retry");
        // read back as stored: a retry on another model draws the sides again (a response
        // already complete may now show on the other side), then its stream is followed
        await reloadTurn();
      } catch (err) {
        turnErrorText.textContent = err.message;
      } finally {
        btn.disabled = false;
      }
    }

    // the message of a turn whose every response failed is withdrawn (its turn deleted) and
    // put back in the box, to edit and send again
    async function withdraw() {
      const btn = $("#withdraw");
      btn.disabled = true;
      try {
        const res = await api("POST", "/api/v1/turns/" + state.turn.id + "/withdraw");
        closeStream();
        const humans = transcript.querySelectorAll(".msg.human");
        if (humans.length) humans[humans.length - 1].remove();
        state.turn = null;
        compare.hidden = true;
        turnError.hidden = true;
        message.value = res.text;
        if (message.hhUpdateCount) message.hhUpdateCount();
        showComposer(true);
        say(sendStatus, "Your message is back in the box: change it and send it again.");
      } catch (err) {
        if (err.status === 409 && (await changedElsewhere())) return;
        turnErrorText.textContent = err.message;
      } finally {
        btn.disabled = false;
      }
    }

    function startTurn(turn, source) {
      // turn: {id, index, candidates (maybe), status}; source: where its events are read
      // already (a message's own answer), else its stream is opened
      state.turn = { id: turn.id, index: turn.index, texts: { a: "", b: "" }, done: { a: false, b: false } };
      resetCandidates();
      setScale(false);
      compare.hidden = false;
      showComposer(false);
      (turn.candidates || []).forEach((c) => {
        if (c.status === undefined || c.status === "ready") slotDone(c.slot, c.text, c.cut, c.cut_reason, c.html);
      });
      if (turn.status === "ready" && state.turn.done.a && state.turn.done.b) {
        bothReady();
      } else if (turn.status === "failed") {
        (turn.candidates || []).forEach((c) => {
          if (c.status === "failed") slotFailed(c.slot, c.error || "The model could not answer. Retry.");
        });
        showTurnError("A response could not be generated. Your message is kept: retry.");
      } else if (source) {
        beginStream(source);
      } else {
        openStream();
      }
    }

    function pointFor(key) {
      return points.find((b) => b.dataset.key === String(key));
    }

    // the editor is open on a response and its text was changed: that edit must not be lost
    function typedEdit() {
      if (!editor || editor.hidden || !state.pending) return null;
      const text = editText.value.trim();
      return text && editText.value !== state.turn.texts[state.pending.pick] ? text : null;
    }

    function choose(btn) {
      if (!state.scaleOn || state.sending) return;
      const pick = btn.dataset.slot;
      const strength = parseInt(btn.dataset.strength, 10);
      const typed = typedEdit();
      if (typed !== null) {
        if (pick === state.pending.pick) {
          // a point on the edited side: the edit goes with this strength
          points.forEach((b) => b.classList.toggle("selected", b === btn));
          editor.hidden = true;
          submitChoice(pick, strength, typed);
        } else {
          say(
            choiceStatus,
            "Your edit of " + state.pending.pick.toUpperCase() + " is kept: continue with it, " +
              "pick a point on its side, or cancel the edit to pick " + pick.toUpperCase() + ".",
            "error",
          );
          editText.focus();
        }
        return;
      }
      points.forEach((b) => b.classList.toggle("selected", b === btn));
      ["a", "b"].forEach((s) => panel(s).classList.toggle("picked", s === pick));
      if (editToggle && editToggle.checked) {
        state.pending = { pick, strength };
        $("#edit-label").textContent = "Edit response " + pick.toUpperCase() + " before continuing";
        editText.value = state.turn.texts[pick];
        editor.hidden = false;
        editText.focus();
        return;
      }
      submitChoice(pick, strength, null);
    }

    async function submitChoice(pick, strength, edit) {
      const body = { pick };
      if (strength !== null) body.strength = strength;
      if (edit !== null) body.edit = edit;
      // the same choice resent (after a network error) keeps its request id: idempotent
      const key = JSON.stringify(body);
      if (state.requestKey !== key) {
        state.requestKey = key;
        state.requestId = newRequestId();
      }
      body.request_id = state.requestId;
      state.sending = true;
      setScale(false);
      say(choiceStatus, "Saving…");
      try {
        const res = await api("POST", "/api/v1/turns/" + state.turn.id + "/choice", body);
        state.sending = false;
        say(choiceStatus, "");
        closeStream();
        addDecided(res.turn);
        compare.hidden = true;
        state.turn = null;
        showComposer(true);
        say(sendStatus, "Saved. Write your next message, or end the conversation.", "ok");
      } catch (err) {
        state.sending = false;
        if (err.status === 409 && (await changedElsewhere())) {
          say(choiceStatus, "Not saved: " + err.message + ".", "error");
          return; // decided or finished elsewhere (another tab): the page offers a reload
        }
        setScale(true);
        if (edit !== null && editor) {
          // the edit is kept as typed: the annotator fixes what the message names, saves again
          state.pending = { pick, strength };
          editText.value = edit;
          editor.hidden = false;
          say(choiceStatus, "Not saved: " + err.message, "error");
          editText.focus();
          return;
        }
        say(choiceStatus, "Not saved: " + err.message + " Pick again.", "error");
      }
    }

    async function send() {
      const text = message.value.trim();
      if (!text || state.sending || state.turn) return;
      state.sending = true;
      $("#send").disabled = true;
      say(sendStatus, "Sending…");
      // one request: the message's answer is its turn's events, as the responses are written
      const controller = new AbortController();
      const source = { close: () => controller.abort() };
      let res;
      try {
        res = await postForEvents("/api/v1/conversations/" + convId + "/turns", { text, stream: true }, controller.signal);
      } catch (err) {
        state.sending = false;
        $("#send").disabled = false;
        // refused as this page shows the conversation: was it changed in another tab?
        if (err.status === 409 && (await changedElsewhere())) return;
        say(sendStatus, err.message, "error");
        return;
      }
      message.value = "";
      if (message.hhUpdateCount) message.hhUpdateCount();
      say(sendStatus, "");
      const bubble = addBubble("human", "You", text);
      state.sending = false;
      $("#send").disabled = false;
      let named = false;
      const ended = await readEvents(res, (name, data) => {
        if (name === "turn") {
          named = true;
          startTurn({ id: data.id, index: data.index, status: data.status }, source);
          bubble.scrollIntoView({ block: "start" }); // the message, then A and B below it
        } else if (named && state.source === source) {
          onEvent(name, data);
        }
      });
      if (ended) return;
      if (!named) {
        window.location.reload(); // the message is stored, its turn unnamed: show it as stored
      } else if (state.source === source) {
        openStream(); // the answer broke off: the turn goes on by its own stream
      }
    }

    async function finish(ev) {
      ev.preventDefault();
      const body = {};
      const comment = $("#comment").value.trim();
      if (comment) body.comment = comment;
      const rating = $("#rating");
      if (rating) {
        if (rating.value === "") {
          say($("#finish-status"), "Rate how successful the attack was first.", "error");
          return;
        }
        body.rating = parseInt(rating.value, 10);
      }
      $("#finish-submit").disabled = true;
      try {
        await api("POST", "/api/v1/conversations/" + convId + "/finish", body);
        showFinished(comment, body.rating);
      } catch (err) {
        if (err.status === 409 && (await changedElsewhere())) return;
        say($("#finish-status"), err.message, "error");
        $("#finish-submit").disabled = false;
      }
    }

    function showFinished(comment, rating) {
      const shownRating = $("#finished-rating");
      if (shownRating && rating !== undefined && rating !== null) {
        // red-team: the rating given, in the words of the form that asked for it
        const option = $('#rating option[value="' + rating + '"]');
        shownRating.textContent = "Your rating of the attack: " + (option ? option.textContent : String(rating));
        shownRating.hidden = false;
      }
      closeStream();
      compare.hidden = true;
      composer.hidden = true;
      finishBox.hidden = true;
      finished.hidden = false;
      say(sendStatus, "");
      const c = $("#finished-comment");
      c.hidden = !comment;
      c.textContent = comment ? "Your comment: " + comment : "";
      root.dataset.status = "finished";
    }

    // wiring
    composer.addEventListener("submit", (ev) => {
      ev.preventDefault();
      send();
    });
    message.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        send();
      }
    });
    points.forEach((b) => b.addEventListener("click", () => choose(b)));
    const shown = (el) => el && !el.hidden && el.offsetParent !== null;
    const keys = {
      e: () => {
        if (!editToggle || compare.hidden) return false;
        editToggle.checked = !editToggle.checked;
        return true;
      },
      v: () => {
        toggleAllRaw();
        return true;
      },
      m: () => {
        if (composer.hidden) return false;
        message.focus();
        return true;
      },
      c: () => shown($("#identical-continue")) && ($("#identical-continue").click(), true),
      r: () => shown($("#retry")) && ($("#retry").click(), true),
      x: () => shown($("#halt")) && (halt(), true),
      f: () => {
        if (finishBox.hidden) return false;
        const stop = $("#stop");
        if (shown(stop)) {
          stop.click(); // red-team: the rating first
          return true;
        }
        finishBox.open = true;
        finishBox.scrollIntoView({ block: "center" });
        ($("#rating") || $("#comment")).focus();
        return true;
      },
    };
    document.addEventListener("keydown", (ev) => {
      if (!pageKey(ev)) return;
      const btn = pointFor(ev.key);
      if (btn && state.scaleOn) {
        ev.preventDefault();
        choose(btn);
        return;
      }
      const action = keys[ev.key];
      if (action && action()) ev.preventDefault();
    });
    $("#retry").addEventListener("click", retry);
    if ($("#withdraw")) $("#withdraw").addEventListener("click", withdraw);
    $("#halt").addEventListener("click", halt);
    $("#identical-continue").addEventListener("click", () => {
      // identical: recorded without a strength (the server stores the smallest point)
      if (state.turn && !state.sending) submitChoice("a", null, null);
    });
    if (editor) {
      $("#edit-submit").addEventListener("click", () => {
        if (!state.pending) return;
        const text = editText.value.trim();
        if (!text) {
          say(choiceStatus, "The edit is empty.", "error");
          return;
        }
        editor.hidden = true;
        submitChoice(state.pending.pick, state.pending.strength, text);
      });
      const cancelEdit = () => {
        editor.hidden = true;
        state.pending = null;
        points.forEach((b) => b.classList.remove("selected"));
        ["a", "b"].forEach((s) => panel(s).classList.remove("picked"));
      };
      $("#edit-cancel").addEventListener("click", cancelEdit);
      // Escape closes the editor; focus goes back to the toggle that opened it
      editor.addEventListener("keydown", (ev) => {
        if (ev.key !== "Escape") return;
        ev.preventDefault();
        cancelEdit();
        editToggle.focus();
      });
    }
    if (writer) $("#finish-form").addEventListener("submit", finish);
    const draftKey = "hh-draft-" + convId;
    $("#stale-reload").addEventListener("click", () => {
      // a message typed here and refused is kept through the reload
      if (message.value.trim()) window.sessionStorage.setItem(draftKey, message.value);
      window.location.reload();
    });
    // back to this tab (or to this page by Back): is the conversation still as shown?
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") changedElsewhere();
    });
    window.addEventListener("pageshow", (ev) => {
      if (ev.persisted) changedElsewhere();
    });

    // load the conversation as stored
    api("GET", "/api/v1/conversations/" + convId)
      .then((conv) => {
        transcript.textContent = "";
        let open = null;
        conv.turns.forEach((t) => {
          addBubble("human", "You", t.human);
          if (t.pick) addDecided(t);
          else open = t;
        });
        state.loaded = true;
        if (conv.status === "finished") {
          showFinished(conv.comment || "", conv.rating);
          return;
        }
        finishBox.hidden = false;
        if (open) {
          startTurn(open);
          const humans = transcript.querySelectorAll(".msg.human");
          humans[humans.length - 1].scrollIntoView({ block: "start" });
        } else {
          showComposer(true);
        }
        const draft = window.sessionStorage.getItem(draftKey);
        if (draft !== null) {
          window.sessionStorage.removeItem(draftKey);
          if (!message.value) message.value = draft;
          if (!composer.hidden) say(sendStatus, "Your message is kept in the box: send it when you are ready.");
        }
      })
      .catch((err) => {
        say(sendStatus, err.message, "error");
        composer.hidden = false;
      });
  }

  // A text box with a limit (maxlength): near it, a counter says how much room is left; a
  // paste that does not fit is cut at a word break and the box says how much was left out
  // (the browser alone would cut it silently, mid-word).
  function limitBox(box) {
    const max = box.maxLength;
    if (!(max > 0)) return;
    const counter = document.createElement("p");
    counter.className = "counter hint";
    counter.id = box.id + "-counter";
    counter.setAttribute("role", "status");
    counter.hidden = true;
    box.after(counter);
    box.setAttribute("aria-describedby", counter.id);
    let cutNote = "";
    const n = (x) => x.toLocaleString("en");
    function update() {
      const len = box.value.length;
      const near = len >= Math.floor(max * 0.9);
      counter.hidden = !near && !cutNote;
      counter.classList.toggle("full", len >= max);
      const count = n(len) + " / " + n(max) + " characters";
      counter.textContent = cutNote ? cutNote + " " + count : count;
    }
    box.addEventListener("input", (ev) => {
      if (ev.inputType !== "insertFromPaste") cutNote = "";
      update();
    });
    box.addEventListener("paste", (ev) => {
      const text = ev.clipboardData ? ev.clipboardData.getData("text/plain") : "";
      const start = box.selectionStart;
      const end = box.selectionEnd;
      const room = max - (box.value.length - (end - start));
      if (text.length <= room) return;
      ev.preventDefault();
      let kept = text.slice(0, Math.max(room, 0));
      const brk = kept.search(/\s\S*$/); // back to the last word break, if one is near
      if (brk > 0 && kept.length - brk < 200 && text.length > kept.length) kept = kept.slice(0, brk);
      box.setRangeText(kept, start, end, "end");
      cutNote =
        "The paste was cut to fit the " + n(max) + "-character limit: its last " +
        n(text.length - kept.length) + " characters were left out.";
      box.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
    });
    box.addEventListener("change", update);
    box.hhUpdateCount = () => {
      cutNote = "";
      update();
    };
  }

  // Shared with admin.js (base.html loads this file first on every page).
  window.hhCollect = Object.freeze({ $, $$, api, say, visible, rawToggle, showText, pageKey, toggleAllRaw });

  // server-rendered pages (review): "Raw" switches a response between formatted and exact
  function setupRawToggles() {
    $$(".shown-text").forEach((box) => {
      const btn = $(".raw-toggle", box);
      btn.addEventListener("click", () => {
        const raw = !box.classList.contains("raw");
        box.classList.toggle("raw", raw);
        btn.setAttribute("aria-pressed", String(raw));
      });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $$("textarea[maxlength]").forEach(limitBox);
    setupRawToggles();
    setupKeysHelp();
    setupGuidelinesKey();
    setupLogout();
    setupHome();
    setupConversation();
  });
})();
