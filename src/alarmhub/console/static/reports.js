// alarmhub operator console, the supervisors' handling report: for the days chosen (in the
// station's time zone, both included), alarms handled per TYPE and per operator with median and
// 90th percentile times to take and to resolve, dispatches by agency and AVS level, and false
// alarms by account (GET /console/api/reports/handling). Tables only.
// Builds on console.js (window.alarmhub); every text goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;
  const DAY_MS = 86400000;

  const isoDay = (date) => {
    const local = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
    return local.toISOString().slice(0, 10);
  };
  const seconds = (value) => (value === null || value === undefined ? "-" : hub.duration(value * 1e6));
  const num = (value) => el("td", { class: "num" }, value);

  function showError(message) {
    const node = $("#report-error");
    node.textContent = message;
    node.hidden = !message;
  }

  function times(line) {
    return [num(line.handled), num(seconds(line.take.median_s)), num(seconds(line.take.p90_s)),
      num(seconds(line.resolve.median_s)), num(seconds(line.resolve.p90_s))];
  }

  function fill(selector, rows, empty, columns) {
    const tbody = $(`${selector} tbody`);
    if (!rows.length) {
      tbody.replaceChildren(el("tr", {}, el("td", { class: "empty", colSpan: columns }, empty)));
      return;
    }
    tbody.replaceChildren(...rows);
  }

  function draw(report) {
    $("#report-body").hidden = false;
    $("#report-summary").textContent = `${report.from} to ${report.to}: ${report.handled} alarms resolved, ` +
      `median ${seconds(report.take.median_s)} to take and ${seconds(report.resolve.median_s)} to resolve; ` +
      `${report.false_alarms_total} false alarms.`;
    fill("#report-types", report.by_type.map((t) => el("tr", {}, el("td", {}, t.type), ...times(t))),
      "No alarm resolved.", 6);
    fill("#report-operators", report.by_operator.map((o) =>
      el("tr", {}, el("td", {}, o.opr || "-"), el("td", {}, o.name), ...times(o))), "No alarm resolved.", 7);
    fill("#report-dispatches", report.dispatches.map((d) =>
      el("tr", {}, el("td", {}, d.agency), num(d.avs), num(d.count))), "No dispatch.", 3);
    fill("#report-false", report.false_alarms.map((f) =>
      el("tr", {}, num(f.account_number), el("td", {}, f.company_name), num(f.count),
        num(f.by_code.FA || 0), num(f.by_code.FAE || 0))), "No false alarm.", 5);
  }

  async function show() {
    showError("");
    const form = $("#form-report");
    const params = new URLSearchParams({
      from: form.elements.namedItem("from").value,
      to: form.elements.namedItem("to").value,
    });
    try {
      draw((await hub.api("GET", `/reports/handling?${params}`)).report);
    } catch (err) {
      showError(err.message);
    }
  }

  function wire() {
    if (!hub.me.supervisor) return;
    const form = $("#form-report");
    const today = new Date();
    form.elements.namedItem("to").value = isoDay(today);
    form.elements.namedItem("from").value = isoDay(new Date(today.getTime() - 6 * DAY_MS));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      show();
    });
    hub.hooks.viewShown.push((name) => {
      if (name === "reports") show();
    });
  }

  wire();
})();
