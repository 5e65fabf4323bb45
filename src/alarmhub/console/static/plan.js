// alarmhub operator console, the alarm screen's action plan: the plan's steps in order (done,
// to do, n/a; the next one highlighted), each done by the operator's own action (a call to the
// premises, the call list called or messaged (notify.js), the passcode check, a dispatch, a note
// that acknowledges a video or instruction step); enhanced call verification; the dispatch form
// with the AVS-01 levels; the dispatches made; why a resolution was refused. Builds on
// console.js and calls.js (window.alarmhub); every text from the server goes in with
// textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $, replaceKeepingFocus } = hub;
  const AGENCY_KEYS = { p: "police", f: "fire", m: "medical" };
  const RESOLVE_REFUSALS = new Set(["OPS-STEPS", "OPS-DISPATCH"]);
  const SCOPES = {
    zone: "this zone's plan",
    account: "this account's plan",
    station: "the station's plan",
    shipped: "the shipped plan",
  };

  let plan = null;          // the plan on screen, and whether the alarm is mine
  let detail = null;
  let mine = false;
  let shownFor = null;      // the alarm the panel shows
  let refusal = null;       // {code, message} of the last refused resolution of this alarm
  let stepPosition = null;  // the step the note form acknowledges
  let waiting = null;       // a key pressed before the alarm screen was drawn: "g" or "d"

  // drawing ------------------------------------------------------------------------------------

  function notApplying(step) {
    if (step.kind === "premises") return "no premises phone";
    const list = detail.response && detail.response.call_list;
    if (step.kind === "notify" && list && list.contacts.length) return "after a dispatch";
    return "no call list";
  }

  function stepTitle(step) {
    const phone = detail.response && detail.response.phone;
    if (step.kind === "premises" && phone) return `${step.title} ${phone}`;
    return step.title;
  }

  function owed(step) {
    if (!refusal || step.done || !step.applies) return false;
    if (refusal.code === "OPS-DISPATCH") return step.kind === "dispatch";
    return step.required;
  }

  function stepItem(step) {
    const pending = step.applies && !step.done;
    const next = step.position === plan.next;
    const mark = step.done ? "DONE" : !step.applies ? "n/a" : next ? "NEXT" : "";
    const classes = [
      "step", step.done ? "done" : "", !step.applies ? "na" : "", next ? "next" : "",
      owed(step) ? "owed" : "",
    ];
    return el(
      "li",
      { class: classes.filter(Boolean).join(" "), "data-position": step.position, "data-kind": step.kind },
      el("span", { class: "step-mark" }, mark),
      el("span", { class: "step-title" }, stepTitle(step)),
      step.required ? el("span", { class: "required", title: "required before any resolution" }, "REQUIRED") : null,
      !step.applies ? el("span", { class: "why" }, notApplying(step)) : null,
      step.text && step.kind !== "instruction" ? el("div", { class: "step-text" }, step.text) : null,
      mine && pending
        ? el("button", { type: "button", class: "do", "data-do": step.position },
          next ? el("kbd", {}, "G") : null, next ? " do it" : "do it")
        : null,
    );
  }

  function ecvText() {
    const { required, met } = plan.ecv;
    if (!required) return [`${plan.type}: no call verification needed before a dispatch.`, "ok"];
    if (met) return ["Enhanced call verification met: two numbers called.", "ok"];
    return [
      "Enhanced call verification owed: log calls to two different numbers before a dispatch.",
      "owed",
    ];
  }

  function drawEcv() {
    const [text, kind] = ecvText();
    for (const node of [$("#plan-ecv"), $("#dispatch-ecv")]) {
      node.textContent = text;
      node.className = `ecv ${kind}`;
    }
  }

  function drawDispatches() {
    const rows = plan.dispatches.map((d) => el(
      "tr",
      {},
      el("td", { class: "when" }, hub.when(d.at_us)),
      el("td", {}, d.agency.toUpperCase(), d.agency_code ? ` ${d.agency_code}` : ""),
      el("td", { title: levelText(d.avs) }, `AVS ${d.avs}`),
      el("td", {}, d.reference ? `REF ${d.reference}` : ""),
      el("td", {}, d.opr),
    ));
    $("#plan-dispatches tbody").replaceChildren(...rows);
    $("#plan-dispatched").hidden = rows.length === 0;
  }

  function levelText(level) {
    const found = plan.avs_levels.find((l) => l.level === level);
    return found ? found.text : "";
  }

  function drawLevels() {
    const box = $("#dispatch-avs");
    if (box.querySelector("input")) return;
    for (const { level, text } of plan.avs_levels) {
      box.append(el(
        "label",
        {},
        el("input", { type: "radio", name: "avs", value: String(level), required: true }),
        " ",
        el("kbd", {}, String(level)),
        ` ${text}`,
      ));
    }
  }

  function drawRefusal() {
    const node = $("#plan-refusal");
    node.hidden = !refusal;
    node.textContent = refusal ? `Not resolved: ${refusal.message}` : "";
  }

  function draw(shown, mineInProcess) {
    const section = $("#alarm-plan");
    const id = shown.alarm.alarm_id;
    if (shownFor !== id) {
      shownFor = id;
      refusal = null;
      showPlanError("");
    }
    detail = shown;
    plan = shown.plan || null;
    mine = mineInProcess;
    if (!plan) {
      section.hidden = true;
      return;
    }
    section.hidden = false;
    const scope = SCOPES[plan.scope] || plan.scope;
    $("#plan-name").textContent = `${plan.type}, ${scope}`;
    replaceKeepingFocus($("#plan-steps"), ...plan.steps.map(stepItem));
    $("#plan-dispatch").hidden = !mine;
    drawEcv();
    drawDispatches();
    drawLevels();
    drawRefusal();
    if (waiting && mine) {
      const key = waiting;
      waiting = null;
      if (key === "g") nextStep();
      else openDispatch();
    }
  }

  // doing a step -------------------------------------------------------------------------------

  function doStep(position) {
    const step = plan.steps.find((s) => s.position === position);
    if (!step) return;
    if (step.done) {
      hub.banner(`Step ${position} is done.`);
      return;
    }
    if (!step.applies) {
      hub.banner(`Step ${position} cannot be done: ${notApplying(step)}.`);
      return;
    }
    const ways = {
      premises: () => hub.callPremises(),
      "call-list": () => hub.focusCallList(),
      notify: () => hub.focusCallList(), // or E: message them (notify.js)
      passcode: () => hub.focusPasscode(),
      dispatch: () => openDispatch(step.agency),
      video: () => openStep(step),
      instruction: () => openStep(step),
    };
    (ways[step.kind] || (() => hub.banner(`Step ${position}: ${step.title}.`)))();
  }

  function nextStep() {
    if (plan.next === null) {
      hub.banner("No step of the plan is left to do: resolve the alarm (R).");
      return;
    }
    doStep(plan.next);
  }

  let presetAgency = null;

  function openDispatch(agency) {
    presetAgency = agency || null;
    hub.openForm("dispatch");
  }

  function openStep(step) {
    stepPosition = step.position;
    hub.openForm("step");
    $("#step-label").textContent = `Step ${step.position}: ${step.title}. What you saw or did`;
  }

  function formOpened(name) {
    if (name === "resolve") {
      refusal = null;
      drawRefusal();
    }
    showPlanError("");
    if (name !== "dispatch") return;
    const wanted = presetAgency || defaultAgency();
    $("#dispatch-agency").value = wanted;
    presetAgency = null;
    drawEcv();
    const first = $("#dispatch-avs input");
    if (first) first.focus({ preventScroll: true });
  }

  // the agency of the plan's first dispatch step still to do, else of its first one, else police
  function defaultAgency() {
    const steps = plan ? plan.steps.filter((s) => s.kind === "dispatch") : [];
    const step = steps.find((s) => !s.done) || steps[0];
    return step ? step.agency : "police";
  }

  // the alarm the keys act on must be open and mine; a key pressed before it is drawn waits
  function withMyAlarm(key, work) {
    const id = hub.myAlarm();
    if (id === null) {
      hub.banner("No alarm in process with you.");
      return;
    }
    if (hub.state.openId !== id || !detail || detail.alarm.alarm_id !== id) {
      waiting = key;
      if (hub.state.openId !== id) hub.openAlarm(id);
      return;
    }
    if (!mine || !plan) {
      hub.banner(`Alarm ${id} is not in process with you.`);
      return;
    }
    work();
  }

  // sending ------------------------------------------------------------------------------------

  function showPlanError(message) {
    const node = $("#plan-error");
    node.textContent = message;
    node.hidden = !message;
  }

  async function send(path, body) {
    const id = hub.state.openId;
    showPlanError("");
    try {
      await hub.api("POST", `/alarms/${id}/${path}`, body);
      hub.hideForms();
      hub.said(path === "dispatch" ? `${body.agency} dispatched, AVS ${body.avs}` : `step ${body.position} done`);
      await hub.loadDetail();
    } catch (err) {
      showPlanError(err.message);
    }
  }

  function submitDispatch(e) {
    e.preventDefault();
    const level = $("#dispatch-avs input:checked");
    if (!level) {
      showPlanError("Choose the AVS-01 level (0-4).");
      $("#dispatch-avs input").focus();
      return;
    }
    const body = { agency: $("#dispatch-agency").value, avs: Number(level.value) };
    const reference = $("#dispatch-reference").value.trim();
    if (reference) body.reference = reference;
    send("dispatch", body);
  }

  function submitStep(e) {
    e.preventDefault();
    send("step", { position: stepPosition, note: $("#step-note").value });
  }

  function onDispatchKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target.matches("input[type=text], input:not([type]), textarea");
    const key = e.key.toLowerCase();
    const radio = /^[0-4]$/.test(key) && $(`#dispatch-avs input[value="${key}"]`);
    if (radio && !typing) {
      radio.checked = true;
      radio.focus();
    } else if (AGENCY_KEYS[key] && !typing) {
      $("#dispatch-agency").value = AGENCY_KEYS[key];
    } else if (key === "enter" && e.target.tagName !== "BUTTON") {
      $("#form-dispatch").requestSubmit();
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  function onRefused(path, err) {
    if (path !== "resolve" || !RESOLVE_REFUSALS.has(err.code)) return;
    refusal = { code: err.code, message: err.message };
    if (plan) replaceKeepingFocus($("#plan-steps"), ...plan.steps.map(stepItem));
    drawRefusal();
  }

  // wiring -------------------------------------------------------------------------------------

  hub.forms.push("dispatch", "step");
  hub.hooks.detail.push(draw);
  hub.hooks.formOpened.push(formOpened);
  hub.hooks.refused.push(onRefused);
  hub.hooks.keys.g = () => withMyAlarm("g", nextStep);
  hub.hooks.keys.d = () => withMyAlarm("d", () => openDispatch());
  $("#form-dispatch").addEventListener("submit", submitDispatch);
  $("#form-dispatch").addEventListener("keydown", onDispatchKey);
  $("#form-step").addEventListener("submit", submitStep);
  $("#plan-dispatch").addEventListener("click", () => openDispatch());
  $("#plan-steps").addEventListener("click", (e) => {
    const button = e.target.closest("button[data-do]");
    if (button) doStep(Number(button.dataset.do));
  });
})();
