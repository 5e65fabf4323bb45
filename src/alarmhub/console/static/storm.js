// alarmhub operator console, storm mode: a badge for everyone while alarm TYPEs are in storm
// mode (from each snapshot), and for supervisors the Storm view: the TYPEs in storm mode,
// switching it on and off, the storm list (GET /console/api/storm) and its batch resolution.
// The server checks everything; its refusals are shown as they come.
// Builds on console.js (window.alarmhub); every text goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;
  const BATCH_MAX = 1000; // alarms named in one batch (core.storm.BATCH_MAX)

  let visible = false;
  let shown = []; // the storm list as last drawn
  let loading = null;
  let again = false;

  function showError(message) {
    const node = $("#storm-error");
    node.textContent = message;
    node.hidden = !message;
  }

  // everyone: the badge ------------------------------------------------------------------------

  function badge(snap) {
    const storm = snap.storm || { types: [], storm_list: 0 };
    const node = $("#storm-badge");
    node.hidden = storm.types.length === 0;
    node.textContent = `STORM ${storm.types.map((t) => t.type).join(" ")} · ${storm.storm_list} on the list`;
  }

  // supervisors: the view ----------------------------------------------------------------------

  function objects(fields, rows) {
    return rows.map((row) => Object.fromEntries(fields.map((name, i) => [name, row[i]])));
  }

  async function load() {
    if (loading) { again = true; return; }
    loading = hub.api("GET", "/storm");
    try {
      draw(await loading);
    } catch (err) {
      showError(err.message);
    } finally {
      loading = null;
      if (again) { again = false; load(); }
    }
  }

  function drawTypes(types) {
    const tbody = $("#storm-types tbody");
    tbody.replaceChildren(...types.map((t) => {
      const off = el("button", { type: "button" }, "Off");
      off.addEventListener("click", () => change([t.type], false));
      return el("tr", { "data-type": t.type },
        el("td", {}, t.type), el("td", {}, hub.when(t.since_us)), el("td", {}, t.by || "-"),
        el("td", { class: "num" }, t.alarms), el("td", { class: "buttons" }, off));
    }));
    $("#storm-types-empty").hidden = types.length > 0;
  }

  function drawList(list) {
    const chosen = new Set(selected());
    shown = objects(list.fields, list.alarms);
    const tbody = $("#storm-list tbody");
    tbody.replaceChildren(...shown.map((a) => {
      const box = el("input", { type: "checkbox", value: String(a.alarm_id), checked: chosen.has(a.alarm_id) });
      box.setAttribute("aria-label", `select alarm ${a.alarm_id}`);
      const tr = el("tr", { "data-alarm-id": a.alarm_id },
        el("td", {}, box), el("td", { class: "age" }, hub.when(a.pending_us)), el("td", {}, a.priority),
        el("td", {}, a.type), el("td", { class: "num" }, a.account_number), el("td", {}, a.company_name || ""),
        el("td", { class: "text" }, a.hist_text), el("td", { class: "num" }, a.zone),
        el("td", { class: "flags" }, a.restore_us ? el("span", { class: "flag restored" }, "RESTORED") : null));
      hub.paint(tr, a.color);
      return tr;
    }));
    $("#storm-count").textContent = list.total;
    $("#storm-more").textContent = list.total > shown.length ? `showing the first ${shown.length}` : "";
    $("#storm-list-empty").hidden = shown.length > 0;
    $("#storm-all").checked = false;
  }

  function draw(data) {
    drawTypes(data.types);
    drawList(data);
  }

  function selected() {
    return [...document.querySelectorAll("#storm-list tbody input:checked")].map((b) => Number(b.value));
  }

  async function change(types, on) {
    showError("");
    try {
      const answer = await hub.api("POST", "/storm", { types, on });
      drawTypes(answer.types);
      if (answer.list) {
        drawList(answer.list);
        if (answer.list.total) hub.banner(`Storm mode off for ${answer.changed.join(" ")}: ${answer.list.total} alarms on their storm list to resolve`);
      }
      $("#form-storm").reset();
      load();
    } catch (err) {
      showError(err.message);
    }
  }

  async function resolve(body) {
    showError("");
    const form = $("#form-storm-resolve");
    const fields = { ...body, resolution: form.elements.namedItem("resolution").value };
    const note = form.elements.namedItem("note").value.trim();
    if (note) fields.note = note;
    try {
      const answer = await hub.api("POST", "/storm/resolve", fields);
      hub.banner(`${answer.resolved} alarms of the storm list resolved`);
      form.elements.namedItem("note").value = "";
      load();
    } catch (err) {
      showError(err.message);
    }
  }

  async function pend(ids) {
    showError("");
    try {
      const answer = await hub.api("POST", "/storm/pend", { alarm_ids: ids });
      hub.banner(`${answer.pending} alarms of the storm list sent to pending`);
      load();
    } catch (err) {
      showError(err.message);
    }
  }

  function fillResolutions() {
    const select = $("#form-storm-resolve select");
    if (select.options.length || !hub.state.resolutions.length) return;
    for (const r of hub.state.resolutions) select.append(el("option", { value: r.code }, `${r.code} - ${r.text}`));
    const restored = hub.state.resolutions.find((r) => r.code === "RSTR");
    if (restored) select.value = restored.code;
  }

  function wire() {
    hub.hooks.snapshot.push(badge);
    if (!hub.me.supervisor) return;
    hub.hooks.viewShown.push((name) => {
      visible = name === "storm";
      if (!visible) return;
      fillResolutions();
      load();
    });
    let lastRevision = -1;
    hub.hooks.snapshot.push((snap) => {
      if (visible && snap.revision !== lastRevision) load();
      lastRevision = snap.revision;
    });
    const typesOf = () => $("#form-storm").elements.namedItem("types").value.split(/[\s,]+/).filter(Boolean);
    $("#form-storm").addEventListener("submit", (e) => {
      e.preventDefault();
      change(typesOf(), true);
    });
    $("#storm-off").addEventListener("click", () => change(typesOf(), false));
    $("#storm-all").addEventListener("change", (e) => {
      for (const box of document.querySelectorAll("#storm-list tbody input")) box.checked = e.target.checked;
    });
    $("#form-storm-resolve").addEventListener("submit", (e) => {
      e.preventDefault();
      const ids = selected();
      if (!ids.length) { showError("select the alarms to resolve, or resolve all"); return; }
      resolve({ alarm_ids: ids });
    });
    $("#storm-pend").addEventListener("click", () => {
      const ids = selected();
      if (!ids.length) { showError("select the alarms to send to pending"); return; }
      pend(ids);
    });
    $("#storm-resolve-all").addEventListener("click", () => {
      const total = Number($("#storm-count").textContent);
      // the alarms on screen when they are the whole list; else the whole list as it is now
      if (shown.length === total && total <= BATCH_MAX) {
        if (!total) { showError("the storm list is empty"); return; }
        resolve({ alarm_ids: shown.map((a) => a.alarm_id) });
      } else {
        resolve({ all: true });
      }
    });
  }

  wire();
})();
