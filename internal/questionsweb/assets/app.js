// Live updates and in-place answers for the page of `qkit questions serve`. The page works without
// this script too (plain form posts); the script adds the live list and keeps what was typed when
// something goes wrong.
"use strict";
(function () {
  const sets = document.getElementById("sets");
  const empty = document.getElementById("empty");
  const conn = document.getElementById("conn");

  function status(text, down) {
    conn.textContent = text;
    conn.classList.toggle("down", !!down);
  }

  function parse(html) {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  function openCount() {
    return sets.querySelectorAll(".set:not(.closed)").length;
  }

  // badge shows the status a set is in now on its heading (answered sets must not still say pending).
  function badge(section, state) {
    const b = section.querySelector(".status");
    if (!b || !state) return;
    b.textContent = state;
    b.className = "status status-" + state;
  }

  function close(section, message, ok, state) {
    badge(section, state);
    if (section.classList.contains("closed")) return;
    section.classList.add("closed");
    section.querySelectorAll("input, textarea, button").forEach((el) => { el.disabled = true; });
    const msg = section.querySelector(".msg");
    if (!section.dataset.told) {
      msg.textContent = message;
      msg.className = "msg " + (ok ? "ok" : "err");
    }
  }

  const es = new EventSource("/events");
  es.addEventListener("open", () => status("Live: new questions appear here as soon as they are asked."));
  es.addEventListener("error", () => {
    if (es.readyState === EventSource.CLOSED) {
      status("This page lost its access: qkit questions serve restarted or the link is no longer valid. Open the new link it printed.", true);
    } else {
      status("Connection to qkit questions serve lost; retrying. Answers cannot be sent until it is back.", true);
    }
  });
  es.addEventListener("bye", () => {
    es.close();
    status("qkit questions serve has stopped. Answers cannot be sent until it runs again (then open the new link it prints).", true);
  });
  es.addEventListener("set", (e) => {
    const d = JSON.parse(e.data);
    const fresh = parse(d.html);
    const cur = document.getElementById("set-" + d.id);
    if (!cur) {
      sets.appendChild(fresh);
    } else if (cur.dataset.version !== d.version) {
      if (cur.dataset.dirty) {
        // Keep what the person has typed; only the heading and the note change.
        cur.querySelector("h2").replaceWith(fresh.querySelector("h2"));
        cur.querySelector(".meta").replaceWith(fresh.querySelector(".meta"));
        cur.dataset.version = d.version;
      } else {
        cur.replaceWith(fresh);
      }
    }
    empty.hidden = true;
  });
  es.addEventListener("sync", (e) => {
    const d = JSON.parse(e.data);
    const open = new Set(d.open);
    sets.querySelectorAll(".set").forEach((s) => {
      if (!open.has(s.dataset.id)) {
        close(s, (d.closed && d.closed[s.dataset.id]) || "This question set is no longer open.", false,
          d.ended && d.ended[s.dataset.id]);
      }
    });
    empty.hidden = openCount() > 0;
  });

  // One answer per single-choice question: a chosen option clears the free text and the other way round.
  document.addEventListener("input", (e) => {
    const section = e.target.closest(".set");
    if (section) section.dataset.dirty = "1";
    const fs = e.target.closest("fieldset.question");
    if (!fs || fs.dataset.multi === "true") return;
    if (e.target.type === "text" && e.target.value !== "") {
      fs.querySelectorAll("input[type=radio]").forEach((r) => { r.checked = false; });
    } else if (e.target.type === "radio") {
      const other = fs.querySelector("input[type=text]");
      if (other) other.value = "";
    }
  });

  document.addEventListener("submit", async (e) => {
    const form = e.target;
    const section = form.closest(".set");
    if (!section) return;
    e.preventDefault();
    const msg = section.querySelector(".msg");
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const res = await fetch(form.action, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { "Accept": "application/json" },
        credentials: "same-origin",
      });
      let body;
      try { body = await res.json(); } catch { body = { ok: false, message: "Unexpected reply (" + res.status + ")." }; }
      msg.textContent = body.message;
      msg.className = "msg " + (body.ok ? "ok" : "err");
      if (body.ok || res.status === 409 || res.status === 404) {
        section.dataset.told = "1";
        close(section, body.message, body.ok, body.state);
        empty.hidden = openCount() > 0;
        return;
      }
    } catch {
      msg.textContent = "Could not reach qkit questions serve: your answer was NOT sent. It stays filled in; send it again when the server is back.";
      msg.className = "msg err";
    }
    buttons.forEach((b) => { b.disabled = false; });
  });
})();
