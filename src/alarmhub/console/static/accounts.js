// alarmhub operator console, the admins' data entry: one account's zones, panel users, contacts
// and call lists, agencies, permit and duress code, through /console/api/accounts/{account}.
// The server checks everything (the same rules as the command line) and answers the account as
// it now is; its refusals are shown as they come. Passcodes are sent once and never shown.
// Builds on console.js (window.alarmhub); every text goes in with textContent.
"use strict";

(() => {
  const hub = window.alarmhub;
  const { el, $ } = hub;
  const KINDS = ["police", "fire", "medical"];

  let account = null; // the account on screen, as the server last answered it

  const path = (tail) => `/accounts/${encodeURIComponent(account.account_number)}${tail || ""}`;

  function showError(message) {
    const node = $("#acct-error");
    node.textContent = message;
    node.hidden = !message;
  }

  // reading and changing -----------------------------------------------------------------------

  async function open(number) {
    showError("");
    try {
      const data = await hub.api("GET", `/accounts/${encodeURIComponent(number)}`);
      show(data.account);
    } catch (err) {
      showError(err.message);
    }
  }

  async function change(tail, body, done) {
    showError("");
    try {
      const data = await hub.api("POST", path(tail), body);
      show(data.account);
      if (done) done();
      return true;
    } catch (err) {
      showError(err.message);
      return false;
    }
  }

  // drawing ------------------------------------------------------------------------------------

  function show(data) {
    account = data;
    $("#acct-body").hidden = false;
    $("#acct-number").value = data.account_number;
    const where = [data.street, data.city, data.state].filter(Boolean).join(", ");
    $("#acct-title").textContent = `${data.account_number}  ${data.company_name}${where ? `  -  ${where}` : ""}`;
    drawZones();
    drawUsers();
    drawContacts();
    drawLists();
    drawResponse();
  }

  function rowButtons(...buttons) {
    return el("td", { class: "buttons" }, ...buttons.map(([label, onClick]) => {
      const button = el("button", { type: "button" }, label);
      button.addEventListener("click", onClick);
      return button;
    }));
  }

  function fillForm(form, values) {
    for (const [name, value] of Object.entries(values)) {
      const field = form.elements.namedItem(name);
      if (!field) continue;
      if (field.type === "checkbox") field.checked = Boolean(value);
      else field.value = value === null || value === undefined ? "" : value;
    }
  }

  function drawZones() {
    const rows = account.zones.map((z) => el(
      "tr", { "data-zone": z.zone },
      el("td", { class: "num" }, z.zone), el("td", { class: "num" }, z.area || "all"),
      el("td", {}, z.description), el("td", {}, z.equipment),
      rowButtons(
        ["Edit", () => fillForm($("#form-zone"), z)],
        ["Remove", () => confirmThen(`Remove zone ${z.zone}?`, () => change("/zones/remove", { zone: z.zone, area: z.area }))],
      ),
    ));
    $("#acct-zones tbody").replaceChildren(...rows);
  }

  function drawUsers() {
    const rows = account.users.map((u) => el(
      "tr", { "data-user": u.user },
      el("td", { class: "num" }, u.user), el("td", {}, u.name),
      rowButtons(
        ["Edit", () => fillForm($("#form-user"), u)],
        ["Remove", () => confirmThen(`Remove user ${u.user}?`, () => change("/users/remove", { user: u.user }))],
      ),
    ));
    $("#acct-users tbody").replaceChildren(...rows);
  }

  const listsText = (contact) => contact.lists.map((l) => `${l.name} ${l.order}`).join(", ");

  function drawContacts() {
    const rows = account.contacts.map((c) => el(
      "tr", { "data-contact-id": c.id },
      el("td", {}, el("strong", {}, c.name)), el("td", {}, c.relation),
      el("td", {}, c.phones.map((p) => `${p.number} ${p.kind}`).join(", ")),
      el("td", {}, c.email), el("td", {}, listsText(c)),
      el("td", {}, c.has_passcode ? "set" : "none"),
      rowButtons(
        ["Edit", () => editContact(c)],
        ["Remove", () => confirmThen(`Remove ${c.name}?`, () => change(`/contacts/${c.id}/remove`, {}))],
      ),
    ));
    $("#acct-contacts tbody").replaceChildren(...rows);
  }

  function drawLists() {
    const lists = account.call_lists.map((list) => {
      const items = list.contacts.map((entry, i) => {
        const li = el("li", { "data-contact-id": entry.id }, entry.name);
        const [before, after] = [list.contacts[i - 1], list.contacts[i + 1]];
        if (before) li.append(moveButton("up", list.name, before.order, entry.id));
        if (after) li.append(moveButton("down", list.name, after.order + 1, entry.id));
        return li;
      });
      return el("div", { class: "call-list-entry", "data-list": list.name },
        el("h3", {}, list.name), el("ol", {}, ...items));
    });
    if (!lists.length) lists.push(el("p", { class: "empty" }, "No call lists: add a contact."));
    $("#acct-lists").replaceChildren(...lists);
  }

  // a place taken moves those from it down one: up takes the place of the one before, down
  // the place after the one after
  function moveButton(direction, listName, order, id) {
    const arrow = direction === "up" ? "\u2191" : "\u2193";
    const button = el("button", { type: "button", title: `Move ${direction}`, "data-move": direction }, arrow);
    button.addEventListener("click", () => change(`/contacts/${id}`, { lists: [{ name: listName, order }] }));
    return button;
  }

  function drawResponse() {
    const form = $("#form-response");
    for (const kind of KINDS) {
      const select = form.elements.namedItem(kind);
      const options = [el("option", { value: "" }, "none")];
      for (const agency of account.agencies.filter((a) => a.kind === kind)) {
        options.push(el("option", { value: agency.code }, `${agency.code}  ${agency.name}  ${agency.phone || ""}`));
      }
      select.replaceChildren(...options);
      select.value = account.assigned[kind] || "";
    }
    fillForm(form, { permit: account.permit, duress_code: "", clear_duress: false });
    $("#acct-duress").textContent = account.has_duress_code ? "The account has a duress code." : "No duress code.";
  }

  function confirmThen(question, action) {
    if (window.confirm(question)) action();
  }

  // the contact form ---------------------------------------------------------------------------

  function newContact() {
    const form = $("#form-contact");
    form.reset();
    form.elements.namedItem("id").value = "";
    $("#contact-form-title").textContent = "New contact";
  }

  function editContact(contact) {
    const form = $("#form-contact");
    form.reset();
    const values = {
      id: contact.id, name: contact.name, relation: contact.relation, email: contact.email,
      notes: contact.notes, lists: listsText(contact),
    };
    contact.phones.forEach((p, i) => { values[`phone${i + 1}`] = p.number; values[`kind${i + 1}`] = p.kind; });
    fillForm(form, values);
    $("#contact-form-title").textContent = `Edit ${contact.name}`;
    form.elements.namedItem("name").focus();
  }

  // "PRIMARY 1, FIRE" -> [{name: "PRIMARY", order: 1}, {name: "FIRE"}]
  function parseLists(text) {
    const lists = [];
    for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
      const [name, order, ...rest] = part.split(/\s+/);
      if (rest.length || (order !== undefined && !/^\d+$/.test(order))) {
        throw new Error(`"${part}" is not a call list: a name, then its place (optional)`);
      }
      lists.push(order === undefined ? { name } : { name, order: Number(order) });
    }
    return lists;
  }

  function submitContact(e) {
    e.preventDefault();
    const form = e.currentTarget;
    const value = (name) => form.elements.namedItem(name).value;
    let lists;
    try {
      lists = parseLists(value("lists"));
    } catch (err) {
      showError(err.message);
      return;
    }
    const phones = [1, 2, 3]
      .map((n) => ({ number: value(`phone${n}`).trim(), kind: value(`kind${n}`) }))
      .filter((p) => p.number);
    const body = {
      name: value("name"), relation: value("relation"), email: value("email"),
      notes: value("notes"), phones,
    };
    if (value("passcode")) body.passcode = value("passcode");
    const id = value("id");
    if (!id) {
      body.lists = lists;
      change("/contacts", body, newContact);
      return;
    }
    if (form.elements.namedItem("clear_passcode").checked) body.clear_passcode = true;
    // only what changed: a place given again as it is would move the contact
    const current = account.contacts.find((c) => String(c.id) === id);
    const was = new Map((current ? current.lists : []).map((l) => [l.name, l.order]));
    const wanted = lists.map((l) => ({ ...l, name: l.name.toUpperCase() }));
    body.lists = wanted.filter((l) => !was.has(l.name) || (l.order !== undefined && l.order !== was.get(l.name)));
    body.off_lists = [...was.keys()].filter((name) => !wanted.some((l) => l.name === name));
    change(`/contacts/${id}`, body, newContact);
  }

  // wiring -------------------------------------------------------------------------------------

  function submitter(selector, tail, fields) {
    $(selector).addEventListener("submit", (e) => {
      e.preventDefault();
      const form = e.currentTarget;
      const body = {};
      for (const name of fields) body[name] = form.elements.namedItem(name).value;
      change(tail, body, () => form.reset());
    });
  }

  function wire() {
    if (hub.me.role !== "admin") return;
    hub.hooks.viewShown.push((name) => {
      if (name === "accounts") $("#acct-number").focus();
    });
    $("#acct-pick").addEventListener("submit", (e) => {
      e.preventDefault();
      open($("#acct-number").value.trim());
    });
    submitter("#form-zone", "/zones", ["zone", "area", "description", "equipment"]);
    submitter("#form-user", "/users", ["user", "name"]);
    $("#form-contact").addEventListener("submit", submitContact);
    $("#contact-new").addEventListener("click", newContact);
    $("#form-response").addEventListener("submit", (e) => {
      e.preventDefault();
      const form = e.currentTarget;
      const value = (name) => form.elements.namedItem(name).value;
      const body = { permit: value("permit") };
      for (const kind of KINDS) body[kind] = value(kind);
      if (value("duress_code")) body.duress_code = value("duress_code");
      if (form.elements.namedItem("clear_duress").checked) body.clear_duress = true;
      change("/response", body);
    });
  }

  wire();
})();
