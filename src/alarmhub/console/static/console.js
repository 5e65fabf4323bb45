// alarmhub operator console: live queues from /console/events, the alarm screen and its
// actions through /console/api. Plain JavaScript, no build step; every text from the server is
// put into the page with textContent (never as HTML). calls.js (the call list, calls and
// passcode checks on the alarm screen), plan.js (the alarm's action plan, dispatches), sites.js
// (the site's other alarms, moving them), schedules.js (the schedule block, the Schedules view),
// receivers.js (the Receivers view, its button counting failed links) and accounts.js (admins'
// data entry) build on what this file shares as window.alarmhub.
"use strict";

(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const meta = document.querySelector('meta[name="operator"]');
  const me = {
    code: meta.content,
    role: meta.dataset.role,
    supervisor: meta.dataset.supervisor === "yes",
  };
  // what the other scripts add: after the alarm screen is drawn, after a form opens, after an
  // action is refused, keys, to a resolution's body, after each snapshot of the queues, after
  // a view is shown, when an alarm is opened
  const hooks = {
    detail: [], formOpened: [], refused: [], keys: {}, resolving: [], snapshot: [], viewShown: [],
    opened: [],
  };

  // DOS 16-colour palette; COLOR is two hex digits, background then foreground.
  const PALETTE = [
    "#000000", "#0000aa", "#00aa00", "#00aaaa", "#aa0000", "#aa00aa", "#aa5500", "#aaaaaa",
    "#555555", "#5555ff", "#55ff55", "#55ffff", "#ff5555", "#ff55ff", "#ffff55", "#ffffff",
  ];
  const KEEPALIVE_GRACE_MS = 40000;
  const STATS_EVERY_MS = 30000;
  const AGE_BUCKETS = [
    ["< 1 min", 60], ["1-5 min", 300], ["5-15 min", 900], ["15-30 min", 1800],
    ["30-60 min", 3600], ["> 1 hour", Infinity],
  ];

  const state = {
    offsetMs: 0,            // server clock minus this computer's clock
    lastMessage: 0,
    snapshot: null,
    pending: [], inProcess: [], onHold: [], operators: [],
    mine: new Set(),        // alarms in process with me, as of the last snapshot
    receiving: null,        // true, false, or null when signed off
    openId: null,
    detail: null,
    detailTimer: null,
    detailLoadedAt: 0,
    resolutions: [],
    source: null,
  };
  const rowsOf = { pending: new Map(), "in-process": new Map(), "on-hold": new Map() };
  // the alarm screen's boxes that scroll (console.css): its body, its columns, its long lists
  const SCROLLING = ["alarm-body", "col-main", "column", "list-box"].map((c) => `#alarm-screen .${c}`).join(", ");

  // helpers ------------------------------------------------------------------------------------

  const $ = (selector) => document.querySelector(selector);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("data-")) node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // redraws a list (the live feed, another operator's action) without taking the cursor off it:
  // the focused element is found again in the new children by its tag and data attributes
  function replaceKeepingFocus(container, ...children) {
    const focused = container.contains(document.activeElement) ? document.activeElement : null;
    const keys = focused ? Object.entries(focused.dataset) : [];
    container.replaceChildren(...children);
    if (!focused || !keys.length) return;
    const same = [...container.querySelectorAll(focused.tagName)].find(
      (node) => keys.every(([key, value]) => node.dataset[key] === value),
    );
    if (same && !same.disabled) same.focus();
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const serverNowUs = () => (Date.now() + state.offsetMs) * 1000;

  function duration(us) {
    let seconds = Math.max(0, Math.floor(us / 1e6));
    const days = Math.floor(seconds / 86400);
    seconds -= days * 86400;
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds % 3600) / 60);
    const s = seconds % 60;
    const text = [h, m, s].map((n) => String(n).padStart(2, "0")).join(":");
    return days ? `${days}d ${text}` : text;
  }

  function when(us) {
    if (!us) return "";
    const date = new Date(us / 1000);
    const time = date.toLocaleTimeString([], { hour12: false });
    const today = new Date(serverNowUs() / 1000).toDateString() === date.toDateString();
    if (today) return time;
    return `${date.toLocaleDateString([], { month: "2-digit", day: "2-digit" })} ${time}`;
  }

  function colors(color) {
    const code = /^[0-9A-Fa-f]{2}$/.test(color || "") ? color : "07";
    return { background: PALETTE[parseInt(code[0], 16)], color: PALETTE[parseInt(code[1], 16)] };
  }

  function paint(node, color) {
    const c = colors(color);
    node.style.backgroundColor = c.background;
    node.style.color = c.color;
  }

  let bannerTimer = null;
  function banner(text, kind) {
    const node = $("#banner");
    node.textContent = text;
    node.className = `banner ${kind || ""}`;
    node.hidden = false;
    clearTimeout(bannerTimer);
    bannerTimer = setTimeout(() => { node.hidden = true; }, kind === "error" ? 10000 : 6000);
    if (state.openId !== null) feedback(text, kind); // the banner is behind the alarm screen
  }

  // the alarm screen's feedback line: what the last action did; it stays until the next one,
  // or until another alarm is opened by hand
  function feedback(text, kind) {
    const node = $("#alarm-feedback");
    keepingFormInView(() => {
      node.textContent = text || "";
      node.className = `feedback ${kind || ""}`;
      node.hidden = !text;
    });
  }

  // a change of the alarm screen (a new detail, the feedback line) that moves the open form
  // scrolls it back into view when it was in view before: what the operator is typing stays
  // in sight while the screen updates
  function keepingFormInView(change) {
    const name = FORMS.find((n) => !$(`#form-${n}`).hidden);
    const form = name ? $(`#form-${name}`) : null;
    const wasInView = form !== null && inView(form);
    change();
    if (wasInView && !inView(form)) form.scrollIntoView({ block: "nearest" });
  }

  // whether the whole of ``node`` is in sight: in the window and in the box that scrolls it
  function inView(node) {
    const box = node.getBoundingClientRect();
    const scroller = node.parentElement.closest(SCROLLING);
    const frame = scroller ? scroller.getBoundingClientRect() : { top: 0, bottom: innerHeight };
    return box.top >= Math.max(frame.top, 0) && box.bottom <= Math.min(frame.bottom, innerHeight);
  }

  // "Alarm 123 FIRE 700042", of an alarm of the detail, the siblings or the queues
  const alarmName = (a) => `Alarm ${a.alarm_id} ${a.type} ${a.account_number}`;

  // the feedback line of an action on the open alarm: "Alarm 123 FIRE 700042: note added."
  function said(what) {
    const d = state.detail;
    const name = d && d.alarm.alarm_id === state.openId ? alarmName(d.alarm) : `Alarm ${state.openId}`;
    feedback(`${name}: ${what}.`);
  }

  function toLogin() {
    window.location.assign("/console/login");
  }

  class ApiError extends Error {
    constructor(message, code, status) {
      super(message);
      this.code = code;
      this.status = status;
    }
  }

  async function api(method, path, body) {
    const options = {
      method,
      credentials: "same-origin",
      cache: "no-store",
      headers: { "X-CSRF-Token": csrf },
    };
    if (method === "POST") {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body || {});
    }
    let response;
    try {
      response = await fetch(`/console/api${path}`, options);
    } catch (err) {
      throw new ApiError("the node cannot be reached; try again", "NETWORK", 0);
    }
    const data = await response.json().catch(() => null);
    if (response.status === 401) {
      toLogin();
      throw new ApiError("your session has ended", "CONSOLE-SESSION", 401);
    }
    if (!response.ok) {
      const message = (data && data.message) || `the node answered ${response.status}`;
      throw new ApiError(message, data && data.error_code, response.status);
    }
    return data;
  }

  // the live feed ------------------------------------------------------------------------------

  function setLive(on) {
    const node = $("#live");
    node.className = `live ${on ? "on" : "off"}`;
    node.textContent = on ? "LIVE" : "RECONNECTING";
  }

  function connect() {
    if (state.source) state.source.close();
    const source = new EventSource("/console/events");
    state.source = source;
    source.addEventListener("snapshot", (e) => {
      state.lastMessage = Date.now();
      onSnapshot(JSON.parse(e.data));
    });
    source.addEventListener("clock", (e) => {
      state.lastMessage = Date.now();
      state.offsetMs = JSON.parse(e.data).server_us / 1000 - Date.now();
      setLive(true);
    });
    source.addEventListener("signed-out", () => {
      source.close();
      toLogin();
    });
    source.onopen = () => setLive(true);
    source.onerror = () => {
      setLive(false);
      if (source.readyState === EventSource.CLOSED) reconnectLater();
    };
  }

  let reconnectTimer = null;
  function reconnectLater() {
    if (reconnectTimer) return;
    reconnectTimer = setTimeout(async () => {
      reconnectTimer = null;
      try {
        await api("GET", "/me");   // a 401 goes to the sign-in page
        connect();
      } catch (err) {
        if (err.status !== 401) reconnectLater();
      }
    }, 2000);
  }

  function watchdog() {
    if (state.source && state.lastMessage && Date.now() - state.lastMessage > KEEPALIVE_GRACE_MS) {
      state.lastMessage = 0;
      state.source.close();
      setLive(false);
      reconnectLater();
    }
  }

  function objects(fields, rows) {
    return rows.map((row) => {
      const alarm = {};
      fields.forEach((name, i) => { alarm[name] = row[i]; });
      return alarm;
    });
  }

  function onSnapshot(snap) {
    state.snapshot = snap;
    state.pending = objects(snap.fields, snap.pending);
    state.inProcess = objects(snap.fields, snap.in_process);
    state.onHold = objects(snap.fields, snap.on_hold);
    state.operators = snap.operators;
    renderQueues(snap);
    renderOperators();
    renderAgesChart();
    noticeHanded();
    for (const hook of hooks.snapshot) hook(snap);
    if (state.openId === null) return;
    // the open alarm changed hands or state (a take-over, a hold ending, another operator):
    // show it at once, with no timer (browsers hold back the timers of a page left in the
    // background, down to once a minute); other changes refresh it at most once a second
    if (openAlarmMoved()) loadDetail();
    else refreshDetailSoon();
  }

  function openAlarmMoved() {
    const shown = state.detail && state.detail.alarm;
    if (!shown) return false;
    const queued = [...state.pending, ...state.inProcess, ...state.onHold];
    const row = queued.find((a) => a.alarm_id === state.openId);
    if (!row) return shown.state !== "resolved"; // it left the queues: resolved meanwhile
    return row.state !== shown.state || (row.opr || null) !== (shown.opr || null);
  }

  // queues -------------------------------------------------------------------------------------

  function flags(alarm) {
    const out = [];
    if (alarm.been_on_hold) out.push(el("span", { class: "flag been-on-hold" }, "BEEN ON HOLD"));
    if (alarm.restore_us) out.push(el("span", { class: "flag restored" }, "RESTORED"));
    return el("td", { class: "flags" }, ...out);
  }

  const text = (value) => el("td", {}, value === null || value === undefined ? "" : value);
  const wrapped = (value) => el("td", { class: "wrap" }, value || ""); // names and cities wrap
  const eventText = (a) => el("td", { class: "text" }, a.hist_text);

  const COLUMNS = {
    pending: (a) => [
      el("td", { class: "age", "data-since": a.pending_us }, ""),
      text(a.priority), text(a.type), el("td", { class: "num" }, a.account_number),
      wrapped(a.company_name), eventText(a), el("td", { class: "num" }, a.zone),
      el("td", { class: "num" }, a.area), wrapped(a.city), flags(a),
    ],
    "in-process": (a) => [
      el("td", { class: "age", "data-since": a.pending_us }, ""),
      el("td", { class: "age", "data-since": a.taken_us || a.pending_us }, ""),
      text(a.opr), text(a.priority), text(a.type), el("td", { class: "num" }, a.account_number),
      wrapped(a.company_name), eventText(a), el("td", { class: "num" }, a.zone), flags(a),
    ],
    "on-hold": (a) => [
      el("td", { class: "age", "data-until": a.hold_until_us }, ""),
      text(a.opr), text(a.priority), text(a.type), el("td", { class: "num" }, a.account_number),
      wrapped(a.company_name), eventText(a), el("td", { class: "text" }, a.hold_reason),
    ],
  };

  function signature(alarm) {
    return [
      alarm.state, alarm.opr, alarm.color, alarm.hist_text, alarm.pending_us, alarm.taken_us,
      alarm.hold_until_us, alarm.hold_reason, alarm.been_on_hold, alarm.restore_us,
      alarm.company_name, alarm.priority,
    ].join("|");
  }

  function syncTable(name, alarms) {
    const tbody = $(`#${name} tbody`);
    const known = rowsOf[name];
    const seen = new Set();
    let cursor = tbody.firstElementChild;
    for (const alarm of alarms) {
      const id = alarm.alarm_id;
      seen.add(id);
      const sig = signature(alarm);
      let entry = known.get(id);
      if (!entry || entry.sig !== sig) {
        const tr = el("tr", { "data-alarm-id": id }, ...COLUMNS[name](alarm));
        paint(tr, alarm.color);
        if (entry) {
          if (entry.tr === cursor) cursor = tr; // the row in place changed: keep the place
          entry.tr.replaceWith(tr);
        }
        entry = { tr, sig };
        known.set(id, entry);
        tickRow(tr);
      }
      entry.tr.classList.toggle("mine", alarm.opr === me.code);
      entry.tr.classList.toggle("open", id === state.openId);
      if (entry.tr !== cursor) tbody.insertBefore(entry.tr, cursor);
      else cursor = cursor.nextElementSibling;
    }
    for (const [id, entry] of known) {
      if (!seen.has(id)) {
        entry.tr.remove();
        known.delete(id);
      }
    }
    $(`#${name}-empty`).hidden = alarms.length > 0;
  }

  function renderQueues(snap) {
    syncTable("pending", state.pending);
    syncTable("in-process", state.inProcess);
    syncTable("on-hold", state.onHold);
    $("#pending-count").textContent = snap.pending_total;
    $("#pending-more").textContent =
      snap.pending_total > state.pending.length ? `showing the first ${state.pending.length}` : "";
    $("#in-process-count").textContent = state.inProcess.length;
    $("#on-hold-count").textContent = state.onHold.length;
    document.title = `(${snap.pending_total}) alarmhub console`;
  }

  function tickRow(node) {
    const now = serverNowUs();
    for (const cell of node.querySelectorAll("[data-since]")) {
      cell.textContent = duration(now - Number(cell.dataset.since));
    }
    for (const cell of node.querySelectorAll("[data-until]")) {
      cell.textContent = duration(Number(cell.dataset.until) - now);
    }
  }

  function renderOperators() {
    const tbody = $("#operators tbody");
    const rows = state.operators.map((op) => {
      const chip = el("span", { class: "status-chip" }, op.status);
      paint(chip, op.color);
      return el(
        "tr",
        { "data-operator": op.code, class: op.code === me.code ? "me" : "" },
        el("td", {}, el("strong", {}, op.code)),
        el("td", {}, op.name),
        el("td", {}, chip),
        el("td", { class: "num", title: "alarms in process" }, op.in_process),
      );
    });
    tbody.replaceChildren(...rows);
    $("#operators-empty").hidden = rows.length > 0;
    const mine = state.operators.find((op) => op.code === me.code);
    showReceiving(mine ? mine.receiving : null);
  }

  function showReceiving(receiving) {
    state.receiving = receiving;
    const button = $("#receiving");
    button.disabled = false;  // disabled until the status is known: a click then would guess
    if (receiving === null) {
      button.className = "receiving signed-off";
      button.textContent = "Signed off: sign on";
    } else {
      button.className = `receiving ${receiving ? "on" : "off"}`;
      button.textContent = receiving ? "Receiving Signals" : "Not Receiving";
    }
  }

  function noticeHanded() {
    const mine = new Set(state.inProcess.filter((a) => a.opr === me.code).map((a) => a.alarm_id));
    const fresh = [...mine].filter((id) => !state.mine.has(id));
    state.mine = mine;
    if (!fresh.length) return;
    const openIsMine = state.openId !== null && mine.has(state.openId);
    const news = `Alarm ${fresh[0]} is now in process with you`;
    if (state.openId === null || (!openIsMine && !anyFormOpen())) {
      const known = state.openId === null ? "" : $("#alarm-feedback").textContent;
      openAlarm(fresh[0], { keepFeedback: true });
      feedback([known, `${news}: opened.`].filter(Boolean).join(" "));
    } else if (!fresh.includes(state.openId)) {
      feedback([$("#alarm-feedback").textContent, `${news}.`].filter(Boolean).join(" "));
    }
  }

  // charts -------------------------------------------------------------------------------------

  function renderSignalsChart(counts) {
    const chart = $("#chart-signals");
    const max = Math.max(1, ...counts);
    const width = 240 / counts.length;
    const nodes = [svg("line", { class: "axis", x1: 0, y1: 70, x2: 240, y2: 70 })];
    counts.forEach((count, i) => {
      const height = (count / max) * 60;
      const bar = svg("rect", {
        class: "bar", x: (i * width + 0.3).toFixed(2), y: (70 - height).toFixed(2),
        width: Math.max(0.5, width - 0.6).toFixed(2), height: height.toFixed(2),
      });
      bar.append(svg("title", {}, `${counts.length - i} min ago: ${count} signals`));
      nodes.push(bar);
    });
    nodes.push(svg("text", { x: 0, y: 79 }, `-${counts.length} min`));
    nodes.push(svg("text", { x: 240, y: 79, "text-anchor": "end" }, "now"));
    nodes.push(svg("text", { x: 0, y: 7 }, `max ${max}/min`));
    chart.replaceChildren(...nodes);
  }

  async function loadStats() {
    try {
      const data = await api("GET", "/stats");
      renderSignalsChart(data.signals_per_minute);
    } catch (err) {
      /* the next round tries again */
    }
  }

  function renderAgesChart() {
    const now = serverNowUs();
    const counts = AGE_BUCKETS.map(() => 0);
    for (const alarm of state.pending) {
      const age = (now - alarm.pending_us) / 1e6;
      counts[AGE_BUCKETS.findIndex(([, limit]) => age < limit)] += 1;
    }
    const max = Math.max(1, ...counts);
    const nodes = [];
    AGE_BUCKETS.forEach(([label], i) => {
      const y = i * 16;
      const width = (counts[i] / max) * 150;
      const kind = i >= 4 ? "bar older" : i >= 2 ? "bar old" : "bar";
      nodes.push(svg("text", { x: 0, y: y + 10 }, label));
      nodes.push(svg("rect", { class: kind, x: 52, y: y + 2, width: width.toFixed(2), height: 11 }));
      nodes.push(svg("text", { x: 56 + width, y: y + 10 }, String(counts[i])));
    });
    $("#chart-ages").replaceChildren(...nodes);
  }

  // the alarm screen ---------------------------------------------------------------------------

  // opening an alarm shows it from its top; what the last action did stays on the feedback line
  // only when the opening follows from it (a resolve, a hand-out)
  function openAlarm(id, { keepFeedback = false } = {}) {
    state.openId = id;
    state.detail = null;
    hideForms();
    if (!keepFeedback) feedback("");
    $("#alarm-screen").hidden = false;
    for (const box of document.querySelectorAll(SCROLLING)) box.scrollTop = 0;
    for (const hook of hooks.opened) hook(id);
    $("#alarm-title").textContent = `Alarm ${id}`;
    for (const known of Object.values(rowsOf)) {
      for (const [rowId, entry] of known) entry.tr.classList.toggle("open", rowId === id);
    }
    loadDetail();
  }

  function closeAlarm() {
    state.openId = null;
    state.detail = null;
    clearTimeout(state.detailTimer);
    state.detailTimer = null;
    hideForms();
    feedback("");
    $("#alarm-screen").hidden = true;
    for (const known of Object.values(rowsOf)) {
      for (const entry of known.values()) entry.tr.classList.remove("open");
    }
  }

  function refreshDetailSoon() {
    if (state.detailTimer) return;
    const wait = Math.max(0, 1000 - (Date.now() - state.detailLoadedAt));
    state.detailTimer = setTimeout(() => {
      state.detailTimer = null;
      loadDetail();
    }, wait);
  }

  async function loadDetail() {
    const id = state.openId;
    if (id === null) return;
    state.detailLoadedAt = Date.now();
    try {
      const detail = await api("GET", `/alarms/${id}`);
      if (state.openId !== id) return;
      state.detail = detail;
      keepingFormInView(renderDetail);
    } catch (err) {
      if (state.openId !== id) return;
      showError(err.message);
      refreshDetailSoon(); // try again: no later snapshot may come to trigger it
    }
  }

  function fact(dl, label, value, cls) {
    if (value === null || value === undefined || value === "") return;
    dl.append(el("dt", {}, label), el("dd", { class: cls || "" }, value));
  }

  function renderDetail() {
    const { alarm, account } = state.detail;
    $("#alarm-title").textContent =
      `${alarm.type}  ${alarm.hist_text}  -  ${alarm.account_number} ${account ? account.company_name : ""}`;
    paint($("#alarm-head"), alarm.color);
    const stateText = alarm.state === "in_process" ? `in process: ${alarm.opr}` : alarm.state.replace("_", " ");
    $("#alarm-state").textContent = stateText;

    const dl = $("#alarm-facts");
    dl.replaceChildren();
    fact(dl, "Incident", alarm.alarm_id, "time");
    fact(dl, "Account", alarm.account_number, "time");
    if (account) {
      fact(dl, "Name", account.company_name);
      fact(dl, "Address", [account.street, account.city, account.state].filter(Boolean).join(", "));
    } else {
      fact(dl, "Name", "(account not in the station's data)");
    }
    fact(dl, "Event", `${alarm.code}  ${alarm.hist_text}`);
    fact(dl, "Zone / area", `${alarm.zone || "-"} / ${alarm.area || "-"}`);
    fact(dl, "Priority", alarm.priority);
    fact(dl, "Line", `${alarm.source}:${alarm.destination}  dnis ${alarm.dnis}  panel ${alarm.panel}`);
    fact(dl, "Received", when(alarm.received_us), "time");
    if (alarm.state === "resolved") {
      fact(dl, "Pending time", alarm.times.PEND_TIME, "time");
    } else {
      dl.append(el("dt", {}, "Pending time"), el("dd", { class: "time", "data-since": alarm.pending_us }));
    }
    if (alarm.opr) fact(dl, "Operator", alarm.opr);
    fact(dl, "Taken after", alarm.times.OPR_RECEIVED, "time");
    fact(dl, "First call after", alarm.times.OPR_FIRST_CALL, "time");
    if (alarm.state === "in_process" && alarm.taken_us) {
      dl.append(el("dt", {}, "Handling"), el("dd", { class: "time", "data-since": alarm.taken_us }));
    }
    if (alarm.state === "on_hold") {
      fact(dl, "Hold reason", alarm.hold_reason);
      dl.append(el("dt", {}, "Back in"), el("dd", { class: "time", "data-until": alarm.hold_until_us }));
    }
    if (alarm.been_on_hold) fact(dl, "Been on hold", "yes");
    if (alarm.passcode_verified) fact(dl, "Passcode verified", alarm.passcode_verified, "passcode-verified");
    if (alarm.restore_us) fact(dl, "Restored", when(alarm.restore_us), "time");
    if (alarm.state === "resolved") {
      fact(dl, "Resolved", `${alarm.resolution}  at ${when(alarm.resolved_us)}`);
    }
    tickRow(dl);

    const mineInProcess = alarm.state === "in_process" && alarm.opr === me.code;
    const allowed = {
      take: alarm.state === "pending",
      call: mineInProcess, note: mineInProcess, hold: mineInProcess, resolve: mineInProcess,
      "take-over": me.supervisor &&
        ((alarm.state === "in_process" && alarm.opr !== me.code) || alarm.state === "on_hold"),
    };
    for (const button of document.querySelectorAll("#alarm-actions button")) {
      button.hidden = !allowed[button.dataset.action];
    }
    if (!mineInProcess) hideForms();

    const events = state.detail.events;
    const isAction = (e) => e.pr_checksum === "OPERATOR";
    renderEvents("#alarm-signals", events.filter((e) => !isAction(e)), false);
    renderEvents("#alarm-log", events.filter(isAction), true);
    renderEvents("#alarm-history", state.detail.history, false, alarm.alarm_id);
    for (const hook of hooks.detail) hook(state.detail, mineInProcess);
  }

  function renderEvents(selector, events, actions, current) {
    const rows = events.map((e) => {
      const cells = [el("td", { class: "when" }, when(e.received_us))];
      if (actions) {
        cells.push(el("td", {}, e.opr || ""), el("td", {}, e.hist_text));
        const note = e.note && !e.hist_text.endsWith(e.note) ? e.note : "";
        cells.push(el("td", { class: "note" }, note));
      } else {
        cells.push(el("td", {}, e.type), el("td", {}, e.code), el("td", {}, e.zone));
        cells.push(el("td", {}, e.hist_text), el("td", {}, e.opr || ""));
      }
      const tr = el("tr", {}, ...cells);
      if (current !== undefined && (e.alarm_id === current || e.incident_number === current)) {
        tr.classList.add("this");
      }
      return tr;
    });
    if (!rows.length) rows.push(el("tr", {}, el("td", { class: "note" }, "none")));
    $(`${selector} tbody`).replaceChildren(...rows);
  }

  // actions ------------------------------------------------------------------------------------

  const FORMS = ["call", "note", "hold", "resolve"]; // the other scripts add theirs

  function anyFormOpen() {
    return FORMS.some((name) => !$(`#form-${name}`).hidden);
  }

  function hideForms() {
    // the field that had the focus goes with its form: keys are the console's again at once
    // (the browser would move the focus off a hidden field only at its next rendering)
    const focused = document.activeElement;
    if (focused && focused.closest && focused.closest("form")) focused.blur();
    for (const name of FORMS) $(`#form-${name}`).hidden = true;
    showError("");
  }

  function showError(message) {
    const node = $("#action-error");
    node.textContent = message;
    node.hidden = !message;
  }

  function openForm(name) {
    hideForms();
    const form = $(`#form-${name}`);
    form.reset();
    if (name === "resolve") fillResolutions();
    form.hidden = false;
    const first = form.querySelector("textarea, input, select");
    if (first) first.focus({ preventScroll: true });
    for (const hook of hooks.formOpened) hook(name);
    form.scrollIntoView({ block: "nearest" }); // the whole form in view, its field focused
  }

  function fillResolutions() {
    const select = $("#resolve-code");
    if (select.options.length) return;
    select.append(el("option", { value: "" }, "choose a resolution..."));
    for (const r of state.resolutions) {
      select.append(el("option", { value: r.code }, `${r.code}  ${r.text}`));
    }
  }

  const DONE = {
    take: () => "taken: in process with you",
    "take-over": () => "taken over: in process with you",
    call: (body) => (body.outcome ? `call to ${body.phone} logged: ${body.outcome.replaceAll("-", " ")}` : "call logged"),
    note: () => "note added",
    hold: (body) => `on hold for ${body.minutes} min: back to pending then`,
  };

  async function act(path, body) {
    const id = state.openId;
    const shown = state.detail && state.detail.alarm.alarm_id === id ? state.detail : null;
    showError("");
    let data;
    try {
      data = await api("POST", `/alarms/${id}/${path}`, body);
    } catch (err) {
      showError(err.message);
      for (const hook of hooks.refused) hook(path, err);
      return;
    }
    hideForms();
    if (path === "resolve" && shown) {
      afterResolve(shown, body.resolution, data.resolved || [id]);
      return;
    }
    said(DONE[path](body));
    await loadDetail();
  }

  // after a resolve: say so, and open the next alarm to work on: the site's next one in process
  // with the operator, else another of theirs, else the site's next pending one
  function afterResolve(shown, code, resolved) {
    const done = new Set(resolved);
    const others = resolved.filter((id) => id !== shown.alarm.alarm_id);
    let text = `${alarmName(shown.alarm)} resolved (${code})`;
    if (others.length) text += `, with ${others.join(", ")}`;
    const siblings = (shown.siblings || []).filter((s) => !done.has(s.alarm_id));
    const next = siblings.find((s) => s.state === "in_process" && s.opr === me.code) ||
      state.inProcess.find((a) => a.opr === me.code && !done.has(a.alarm_id)) ||
      siblings.find((s) => s.state === "pending");
    if (!next) {
      feedback(`${text}. No other alarm is in process with you: N takes the next pending one.`);
      loadDetail();
      return;
    }
    const how = next.state === "pending" ? "pending: Take it" : "in process with you";
    openAlarm(next.alarm_id, { keepFeedback: true });
    const named = { account_number: shown.alarm.account_number, ...next }; // siblings: the same site
    feedback(`${text}. Next: ${alarmName(named)} (${how}), opened.`);
  }

  async function takeNext() {
    try {
      const data = await api("POST", "/take-next");
      if (data.alarm) {
        state.mine.add(data.alarm.alarm_id);
        openAlarm(data.alarm.alarm_id);
        feedback(`${alarmName(data.alarm)}: ${DONE.take()}.`);
      } else {
        banner("No pending alarm to take.");
      }
    } catch (err) {
      banner(err.message, "error");
    }
  }

  async function toggleReceiving() {
    const wanted = state.receiving === null ? true : !state.receiving;
    try {
      const data = await api("POST", "/receiving", { receiving: wanted });
      showReceiving(data.operator.signed_on ? data.operator.receiving : null);
    } catch (err) {
      banner(err.message, "error");
    }
  }

  async function signOut() {
    if (!window.confirm("Sign off and end this session? Alarms in process with you go back to pending.")) return;
    try {
      await fetch("/console/logout", {
        method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf },
      });
    } finally {
      if (state.source) state.source.close();
      toLogin();
    }
  }

  // the alarm the keyboard acts on: the open one, else the one in process with me
  function myAlarm() {
    if (state.openId !== null) return state.openId;
    const mine = state.inProcess.find((a) => a.opr === me.code);
    return mine ? mine.alarm_id : null;
  }

  function shortcut(name) {
    const id = myAlarm();
    if (id === null) {
      banner("No alarm in process with you.");
      return;
    }
    if (state.openId !== id) openAlarm(id);
    const d = state.detail;
    if (d && d.alarm.alarm_id === id && !(d.alarm.state === "in_process" && d.alarm.opr === me.code)) {
      banner(`Alarm ${id} is not in process with you.`);
      return;
    }
    openForm(name);
  }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      if (anyFormOpen()) hideForms();
      else if (state.openId !== null) closeAlarm();
      e.preventDefault();
      return;
    }
    const target = e.target;
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    const key = e.key.toLowerCase();
    const actions = { n: takeNext, c: () => shortcut("call"), h: () => shortcut("hold"), r: () => shortcut("resolve") };
    if (actions[key]) {
      e.preventDefault();
      actions[key]();
    } else if (hooks.keys[key]) {
      e.preventDefault();
      hooks.keys[key]();
    }
  }

  // wiring -------------------------------------------------------------------------------------

  function wire() {
    document.addEventListener("keydown", onKey);
    $("#take-next").addEventListener("click", takeNext);
    $("#receiving").addEventListener("click", toggleReceiving);
    $("#logout").addEventListener("click", signOut);
    $("#alarm-close").addEventListener("click", closeAlarm);
    $("#alarm-screen").addEventListener("click", (e) => {
      if (e.target === e.currentTarget) closeAlarm();
    });
    for (const name of Object.keys(rowsOf)) {
      $(`#${name} tbody`).addEventListener("click", (e) => {
        const tr = e.target.closest("tr[data-alarm-id]");
        if (tr) openAlarm(Number(tr.dataset.alarmId));
      });
    }
    for (const button of document.querySelectorAll("#alarm-actions button")) {
      button.addEventListener("click", () => {
        const action = button.dataset.action;
        if (action === "take") act("take", {});
        else if (action === "take-over") act("take-over", {});
        else openForm(action);
      });
    }
    for (const button of document.querySelectorAll("[data-cancel]")) {
      button.addEventListener("click", hideForms);
    }
    $("#form-note").addEventListener("submit", (e) => {
      e.preventDefault();
      act("note", { text: $("#note-text").value });
    });
    $("#form-hold").addEventListener("submit", (e) => {
      e.preventDefault();
      const minutes = Number($("#hold-minutes").value);
      act("hold", { reason: $("#hold-reason").value, minutes: Math.trunc(minutes) });
    });
    $("#form-resolve").addEventListener("submit", (e) => {
      e.preventDefault();
      const body = { resolution: $("#resolve-code").value, note: $("#resolve-note").value };
      for (const hook of hooks.resolving) hook(body);
      act("resolve", body);
    });
  }

  // views: the queues, and those of the other scripts (for the roles their buttons name) ---------

  function showView(name) {
    for (const view of document.querySelectorAll("main[data-view]")) {
      view.hidden = view.dataset.view !== name;
    }
    for (const button of document.querySelectorAll("#views button")) {
      button.classList.toggle("current", button.dataset.view === name);
    }
    for (const hook of hooks.viewShown) hook(name);
  }

  function wireViews() {
    const allowed = { admin: me.role === "admin", supervisor: me.supervisor };
    let others = 0;
    for (const button of document.querySelectorAll("#views button")) {
      const role = button.dataset.role;
      button.hidden = Boolean(role) && !allowed[role];
      if (button.dataset.view !== "queues" && !button.hidden) others += 1;
      button.addEventListener("click", () => showView(button.dataset.view));
    }
    $("#views").hidden = others === 0;
  }

  function tick() {
    $("#clock").textContent = new Date(serverNowUs() / 1000).toLocaleTimeString([], { hour12: false });
    for (const name of Object.keys(rowsOf)) tickRow($(`#${name} tbody`));
    if (state.openId !== null) tickRow($("#alarm-facts"));
    watchdog();
  }

  async function start() {
    wire();
    wireViews();
    connect();
    try {
      const [mine, codes] = await Promise.all([api("GET", "/me"), api("GET", "/resolutions")]);
      state.offsetMs = mine.server_us / 1000 - Date.now();
      if (state.receiving === null && !state.snapshot) {
        showReceiving(mine.operator.signed_on ? mine.operator.receiving : null);
      }
      state.resolutions = codes.resolutions;
    } catch (err) {
      banner(err.message, "error");
    }
    loadStats();
    setInterval(loadStats, STATS_EVERY_MS);
    setInterval(renderAgesChart, 5000);
    setInterval(tick, 1000);
    tick();
  }

  window.alarmhub = {
    api, el, $, replaceKeepingFocus, banner, feedback, said, when, paint, me, state, hooks, forms: FORMS,
    act, openAlarm, loadDetail, openForm, hideForms, showError, myAlarm, showView, duration,
  };
  start();
})();
