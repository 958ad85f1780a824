// makers-store Studio: live updates, paging and edits. Server-rendered
// fragments (escaped by the server's templates) are inserted as they come;
// anything this script shows itself goes through show(): text, never markup,
// control characters made visible.
"use strict";
(function () {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`).content;
  const TOKEN = meta("studio-token");
  const BASE = meta("studio-base");
  const page = document.body.dataset.page;
  const conversation = document.querySelector(".conversation");
  const cid = conversation ? conversation.dataset.id : null;

  // --- text and times a person reads ------------------------------------------

  // The characters makers_store.text.UNSAFE escapes (tests/studio holds the two
  // to the same set): C0 and C1 controls but tab and newline, DEL, the bidi
  // overrides and isolates, lone surrogates ("u": a surrogate pair is one
  // character, not two lone ones).
  const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]/gu;

  // `text` as the server's templates and the CLI show it: U+202E as "\u202e"
  // (it would reverse what follows), ESC as "\x1b" (else a blank box).
  function shown(text) {
    return String(text).replace(UNSAFE, (c) => {
      const code = c.codePointAt(0);
      return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
    });
  }

  // The one way this script puts text of its own (an answer, an error, a
  // header) on the page.
  function show(element, text) {
    element.textContent = shown(text);
  }

  const pad = (n) => String(n).padStart(2, "0");
  const localText = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const utcText = (d) => `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;

  // "just now", "3 min ago", "2 h ago", "1 day ago", "5 days ago": the CLI's words
  function ago(ms, now) {
    let delta = Math.trunc((now - ms) / 1000);
    const future = delta < 0;
    delta = Math.abs(delta);
    if (delta < 10) return "just now";
    let text = `${delta} s`;
    for (const [size, unit] of [[86400 * 365, "y"], [86400, "days"], [3600, "h"], [60, "min"]]) {
      if (delta >= size) {
        const amount = Math.floor(delta / size);
        text = `${amount} ${unit === "days" && amount === 1 ? "day" : unit}`;
        break;
      }
    }
    return future ? `in ${text}` : `${text} ago`;
  }

  // Every <time datetime> the server wrote (in UTC) in the browser's local
  // time, UTC on hover; in lists (data-relative) how long ago, local and UTC
  // on hover. Pages and every fragment inserted later (observed below).
  function showTimes(root) {
    const now = Date.now();
    const times = root.matches && root.matches("time[datetime]") ? [root] : root.querySelectorAll("time[datetime]");
    for (const time of times) {
      const at = new Date(time.dateTime);
      if (Number.isNaN(at.getTime())) continue;
      if (time.hasAttribute("data-relative")) {
        time.textContent = ago(at.getTime(), now);
        time.title = `${localText(at)} local, ${utcText(at)}`;
      } else {
        time.textContent = localText(at);
        time.title = utcText(at);
      }
    }
  }

  function toast(text, bad) {
    const box = document.createElement("div");
    box.className = bad ? "toast bad" : "toast";
    box.setAttribute("role", bad ? "alert" : "status");
    show(box, text);
    document.body.appendChild(box);
    setTimeout(() => box.remove(), bad ? 8000 : 2500);
  }

  async function post(path, body) {
    const response = await fetch(BASE + path, {
      method: "POST",
      headers: { "content-type": "application/json", "x-studio-token": TOKEN },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const answer = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
    return answer;
  }

  // POST whose answer is HTML the server's templates rendered (the doctor's findings).
  async function postFragment(path, body) {
    const response = await fetch(BASE + path, {
      method: "POST",
      headers: { "content-type": "application/json", "x-studio-token": TOKEN },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    if (!response.ok) {
      const answer = await response.json().catch(() => ({ error: response.statusText }));
      throw new Error(answer.error || `HTTP ${response.status}`);
    }
    return response.text();
  }

  // The one way the Studio asks before it acts: an in-page dialog (never the
  // browser's confirm() or prompt(), which a page cannot style, test or keep
  // in its language). `field`: {label, value} asks for a value too. Resolves
  // to true (or the value typed) when confirmed, null when cancelled.
  function ask(text, field) {
    const dialog = document.getElementById("ask");
    const input = document.getElementById("ask-input");
    show(document.getElementById("ask-text"), text);
    document.getElementById("ask-field").hidden = !field;
    input.required = Boolean(field);
    if (field) { show(document.getElementById("ask-label"), field.label); input.value = field.value; }
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => {
        if (dialog.returnValue !== "yes") resolve(null);
        else resolve(field ? input.value : true);
      }, { once: true });
      dialog.showModal();
      if (field) input.select(); else document.getElementById("ask-yes").focus();
    });
  }

  async function fragment(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) {
      const answer = await response.json().catch(() => ({ error: response.statusText }));
      throw new Error(answer.error || `HTTP ${response.status}`);
    }
    return response.text();
  }

  // --- conversation panels --------------------------------------------------

  function busy(panel) {
    const active = document.activeElement;
    return panel.contains(active) && active.matches("input, textarea, select") || panel.querySelector("[data-dirty]");
  }

  async function refreshPanel(name, force) {
    const panel = document.querySelector(`[data-panel="${name}"]`);
    if (!panel) return;
    if (!force && busy(panel)) { panel.classList.add("stale"); return; }
    const url = `${BASE}/panel.part?id=${encodeURIComponent(cid)}&name=${name}`;
    const html = await fragment(url);
    // the user may have started typing while it loaded: then keep their edit
    if (!force && busy(panel)) { panel.classList.add("stale"); return; }
    const opened = new Set(Array.from(panel.querySelectorAll("details[open]")).map(detailsKey));
    const loaded = panel.querySelector("[data-loaded]");
    panel.innerHTML = html;
    panel.classList.remove("stale");
    // keep what the user opened: expanded details, items loaded on demand
    for (const details of panel.querySelectorAll("details")) {
      if (opened.has(detailsKey(details))) details.open = true;
    }
    const fresh = loaded && loaded.id ? panel.querySelector(`#${loaded.id}`) : null;
    if (fresh) fresh.replaceWith(loaded);
  }

  function detailsKey(details) {
    const owner = details.closest("[data-checkpoint-id], [data-key], [data-message-id]");
    const id = owner ? owner.dataset.checkpointId || owner.dataset.key || owner.dataset.messageId : "";
    const summary = details.querySelector("summary");
    return `${id}|${summary ? summary.textContent : ""}`;
  }

  function lastMessageId() {
    const all = document.querySelectorAll("#messages [data-message-id]");
    return all.length ? all[all.length - 1].dataset.messageId : null;
  }

  async function appendNewer() {
    // opened at one message with newer ones after the page: those come by the button
    if (document.getElementById("messages").hasAttribute("data-anchored")) return;
    // pages of new messages until the last one (a burst may be longer than a page)
    while (await appendNewerPage()) { /* next page */ }
  }

  async function loadNewer(button) {
    const box = document.getElementById("messages");
    if (!(await appendNewerPage())) { box.removeAttribute("data-anchored"); button.remove(); }
  }

  // A tool call's result (or a result's call) already on the page: go to it
  // there; else the link asks the server, which finds it and opens the page at it.
  function followToolLink(link) {
    const wanted = link.dataset.find === "result"
      ? `[data-result-of="${CSS.escape(link.dataset.call)}"]`
      : `[data-call-id="${CSS.escape(link.dataset.call)}"]`;
    const partner = document.querySelector(`#messages ${wanted}`);
    if (!partner) return false;
    markTarget(partner.closest(".message"));
    return true;
  }

  function markTarget(message) {
    for (const old of document.querySelectorAll(".message.target")) old.classList.remove("target");
    message.classList.add("target");
    message.scrollIntoView({ block: "center" });
    message.focus({ preventScroll: true });
  }

  async function appendNewerPage() {
    const box = document.getElementById("messages");
    const last = lastMessageId();
    const url = last
      ? `${BASE}/messages.part?id=${encodeURIComponent(cid)}&newer=${encodeURIComponent(last)}`
      : `${BASE}/messages.part?id=${encodeURIComponent(cid)}`;
    const holder = document.createElement("div");
    holder.innerHTML = await fragment(url);
    if (!last) { box.innerHTML = ""; }
    const more = holder.querySelector("[data-more]");
    if (more) more.remove();
    for (const node of Array.from(holder.children)) {
      if (node.dataset.messageId && box.querySelector(`[data-message-id="${CSS.escape(node.dataset.messageId)}"]`)) continue;
      if (last && node.matches("button.older")) continue;
      if (node.dataset.messageId) node.classList.add("fresh");
      box.appendChild(node);
    }
    return Boolean(more);
  }

  async function loadOlder(button) {
    const url = `${BASE}/messages.part?id=${encodeURIComponent(cid)}&older=${encodeURIComponent(button.dataset.older)}`;
    const holder = document.createElement("div");
    holder.innerHTML = await fragment(url);
    const box = document.getElementById("messages");
    const anchor = button.nextElementSibling;
    button.remove();
    for (const node of Array.from(holder.children)) box.insertBefore(node, anchor);
  }

  async function refreshRuns() {
    const runs = document.getElementById("runs-list");
    if (runs) runs.innerHTML = await fragment(runs.dataset.part);
  }

  async function onChange(parts) {
    if (page === "conversation") {
      if (parts.includes("messages")) {
        await appendNewer();
        // a run's trace is written when it ends, after its messages: look twice
        refreshRuns().catch(() => {});
        setTimeout(() => refreshRuns().catch(() => {}), 1500);
      }
      if (parts.includes("conversation") || parts.includes("messages")) await refreshPanel("meta");
      if (parts.includes("state")) await refreshPanel("state");
      if (parts.includes("frameworks")) await refreshPanel("frameworks");
    } else if (page === "conversations") {
      // the list shows titles, counts and order: state or framework writes change none
      if (!parts.includes("conversations") && !parts.includes("conversation")) return;
      const list = document.getElementById("conversation-list");
      const params = new URLSearchParams(location.search);
      // a later page, or the conversations of state only (a walk of the store): as they were
      if (params.get("after") || params.get("before") || params.get("only")) return;
      const html = await fragment(list.dataset.part);
      const focused = list.contains(document.activeElement) ? document.activeElement.getAttribute("href") : null;
      list.innerHTML = html;
      if (focused) {  // keep keyboard users where they were
        const again = Array.from(list.querySelectorAll("a")).find((a) => a.getAttribute("href") === focused);
        if (again) again.focus();
      }
    }
  }

  // --- live updates (server-sent events) ------------------------------------

  // One refresh at a time; changes that arrive meanwhile are merged into the
  // next one, so a burst of writes costs a few fetches, not one per write.
  let queued = null;
  let refreshing = false;
  function schedule(parts) {
    queued = new Set([...(queued || []), ...parts]);
    if (refreshing) return;
    refreshing = true;
    (async () => {
      while (queued) {
        const next = Array.from(queued);
        queued = null;
        try { await onChange(next); } catch (error) { toast(error.message, true); }
      }
      refreshing = false;
    })();
  }

  function connect() {
    const watch = document.body.dataset.watch;
    const status = document.getElementById("live");
    if (!watch) { status.textContent = ""; return; }
    const url = watch === "conversation" ? `${BASE}/events?id=${encodeURIComponent(cid)}` : `${BASE}/events`;
    const source = new EventSource(url);
    source.addEventListener("ready", () => {
      status.textContent = "live";
      status.classList.add("on");
      // what was written between rendering the page and now
      schedule(["messages", "conversation", "state", "frameworks", "conversations"]);
    });
    source.addEventListener("change", (event) => {
      const change = JSON.parse(event.data);
      schedule(change.parts);
    });
    source.onerror = () => { status.textContent = "reconnecting"; status.classList.remove("on"); };
  }

  // --- edits ------------------------------------------------------------------

  const ACTIONS = {
    "meta": (form) => post("/api/meta", { id: cid, patch: form.elements.patch.value }).then(() => "metadata merged"),
    "meta-delete": (el) => post("/api/meta", { id: cid, patch: JSON.stringify({ [el.dataset.key]: null }) }).then(() => "metadata key deleted"),
    "state": (form) => post("/api/state", { id: cid, key: form.dataset.key, value: form.elements.value.value }).then(() => "state saved"),
    "state-new": (form) => post("/api/state", { id: cid, key: form.elements.key.value, value: form.elements.value.value }).then(() => "state added"),
    "state-delete": (el) => post("/api/state-delete", { id: cid, key: el.dataset.key }).then(() => "state key deleted"),
    "clear": () => post("/api/clear", { id: cid }).then(() => { document.getElementById("messages").innerHTML = ""; return "messages cleared"; }),
    "delete": () => post("/api/delete", { id: cid }).then(() => { location.href = `${BASE}/`; return "conversation deleted"; }),
    "fork": async (el) => {
      // the new id is asked for, with a fresh one proposed
      const proposed = `${cid}-fork-${Math.random().toString(36).slice(2, 8)}`;
      const newId = await ask(
        `Fork the conversation up to message ${el.dataset.message} into a new conversation (messages, metadata, state, LangGraph thread).`,
        { label: "New conversation id", value: proposed });
      if (!newId) return "fork cancelled";
      const answer = await post("/api/fork", { id: cid, message_id: el.dataset.message, new_id: newId });
      location.href = `${BASE}/conversation?id=${encodeURIComponent(answer.id)}`;
      return "forked";
    },
    "rerun": async (el) => {
      // fork just before this turn, then replay it from the Playground
      const answer = await post("/api/rerun", { id: cid, message_id: el.dataset.message });
      const query = new URLSearchParams({ id: answer.id, body: answer.body });
      if (answer.route) query.set("route", answer.route);
      location.href = `${BASE}/playground?${query}`;
      return answer.forked ? "forked" : "a fresh conversation";
    },
    "snapshot-save": async (form) => {
      const name = form.elements.name.value;
      const exists = Array.from(document.querySelectorAll("tr[data-snapshot]")).some((row) => row.dataset.snapshot === name);
      if (exists && !(await ask(`Snapshot ${name} exists: replace it with the store as it is now?`))) return "save cancelled";
      await post("/api/snapshot-save", { name, replace: exists });
      await refreshSnapshots();
      return `snapshot ${name} saved`;
    },
    "snapshot-restore": async (el) => {
      await post("/api/snapshot-restore", { name: el.dataset.name });
      await refreshSnapshots();
      return `snapshot ${el.dataset.name} restored`;
    },
    "history-check": async () => {
      const out = document.getElementById("history-check");
      out.innerHTML = await fragment(`${BASE}/history.part?id=${encodeURIComponent(cid)}`);
      return "history checked";
    },
    "openai-items": async () => {
      const out = document.getElementById("openai-items");
      out.innerHTML = await fragment(`${BASE}/openai.part?id=${encodeURIComponent(cid)}`);
      out.dataset.loaded = "1";
      return "OpenAI session items loaded";
    },
    "vacuum": async () => {
      const out = document.getElementById("vacuum-result");
      show(out, "vacuuming…");
      const report = (await post("/api/vacuum", {})).report;
      const size = (n) => (n === null ? "?" : `${n.toLocaleString("en")} bytes`);
      show(out, report.nothing_to_do ? report.note
        : `${report.note}: ${size(report.bytes_before)} before, ${size(report.bytes_after)} after, ${size(report.reclaimed_bytes)} given back`);
      return "vacuum done";
    },
    "doctor": async () => {
      const out = document.getElementById("doctor-findings");
      show(out, "checking every conversation…");
      out.innerHTML = await postFragment("/api/doctor", {});
      return "doctor done";
    },
    "doctor-repair": async () => {
      const out = document.getElementById("doctor-findings");
      out.innerHTML = await postFragment("/api/doctor-repair", {});
      return "repairs done";
    },
    "index-check": async () => {
      const out = document.getElementById("index-result");
      out.textContent = "checking…";
      out.innerHTML = await fragment(`${BASE}/index-check.part`);
      return "check done";
    },
    "index-rebuild": async () => {
      const answer = await post("/api/index-rebuild", {});
      const out = document.getElementById("index-result");
      show(out, "rebuilt: " + JSON.stringify(answer.summary));
      return "index rebuilt";
    },
  };

  async function refreshSnapshots() {
    const rows = document.getElementById("snapshot-rows");
    if (rows) rows.innerHTML = await fragment(rows.dataset.part);
  }

  // actions that only show more: the panel they sit in is not re-rendered
  const NO_REFRESH = new Set(["openai-items", "history-check"]);

  async function run(name, el) {
    if (el.dataset.confirm && !(await ask(el.dataset.confirm))) return;
    try {
      const said = await ACTIONS[name](el);
      const panel = NO_REFRESH.has(name) ? null : el.closest("[data-panel]");
      if (panel) { delete panel.dataset.dirty; await refreshPanel(panel.dataset.panel, true); }
      toast(said, false);  // once the panel shows what was saved
    } catch (error) {
      toast(error.message, true);
    }
  }

  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-action]");
    if (!form) return;
    event.preventDefault();
    run(form.dataset.action, form);
  });
  document.addEventListener("click", (event) => {
    const older = event.target.closest("button.older");
    if (older) { loadOlder(older).catch((e) => toast(e.message, true)); return; }
    const newer = event.target.closest("button.newer");
    if (newer) { loadNewer(newer).catch((e) => toast(e.message, true)); return; }
    const toolLink = event.target.closest("a.tool-link");
    if (toolLink && followToolLink(toolLink)) { event.preventDefault(); return; }
    const el = event.target.closest("button[data-action]");
    if (el && el.type === "button") run(el.dataset.action, el);
  });
  document.addEventListener("input", (event) => {
    const panel = event.target.closest("[data-panel]");
    if (panel) panel.dataset.dirty = "1";
  });

  // --- keyboard: "/" finds, j / k move through rows and messages -------------

  document.addEventListener("keydown", (event) => {
    if (event.target.matches("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "/") {
      const search = document.getElementById("search");
      if (search) { event.preventDefault(); search.focus(); }
    } else if (event.key === "j" || event.key === "k") {
      const items = Array.from(document.querySelectorAll(".row-link, .message"));
      if (!items.length) return;
      const at = items.indexOf(document.activeElement);
      const next = event.key === "j" ? Math.min(at + 1, items.length - 1) : Math.max(at - 1, 0);
      items[next].focus();
      event.preventDefault();
    }
  });

  // --- playground (serve only) ------------------------------------------------

  function playground() {
    const form = document.getElementById("playground");
    if (!form) return;
    const stop = document.getElementById("stop-run");
    const frames = document.getElementById("frames");
    const say = (id, text) => show(document.getElementById(id), text);
    let running = null;

    // the stop route: ROUTE/stop, else a sibling stop (/chat/stream -> /chat/stop)
    const routes = Array.from(form.elements.route.options).map((o) => o.value);
    const routeChanged = () => {
      const route = form.elements.route.value.replace(/\/$/, "");
      const sibling = route.replace(/\/[^/]*$/, "") + "/stop";
      form.elements.stop.value = routes.includes(route + "/stop") || !routes.includes(sibling) ? route + "/stop" : sibling;
    };
    form.elements.route.addEventListener("change", routeChanged);
    if (!form.elements.stop.value && form.elements.route.value) routeChanged();

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const conversationId = form.elements.cid.value;
      frames.textContent = "";
      say("run-status", "sending"); say("run-id", ""); say("run-instance", "");
      running = new AbortController();
      stop.disabled = false;
      try {
        const response = await fetch(form.elements.route.value, {
          method: "POST",
          headers: { "content-type": "application/json", "makers-conversation-id": conversationId },
          body: form.elements.body.value,
          signal: running.signal,
        });
        say("run-status", `HTTP ${response.status}, streaming`);
        say("run-id", response.headers.get("makers-run-id") || "");
        say("run-instance", response.headers.get("makers-instance") || "");
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffered = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffered += decoder.decode(value, { stream: true });
          const pieces = buffered.split(/\r?\n\r?\n/);
          buffered = pieces.pop();
          for (const piece of pieces) {
            const item = document.createElement("li");
            show(item, piece);
            frames.appendChild(item);
          }
        }
        if (buffered) { const item = document.createElement("li"); show(item, buffered); frames.appendChild(item); }
        say("run-status", `done (HTTP ${response.status})`);
      } catch (error) {
        say("run-status", error.name === "AbortError" ? "disconnected" : `failed: ${error.message}`);
      } finally {
        stop.disabled = true;
        running = null;
      }
    });

    stop.addEventListener("click", async () => {
      const conversationId = form.elements.cid.value;
      try {
        // the target goes in the body: with the header, the platform would
        // treat the stop request as the conversation's next run
        const response = await fetch(form.elements.stop.value, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ conversation_id: conversationId }),
        });
        toast(`stop route answered HTTP ${response.status}`, !response.ok);
      } catch (error) {
        toast(error.message, true);
      }
    });
  }

  async function overview() {
    const counts = document.getElementById("overview-counts");
    if (counts) counts.innerHTML = await fragment(counts.dataset.part);
  }

  playground();
  overview().catch((error) => toast(error.message, true));
  const target = document.querySelector("#messages .message.target");
  if (target) markTarget(target);
  connect();
  showTimes(document);
  new MutationObserver((changes) => {
    for (const change of changes) {
      for (const node of change.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) showTimes(node);
    }
  }).observe(document.body, { childList: true, subtree: true });
  setInterval(() => showTimes(document), 30000);  // "just now" does not stay true
})();
