// alarmhub operator console, the Receivers panel: every receiver link with its state (failed
// links first, in red), last frame and when, frames per minute, totals and the node holding it
// (GET /console/api/receivers); while a link has failed, its button in the header shows how
// many, in red, for everyone. Read again every few seconds, and at once when the queues'
// RECEIVER LINK FAILURE alarms change (a link failed or restored).
// Builds on console.js (window.alarmhub); every text goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;
  const SHOWN_EVERY_MS = 5000;   // while the panel is on screen
  const HIDDEN_EVERY_MS = 15000; // for the button's count
  const AFTER_SNAPSHOT_MS = 1000; // at most this often after changes of the queues

  let visible = false;
  let loading = false;
  let again = false; // a reason to read again came while reading
  let timer = null;
  let lastLoad = 0;
  let alarmType = null; // RECEIVER LINK FAILURE's TYPE, as the server names it
  const plainTitle = $("#receivers-button").title; // the button's title while nothing failed

  function showError(message) {
    const node = $("#receivers-error");
    node.textContent = message;
    node.hidden = !message;
  }

  function ago(us) {
    if (!us) return "never";
    const seconds = Math.max(0, Math.round((Date.now() + hub.state.offsetMs - us / 1000) / 1000));
    if (seconds < 120) return `${seconds} s ago`;
    if (seconds < 7200) return `${Math.floor(seconds / 60)} min ago`;
    if (seconds < 172800) return `${Math.floor(seconds / 3600)} h ago`;
    return `${Math.floor(seconds / 86400)} days ago`;
  }

  const num = (value) => el("td", { class: "num" }, Number(value || 0).toLocaleString());

  function where(link) {
    if (link.transport !== "serial") return link.address;
    return [link.address, link.baud, link.framing].filter(Boolean).join(" ");
  }

  function row(link) {
    const seen = el("td", { class: "seen" },
      el("span", { class: "when" }, hub.when(link.last_seen_us) || "-"),
      el("span", { class: "ago" }, ago(link.last_seen_us)));
    const tr = el("tr", { "data-link": link.name, class: `link ${link.state}` },
      el("td", {}, el("span", { class: `link-state ${link.state}` }, link.state.toUpperCase())),
      el("td", { class: "name" }, link.name),
      el("td", {}, link.protocol),
      el("td", {}, link.transport),
      el("td", { class: "address" }, where(link)),
      el("td", { class: "frame" }, link.last_frame || "-"),
      seen,
      num(link.per_minute), num(link.frames), num(link.acks), num(link.naks), num(link.unreadable),
      num(link.lines),
      el("td", { class: "holder" }, link.held_by || "-"));
    return tr;
  }

  // the RECEIVER LINK FAILURE alarms in the queues of a snapshot, and whether each is restored:
  // a link failed or restored changes them (other changes of the queues need no new read)
  function failureAlarms(snap) {
    if (!alarmType) return "";
    const type = snap.fields.indexOf("type");
    const id = snap.fields.indexOf("alarm_id");
    const restored = snap.fields.indexOf("restore_us");
    return [snap.pending, snap.in_process, snap.on_hold].flat()
      .filter((alarm) => alarm[type] === alarmType)
      .map((alarm) => `${alarm[id]}${alarm[restored] ? "r" : ""}`).join(" ");
  }

  // the Receivers button of the views, for everyone: how many links are failed, named in its
  // title, in red
  function badge(data) {
    const failed = data.links.filter((link) => link.state === "failed").map((link) => link.name);
    const node = $("#receivers-badge");
    const button = $("#receivers-button");
    node.hidden = failed.length === 0;
    node.textContent = `${failed.length} FAILED`;
    button.classList.toggle("failed", failed.length > 0);
    button.title = failed.length
      ? `RECEIVER LINK FAILED: ${failed.join(" ")} (open the Receivers view)`
      : plainTitle;
  }

  function draw(data) {
    badge(data);
    hub.replaceKeepingFocus($("#receivers tbody"), ...data.links.map(row));
    $("#receivers-count").textContent = data.links.length;
    const up = data.links.filter((link) => link.state === "up").length;
    $("#receivers-summary").textContent = data.links.length
      ? `${up} up, ${data.failed} failed, ${data.links.length - up - data.failed} idle` : "";
    $("#receivers-empty").hidden = data.links.length > 0;
  }

  async function load() {
    if (loading) { again = true; return; }
    loading = true;
    lastLoad = Date.now();
    try {
      const data = await hub.api("GET", "/receivers");
      alarmType = data.alarm_type;
      draw(data);
      showError("");
    } catch (err) {
      if (visible) showError(err.message);
    } finally {
      loading = false;
      if (again) { again = false; load(); } else schedule();
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(load, visible ? SHOWN_EVERY_MS : HIDDEN_EVERY_MS);
  }

  function wire() {
    hub.hooks.viewShown.push((name) => {
      visible = name === "receivers";
      if (visible) load();
    });
    let lastKey = "";
    hub.hooks.snapshot.push((snap) => {
      const key = failureAlarms(snap);
      if (key === lastKey) return;
      lastKey = key;
      if (loading) { again = true; return; }
      const wait = lastLoad + AFTER_SNAPSHOT_MS - Date.now();
      if (wait <= 0) load();
      else { clearTimeout(timer); timer = setTimeout(load, wait); }
    });
    load();
  }

  wire();
})();
