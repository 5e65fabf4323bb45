// alarmhub operator console, the Receivers panel: every receiver link with its state (failed
// links first, in red), last frame and when, frames per minute, totals and the node holding it
// (GET /console/api/receivers), and below them every automation output with its state (failed
// first, in red), address in use, queue, counts and the node sending it (GET
// /console/api/outputs); while a link or an output has failed, its button in the header shows
// how many, in red, for everyone. Read again every few seconds, and at once when the queues'
// RECEIVER LINK FAILURE or AUTOMATION OUTPUT FAILURE alarms change (failed or restored).
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
  let alarmTypes = []; // RECEIVER LINK FAILURE's and AUTOMATION OUTPUT FAILURE's TYPEs
  const plainTitle = $("#receivers-button").title; // the button's title while nothing failed

  function showError(message, id = "#receivers-error") {
    const node = $(id);
    node.textContent = message;
    node.hidden = !message;
  }

  function ago(us) {
    if (!us) return "never";
    return age(Math.max(0, Math.round((Date.now() + hub.state.offsetMs - us / 1000) / 1000)));
  }

  function age(seconds) {
    if (seconds < 120) return `${seconds} s ago`;
    if (seconds < 7200) return `${Math.floor(seconds / 60)} min ago`;
    if (seconds < 172800) return `${Math.floor(seconds / 3600)} h ago`;
    return `${Math.floor(seconds / 86400)} days ago`;
  }

  const held = (seconds) => (seconds === null ? "-" : age(Math.round(seconds)).replace(" ago", ""));

  const num = (value) => el("td", { class: "num" }, Number(value || 0).toLocaleString());

  // where a link or an output is: its address, a serial port with its speed and framing
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

  function outputRow(output) {
    const delivered = el("td", { class: "seen" },
      el("span", { class: "when" }, hub.when(output.last_delivered_us) || "-"),
      el("span", { class: "ago" }, ago(output.last_delivered_us)));
    return el("tr", { "data-output": output.name, class: `link ${output.state}` },
      el("td", {}, el("span", { class: `link-state ${output.state}` }, output.state.toUpperCase())),
      el("td", { class: "name", title: output.accounts.length
        ? `accounts ${output.accounts.join(" ")}` : "every account" }, output.name),
      el("td", {}, output.protocol),
      el("td", {}, output.transport),
      el("td", { class: "address" }, where(output)),
      num(output.queued),
      el("td", { class: "num oldest" }, held(output.oldest_queued_s)),
      el("td", { class: output.stale ? "num stale" : "num" }, Number(output.stale).toLocaleString()),
      num(output.sent), num(output.resent), num(output.naks), num(output.timeouts),
      delivered,
      el("td", { class: "holder" }, output.held_by || "-"));
  }

  // the RECEIVER LINK FAILURE and AUTOMATION OUTPUT FAILURE alarms in the queues of a snapshot,
  // and whether each is restored: a link or output failed or restored changes them (other
  // changes of the queues need no new read)
  function failureAlarms(snap) {
    if (!alarmTypes.length) return "";
    const type = snap.fields.indexOf("type");
    const id = snap.fields.indexOf("alarm_id");
    const restored = snap.fields.indexOf("restore_us");
    return [snap.pending, snap.in_process, snap.on_hold].flat()
      .filter((alarm) => alarmTypes.includes(alarm[type]))
      .map((alarm) => `${alarm[id]}${alarm[restored] ? "r" : ""}`).join(" ");
  }

  // the Receivers button of the views, for everyone: how many links and outputs are failed,
  // named in its title, in red
  function badge(links, outputs) {
    const names = (rows) => rows.filter((row) => row.state === "failed").map((row) => row.name);
    const failedLinks = names(links);
    const failedOutputs = names(outputs);
    const count = failedLinks.length + failedOutputs.length;
    const node = $("#receivers-badge");
    const button = $("#receivers-button");
    node.hidden = count === 0;
    node.textContent = `${count} FAILED`;
    button.classList.toggle("failed", count > 0);
    const said = [];
    if (failedLinks.length) said.push(`RECEIVER LINK FAILED: ${failedLinks.join(" ")}`);
    if (failedOutputs.length) said.push(`AUTOMATION OUTPUT FAILED: ${failedOutputs.join(" ")}`);
    button.title = count ? `${said.join("; ")} (open the Receivers view)` : plainTitle;
  }

  function drawOutputs(data) {
    hub.replaceKeepingFocus($("#outputs tbody"), ...data.outputs.map(outputRow));
    const all = data.outputs.length;
    $("#outputs-count").textContent = all;
    const up = data.outputs.filter((output) => output.state === "up").length;
    const down = data.outputs.filter((output) => output.state === "down").length;
    const queued = data.outputs.reduce((sum, output) => sum + output.queued, 0);
    $("#outputs-summary").textContent = all
      ? `${up} up, ${data.failed} failed, ${down} down, ${all - up - down - data.failed} idle; ` +
        `${queued.toLocaleString()} queued` : "";
    $("#outputs-empty").hidden = all > 0;
  }

  function draw(data) {
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
      const [data, outputs] = await Promise.allSettled(
        [hub.api("GET", "/receivers"), hub.api("GET", "/outputs")]);
      if (data.status === "fulfilled") {
        draw(data.value);
        showError("");
      } else if (visible) showError(data.reason.message);
      if (outputs.status === "fulfilled") {
        drawOutputs(outputs.value);
        showError("", "#outputs-error");
      } else if (visible) showError(outputs.reason.message, "#outputs-error");
      const links = data.status === "fulfilled" ? data.value : null;
      const sent = outputs.status === "fulfilled" ? outputs.value : null;
      alarmTypes = [links?.alarm_type, sent?.alarm_type].filter(Boolean);
      if (links && sent) badge(links.links, sent.outputs);
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
