// alarmhub operator console, open/close schedules (decisions §9): the Schedule block of the
// alarm screen (today's windows, the last opening and closing and by whom, the open late alarms)
// with an operator's manual open and close (POST /console/api/accounts/{account}/openclose), and
// for supervisors the Schedules view: an account's schedule (GET/POST/DELETE
// /console/api/schedules/{account}) and the holidays (/console/api/holidays). The server checks
// everything; its refusals are shown as they come.
// Builds on console.js (window.alarmhub); every text goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;

  let account = ""; // the account of the Schedules view
  let blockAccount = ""; // the account of the alarm screen's block

  function showError(selector, message) {
    const node = $(selector);
    node.textContent = message;
    node.hidden = !message;
  }

  const at = (iso) => (iso ? hub.when(Date.parse(iso) * 1000) : "");
  // a close at the open's time ends the next day: 24 hours
  const span = (w) => (w.open !== w.close ? `${w.open}-${w.close}`
    : w.open === "00:00" ? "around the clock" : `${w.open} for 24 h`);
  const hours = (windows) => windows.map(span).join(", ") || "closed";

  // the alarm screen ---------------------------------------------------------------------------

  function who(event) {
    if (event.opr) return `operator ${event.opr} (manual)`;
    if (!event.user) return "the panel";
    return event.user_name ? `user ${event.user} ${event.user_name}` : `user ${event.user}`;
  }

  function drawBlock(detail) {
    const section = $("#alarm-schedule");
    const number = detail.alarm.account_number;
    section.hidden = !detail.account;
    if (!detail.account) return;
    blockAccount = number;
    const dl = $("#schedule-facts");
    dl.replaceChildren();
    const block = detail.schedule;
    const fact = (label, value, cls) =>
      dl.append(el("dt", {}, label), el("dd", { class: cls || "" }, value));
    $("#schedule-open").hidden = !block;
    $("#schedule-close").hidden = !block;
    if (!block) {
      $("#schedule-zone").textContent = "";
      fact("Schedule", "no schedule");
      return;
    }
    $("#schedule-zone").textContent = block.area ? `area ${block.area} · ${block.timezone}` : block.timezone;
    fact(`Today ${block.today.date}`, hours(block.today.windows));
    for (const [key, label] of [["last_open", "Last opening"], ["last_close", "Last closing"]]) {
      const event = block[key];
      fact(label, event ? `${at(event.at)} by ${who(event)}` : "none");
    }
    const late = [["lto", "LATE TO OPEN"], ["ltc", "LATE TO CLOSE"]].filter(([k]) => block.alarms[k] !== null);
    fact("Late alarms", late.map(([k, text]) => `${text} (incident ${block.alarms[k]})`).join(", ") || "none",
      late.length ? "late" : "");
  }

  async function manual(opening) {
    showError("#schedule-error", "");
    try {
      await hub.api("POST", `/accounts/${encodeURIComponent(blockAccount)}/openclose`, { opening });
      hub.banner(`${blockAccount} ${opening ? "opened" : "closed"} by operator ${hub.me.code}`);
      await hub.loadDetail();
    } catch (err) {
      showError("#schedule-error", err.message);
    }
  }

  // supervisors: the Schedules view ------------------------------------------------------------

  const path = () => `/schedules/${encodeURIComponent(account)}`;

  async function load(number) {
    showError("#sched-error", "");
    try {
      const answer = await hub.api("GET", `/schedules/${encodeURIComponent(number)}`);
      account = number;
      draw(answer);
    } catch (err) {
      showError("#sched-error", err.message);
    }
  }

  async function change(method, suffix, body) {
    showError("#sched-error", "");
    try {
      draw(await hub.api(method, path() + suffix, body));
      return true;
    } catch (err) {
      showError("#sched-error", err.message);
      return false;
    }
  }

  function removeButton(title, suffix) {
    const button = el("button", { type: "button", title }, "Remove");
    button.addEventListener("click", () => change("DELETE", suffix));
    return button;
  }

  function draw(answer) {
    $("#sched-title").textContent = `${answer.account_number} ${answer.company_name}`;
    $("#sched-body").hidden = false;
    const s = answer.schedule;
    $("#sched-none").hidden = Boolean(s);
    $("#sched-remove").hidden = !s;
    const checks = s ? [
      s.late_to_open && "late to open", s.late_to_close && "late to close",
      s.early_close && `early close (grace ${s.early_grace_min} min)`,
    ].filter(Boolean).join(", ") || "no checks" : "";
    $("#sched-summary").textContent = s
      ? `${s.timezone} · grace ${s.grace_min} min · ${checks} · today ${hours(s.today.windows)}`
      : "";
    const windows = s ? s.windows : [];
    $("#sched-windows tbody").replaceChildren(...windows.map((w) => el("tr", { "data-day": w.day },
      el("td", {}, w.day), el("td", {}, w.open), el("td", {}, w.close),
      el("td", { class: "buttons" }, removeButton(`Remove every window of ${w.day}`, `?day=${w.day}`)))));
    const temporary = s ? s.temporary : [];
    $("#sched-temporary tbody").replaceChildren(...temporary.map((t) => el("tr", {},
      el("td", {}, t.from), el("td", {}, t.to), el("td", {}, t.closed ? "closed" : `${t.open}-${t.close}`),
      el("td", { class: "buttons" }, removeButton("Remove this temporary schedule",
        `?from=${encodeURIComponent(t.from)}&to=${encodeURIComponent(t.to)}`)))));
    const form = $("#form-sched-settings");
    const field = (name) => form.elements.namedItem(name);
    field("grace").value = s ? s.grace_min : 0;
    field("timezone").value = s ? s.timezone : "";
    field("timezone").dataset.shown = field("timezone").value;
    field("late_to_open").checked = s ? s.late_to_open : true;
    field("late_to_close").checked = s ? s.late_to_close : true;
    field("early_close").checked = s ? s.early_close : false;
    field("early_grace").value = s ? s.early_grace_min : 0;
  }

  function values(form, names) {
    const body = {};
    for (const name of names) {
      const value = form.elements.namedItem(name).value.trim();
      if (value) body[name] = value;
    }
    return body;
  }

  async function addWindow(form) {
    if (await change("POST", "", values(form, ["days", "open", "close"]))) form.reset();
  }

  async function addTemporary(form) {
    const body = values(form, ["from", "to", "open", "close"]);
    if (form.elements.namedItem("closed").checked) body.closed = true;
    if (await change("POST", "", body)) form.reset();
  }

  async function saveSettings(form) {
    const field = (name) => form.elements.namedItem(name);
    const body = {
      grace: Math.trunc(Number(field("grace").value)),
      early_grace: Math.trunc(Number(field("early_grace").value)),
      late_to_open: field("late_to_open").checked,
      late_to_close: field("late_to_close").checked,
      early_close: field("early_close").checked,
    };
    // the zone only when changed: the shown one may be the station's
    const zone = field("timezone").value.trim();
    if (zone !== field("timezone").dataset.shown) body.timezone = zone;
    if (await change("POST", "", body)) hub.banner(`Schedule of ${account} saved`);
  }

  async function removeAll() {
    if (!window.confirm(`Remove the whole schedule of ${account}?`)) return;
    await change("DELETE", "");
  }

  // holidays

  function drawHolidays(list) {
    $("#sched-holidays tbody").replaceChildren(...list.map((h) => {
      const query = `?date=${encodeURIComponent(h.date)}&account=${encodeURIComponent(h.account_number)}`;
      const button = el("button", { type: "button", title: `Remove the holiday of ${h.date}` }, "Remove");
      button.addEventListener("click", () => holiday("DELETE", query));
      return el("tr", { "data-date": h.date },
        el("td", {}, h.date), el("td", {}, h.account_number || "station"), el("td", {}, h.name),
        el("td", { class: "buttons" }, button));
    }));
    $("#sched-holidays-empty").hidden = list.length > 0;
  }

  async function holiday(method, query, body) {
    showError("#holiday-error", "");
    try {
      drawHolidays((await hub.api(method, `/holidays${query}`, body)).holidays);
      if (account) load(account); // the account's schedule may have changed with it
      return true;
    } catch (err) {
      showError("#holiday-error", err.message);
      return false;
    }
  }

  async function addHoliday(form) {
    const body = values(form, ["date", "account", "name"]);
    if (await holiday("POST", "", body)) form.reset();
  }

  function wire() {
    hub.hooks.detail.push((detail) => drawBlock(detail));
    $("#schedule-open").addEventListener("click", () => manual(true));
    $("#schedule-close").addEventListener("click", () => manual(false));
    if (!hub.me.supervisor) return;
    hub.hooks.viewShown.push((name) => {
      if (name !== "schedules") return;
      holiday("GET", "");
      $("#sched-account").focus();
    });
    const submit = (selector, work) => $(selector).addEventListener("submit", (e) => {
      e.preventDefault();
      work(e.currentTarget);
    });
    submit("#sched-pick", (form) => load(form.elements.namedItem("account").value.trim()));
    submit("#form-sched-window", addWindow);
    submit("#form-sched-temporary", addTemporary);
    submit("#form-sched-settings", saveSettings);
    submit("#form-holiday", addHoliday);
    $("#sched-remove").addEventListener("click", removeAll);
  }

  wire();
})();
