"""An account's response data in the integrator API: zones and panel users (PUT, GET, DELETE
one; GET the list), contacts (POST, GET, PATCH, DELETE; the passcode written, never read) and
call lists (GET; PUT one with its contacts in calling order), through the store functions the
``zone``, ``user`` and ``contact`` commands use. Every change is an audit record naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from alarmhub.api import openapi_parts as oa
from alarmhub.api.plumbing import Api, check_if_match, etag_of, json_response
from alarmhub.api.problems import INPUT, ApiProblem, not_found
from alarmhub.api.scope import binder, seen, visible_account
from alarmhub.clock import now_us
from alarmhub.core import notifications
from alarmhub.core import response as rules
from alarmhub.core.api_keys import ApiKey
from alarmhub.core.ids import MAX_DIGITS, is_id, parse_id
from alarmhub.store import api_audit, response
from alarmhub.store import contacts as contact_store

READ, WRITE = "accounts:read", "accounts:write"
NULLABLE_TEXT = (str, type(None))
CONTACT_MEMBERS: dict[str, type | tuple[type, ...]] = {
    "name": str, "phones": list, "email": str, "relation": str, "notes": str,
    "passcode": NULLABLE_TEXT, "lists": list, "notify": list, "notify_by": list,
}  # fmt: skip
Find = Callable[[Connection], dict[str, Any] | None]


def _no_content() -> Response:
    return Response(status_code=204, headers={"Cache-Control": "no-store"})


async def _delete(
    request: Request,
    key: ApiKey,
    api: Api,
    account: str,
    find: Find,
    missing: str,
    remove: Callable[[Connection, dict[str, Any]], str],
) -> Response:
    """DELETE of one item of an account's response data: 404 (``missing``) when the account is
    not the key's or the item is not there, If-Match checked against the item, ``remove``d, and
    the audit record of what ``remove`` says it removed."""

    def work(conn: Connection) -> None:
        visible_account(conn, key, account)
        before = find(conn)
        if before is None:
            raise not_found(f"account {account!r} has no {missing}")
        check_if_match(request, etag_of(before))
        _audit(conn, key, f"DELETE {remove(conn, before)}", account)

    await api.write(work)
    return _no_content()


def _checked(problem: str | None) -> None:
    if problem:
        raise ApiProblem(INPUT, problem)


def _audit(conn: Connection, key: ApiKey, what: str, account: str) -> None:
    api_audit.record(conn, key.name, what, account, now_us())


async def _one(api: Api, key: ApiKey, account: str, find: Find, what: str) -> Response:
    """GET of one item of an account, with its ETag."""

    def work(conn: Connection) -> dict[str, Any] | None:
        visible_account(conn, key, account)
        return find(conn)

    item = await api.read(work)
    if item is None:
        raise not_found(f"account {account!r} has no {what}")
    return json_response(item, etag=etag_of(item))


async def _items(
    api: Api, key: ApiKey, account: str, read: Callable[[Connection], Sequence[Any]]
) -> Response:
    def work(conn: Connection) -> Any:
        visible_account(conn, key, account)
        return read(conn)

    return json_response({"items": await api.read(work)})


# zones and panel users -----------------------------------------------------------------------


def _zone_of(request: Request) -> tuple[str, str, str]:
    """The account, zone and area of a zone's path (the zone and area as kept)."""
    zone, area = request.path_params["zone"], request.query_params.get("area", "")
    return request.path_params["account"], zone, area


def _find_zone(account: str, zone: str, area: str) -> Find:
    def find(conn: Connection) -> dict[str, Any] | None:
        _checked(rules.number_problem(zone) or rules.area_problem(area))
        key = (rules.three_digits(zone), rules.two_digits(area))
        rows = response.zones_of(conn, account)
        return next((r for r in rows if (r["zone"], r["area"]) == key), None)

    return find


async def list_zones(request: Request, key: ApiKey, api: Api) -> Response:
    account = request.path_params["account"]
    return await _items(api, key, account, lambda c: response.zones_of(c, account))


async def get_zone(request: Request, key: ApiKey, api: Api) -> Response:
    account, zone, area = _zone_of(request)
    return await _one(api, key, account, _find_zone(account, zone, area), f"zone {zone}")


async def put_zone(request: Request, key: ApiKey, api: Api) -> Response:
    account, zone, area = _zone_of(request)
    body = await api.body(request, {"description": str, "equipment": str})
    if "description" not in body:
        raise ApiProblem(INPUT, "description is required")
    given = rules.Zone(account, zone, body["description"], area, body.get("equipment", ""))
    find = _find_zone(account, zone, area)

    def work(conn: Connection) -> tuple[bool, dict[str, Any] | None]:
        visible_account(conn, key, account)
        before = find(conn)
        check_if_match(request, etag_of(before) if before else None)
        row = response.set_zone_in(conn, given)
        _audit(
            conn, key, f"PUT ZONE {row['zone']}{' AREA ' + row['area'] if area else ''}", account
        )
        return before is None, find(conn)

    created, item = await api.write(work)
    return json_response(item, 201 if created else 200, etag_of(item))


async def delete_zone(request: Request, key: ApiKey, api: Api) -> Response:
    account, zone, area = _zone_of(request)

    def remove(conn: Connection, before: dict[str, Any]) -> str:
        response.remove_zone_in(conn, account, zone, area)
        return f"ZONE {before['zone']}"

    return await _delete(request, key, api, account, _find_zone(account, zone, area),
                         f"zone {zone}", remove)  # fmt: skip


def _find_user(account: str, user: str) -> Find:
    def find(conn: Connection) -> dict[str, Any] | None:
        _checked(rules.number_problem(user, "user"))
        rows = response.users_of(conn, account)
        return next((r for r in rows if r["user"] == rules.three_digits(user)), None)

    return find


async def list_users(request: Request, key: ApiKey, api: Api) -> Response:
    account = request.path_params["account"]
    return await _items(api, key, account, lambda c: response.users_of(c, account))


async def get_user(request: Request, key: ApiKey, api: Api) -> Response:
    account, user = request.path_params["account"], request.path_params["user"]
    return await _one(api, key, account, _find_user(account, user), f"user {user}")


async def put_user(request: Request, key: ApiKey, api: Api) -> Response:
    account, user = request.path_params["account"], request.path_params["user"]
    body = await api.body(request, {"name": str})
    if "name" not in body:
        raise ApiProblem(INPUT, "name is required")
    find = _find_user(account, user)

    def work(conn: Connection) -> tuple[bool, dict[str, Any] | None]:
        visible_account(conn, key, account)
        before = find(conn)
        check_if_match(request, etag_of(before) if before else None)
        row = response.set_user_in(conn, rules.PanelUser(account, user, body["name"]))
        _audit(conn, key, f"PUT USER {row['user_number']}", account)
        return before is None, find(conn)

    created, item = await api.write(work)
    return json_response(item, 201 if created else 200, etag_of(item))


async def delete_user(request: Request, key: ApiKey, api: Api) -> Response:
    account, user = request.path_params["account"], request.path_params["user"]

    def remove(conn: Connection, before: dict[str, Any]) -> str:
        response.remove_user_in(conn, account, user)
        return f"USER {before['user']}"

    return await _delete(request, key, api, account, _find_user(account, user), f"user {user}",
                         remove)  # fmt: skip


# contacts ------------------------------------------------------------------------------------


def _phones(given: list[Any]) -> tuple[rules.Phone, ...]:
    """``[{"number", "kind"?}]`` as phones (kind: mobile when absent)."""
    phones = []
    for phone in given:
        if not isinstance(phone, dict) or set(phone) - {"number", "kind"} or "number" not in phone:
            raise ApiProblem(INPUT, 'each phone is {"number": "...", "kind": "mobile|home|work"}')
        number, kind = phone["number"], phone.get("kind", "")
        if not isinstance(number, str) or not isinstance(kind, str):
            raise ApiProblem(INPUT, "a phone's number and kind are strings")
        try:
            phones.append(rules.Phone(number, rules.phone_kind(kind)))
        except ValueError as exc:
            raise ApiProblem(INPUT, str(exc)) from None
    return tuple(phones)


async def _passcode_hash(body: dict[str, Any]) -> str | None:
    """The hash of the body's passcode (made in a thread), None when it has none."""
    passcode = body.get("passcode")
    return await response.hash_passcode_in_thread(passcode) if passcode is not None else None


def _contact_of(request: Request) -> tuple[str, int]:
    """The account and contact id of a contact's path; an id that can be no row's (past 64
    bits, zero) is a contact that does not exist."""
    account, text = request.path_params["account"], request.path_params["id"]
    contact_id = parse_id(text)
    if contact_id is None:
        raise not_found(f"account {account!r} has no contact {text[: MAX_DIGITS + 1]!r}")
    return account, contact_id


def _find_contact(account: str, contact_id: int) -> Find:
    def find(conn: Connection) -> dict[str, Any] | None:
        rows = contact_store.contacts_of(conn, account, contact_id)
        return rows[0] if rows else None

    return find


async def list_contacts(request: Request, key: ApiKey, api: Api) -> Response:
    account = request.path_params["account"]
    return await _items(api, key, account, lambda c: contact_store.contacts_of(c, account))


def _words(body: dict[str, Any], member: str) -> tuple[str, ...]:
    """A contact's ``notify`` or ``notify_by``: a list of names (checked with the contact)."""
    given = body.get(member, [])
    if not all(isinstance(word, str) for word in given):
        raise ApiProblem(INPUT, f"{member} holds names")
    return tuple(given)


async def get_contact(request: Request, key: ApiKey, api: Api) -> Response:
    account, contact_id = _contact_of(request)
    find = _find_contact(account, contact_id)
    return await _one(api, key, account, find, f"contact {contact_id}")


async def post_contact(request: Request, key: ApiKey, api: Api) -> Response:
    account = seen(key, request.path_params["account"])
    body = await api.body(request, CONTACT_MEMBERS)
    if "name" not in body:
        raise ApiProblem(INPUT, "name is required")
    lists = body.get("lists", [])
    if not all(isinstance(name, str) for name in lists):
        raise ApiProblem(INPUT, "lists holds call list names")
    places = [contact_store.placement(name) for name in lists]
    contact = rules.Contact(
        account, body["name"], _phones(body.get("phones", [])), body.get("email", ""),
        body.get("relation", ""), body.get("notes", ""), _words(body, "notify"),
        _words(body, "notify_by"),
    )  # fmt: skip
    passcode_hash = await _passcode_hash(body)

    def work(conn: Connection) -> dict[str, Any]:
        visible_account(conn, key, account)
        contact_id = contact_store.add_contact_in(conn, contact, places, passcode_hash)
        _audit(conn, key, f"POST CONTACT {contact_id}", account)
        return contact_store.contacts_of(conn, account, contact_id)[0]

    item = await api.write(work)
    answer = json_response(item, 201, etag_of(item))
    answer.headers["Location"] = f"{request.url.path}/{item['id']}"
    return answer


async def patch_contact(request: Request, key: ApiKey, api: Api) -> Response:
    account, contact_id = _contact_of(request)
    seen(key, account)
    body = await api.body(request, {k: v for k, v in CONTACT_MEMBERS.items() if k != "lists"})
    changes: dict[str, Any] = {
        k: body[k] for k in ("name", "email", "relation", "notes") if k in body
    }
    if "phones" in body:
        changes["phones"] = _phones(body["phones"])
    for subscription in ("notify", "notify_by"):
        if subscription in body:
            changes[subscription] = _words(body, subscription)
    passcode_hash = await _passcode_hash(body)
    clear = "passcode" in body and body["passcode"] is None
    find = _find_contact(account, contact_id)

    def work(conn: Connection) -> dict[str, Any]:
        visible_account(conn, key, account)
        before = find(conn)
        if before is None:
            raise not_found(f"account {account!r} has no contact {contact_id}")
        check_if_match(request, etag_of(before))
        item = contact_store.update_contact_in(
            conn, account, contact_id, changes, passcode_hash=passcode_hash, clear_passcode=clear
        )
        _audit(conn, key, f"PATCH CONTACT {contact_id}", account)
        return item

    item = await api.write(work)
    return json_response(item, etag=etag_of(item))


async def delete_contact(request: Request, key: ApiKey, api: Api) -> Response:
    account, contact_id = _contact_of(request)

    def remove(conn: Connection, before: dict[str, Any]) -> str:
        contact_store.remove_contact_in(conn, account, contact_id)
        return f"CONTACT {contact_id}"

    return await _delete(request, key, api, account, _find_contact(account, contact_id),
                         f"contact {contact_id}", remove)  # fmt: skip


# call lists ----------------------------------------------------------------------------------


def _call_list(name: str, contacts: list[int]) -> dict[str, Any]:
    return {"name": name, "contacts": contacts}


async def list_call_lists(request: Request, key: ApiKey, api: Api) -> Response:
    account = request.path_params["account"]

    def read(conn: Connection) -> list[dict[str, Any]]:
        return [_call_list(n, c) for n, c in contact_store.call_lists(conn, account).items()]

    return await _items(api, key, account, read)


async def put_call_list(request: Request, key: ApiKey, api: Api) -> Response:
    account = request.path_params["account"]
    name = contact_store.placement(request.path_params["name"]).list_name
    body = await api.body(request, {"contacts": list})
    contacts = body.get("contacts")
    if contacts is None:
        raise ApiProblem(INPUT, "contacts is required")
    if not all(is_id(c) for c in contacts):
        raise ApiProblem(INPUT, "contacts holds contact ids (whole numbers)")

    def work(conn: Connection) -> tuple[bool, dict[str, Any]]:
        visible_account(conn, key, account)
        before = contact_store.call_lists(conn, account).get(name)
        check_if_match(request, etag_of(_call_list(name, before)) if before else None)
        kept = contact_store.set_call_list_in(conn, account, name, contacts)
        _audit(conn, key, f"PUT CALL LIST {name}", account)
        return not before, _call_list(name, kept)

    created, item = await api.write(work)
    return json_response(item, 201 if created else 200, etag_of(item))


def routes(api: Api) -> list[BaseRoute]:
    bound = binder(api)
    one = "/accounts/{account}"
    return [
        Route(f"{one}/zones", bound(READ, list_zones), methods=["GET"]),
        Route(f"{one}/zones/{{zone}}", bound(READ, get_zone), methods=["GET"]),
        Route(f"{one}/zones/{{zone}}", bound(WRITE, put_zone), methods=["PUT"]),
        Route(f"{one}/zones/{{zone}}", bound(WRITE, delete_zone), methods=["DELETE"]),
        Route(f"{one}/users", bound(READ, list_users), methods=["GET"]),
        Route(f"{one}/users/{{user}}", bound(READ, get_user), methods=["GET"]),
        Route(f"{one}/users/{{user}}", bound(WRITE, put_user), methods=["PUT"]),
        Route(f"{one}/users/{{user}}", bound(WRITE, delete_user), methods=["DELETE"]),
        Route(f"{one}/contacts", bound(READ, list_contacts), methods=["GET"]),
        Route(f"{one}/contacts", bound(WRITE, post_contact), methods=["POST"]),
        Route(f"{one}/contacts/{{id}}", bound(READ, get_contact), methods=["GET"]),
        Route(f"{one}/contacts/{{id}}", bound(WRITE, patch_contact), methods=["PATCH"]),
        Route(f"{one}/contacts/{{id}}", bound(WRITE, delete_contact), methods=["DELETE"]),
        Route(f"{one}/call-lists", bound(READ, list_call_lists), methods=["GET"]),
        Route(f"{one}/call-lists/{{name}}", bound(WRITE, put_call_list), methods=["PUT"]),
    ]


# the OpenAPI path items ----------------------------------------------------------------------

_ONE = "/api/v1/accounts/{account}"
_ACCOUNT = oa.path_parameter("account", "The account number")
ZONE_SCHEMA = oa.obj(
    {"zone": oa.TEXT, "area": oa.TEXT, "description": oa.TEXT, "equipment": oa.TEXT},
    ("zone", "area", "description", "equipment"),
)
USER_SCHEMA = oa.obj({"user": oa.TEXT, "name": oa.TEXT}, ("user", "name"))
_PHONE = oa.obj(
    {"number": oa.TEXT, "kind": {"type": "string", "enum": [k.value for k in rules.PhoneKind]}},
    ("number",),
)
_NOTIFY = {"type": "array", "items": {"type": "string", "enum": list(notifications.KINDS)},
           "description": "the kinds of notification the contact gets (decisions 13)"}  # fmt: skip
_NOTIFY_BY = {"type": "array", "items": {"type": "string", "enum": list(notifications.CHANNELS)},
              "description": "how: email (its email), sms (its first mobile phone)"}  # fmt: skip
_PLACE = oa.obj({"name": oa.TEXT, "order": {"type": "integer"}}, ("name", "order"))
CONTACT_SCHEMA = oa.obj(
    {
        "id": {"type": "integer"}, "name": oa.TEXT, "phones": {"type": "array", "items": _PHONE},
        "email": oa.TEXT, "relation": oa.TEXT, "notes": oa.TEXT,
        "has_passcode": {"type": "boolean"}, "lists": {"type": "array", "items": _PLACE},
        "notify": _NOTIFY, "notify_by": _NOTIFY_BY,
    },
    ("id", "name", "phones", "email", "relation", "notes", "notify", "notify_by",
     "has_passcode", "lists"),
)  # fmt: skip
_CONTACT_FIELDS: dict[str, Any] = {
    "name": oa.TEXT, "phones": {"type": "array", "items": _PHONE}, "email": oa.TEXT,
    "relation": oa.TEXT, "notes": oa.TEXT, "notify": _NOTIFY, "notify_by": _NOTIFY_BY,
    "passcode": {**oa.NULLABLE_TEXT, "description": "write-only; null clears it (PATCH)"},
}  # fmt: skip
_LISTS = {"type": "array", "items": oa.TEXT, "description": "call lists (default PRIMARY)"}
CALL_LIST_SCHEMA = oa.obj(
    {"name": oa.TEXT, "contacts": {"type": "array", "items": {"type": "integer"}}},
    ("name", "contacts"),
)
_AREA = {"name": "area", "in": "query", "required": False, "schema": oa.TEXT,
         "description": "The area (none: the description for every area)"}  # fmt: skip


def _item_paths(kind: str, name: str, schema: dict[str, Any], put_body: dict[str, Any],
                extra: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """The list and one item of zones or users: GET, PUT (201 or 200), DELETE."""
    one = [_ACCOUNT, oa.path_parameter(name, f"The {name} number (000-999)"), *extra]
    return {
        f"{_ONE}/{kind}": {
            "parameters": [_ACCOUNT],
            "get": oa.operation(f"The account's {kind}", READ, {200: oa.items_of(schema)}),
        },
        f"{_ONE}/{kind}/{{{name}}}": {
            "parameters": one,
            "get": oa.operation(f"One {name}", READ, {200: schema}),
            "put": oa.operation(
                f"Set a {name} (201 when new)", WRITE, {200: schema, 201: schema},
                parameters=[oa.IF_MATCH], request=oa.body(put_body), refusals=(404, 412),
            ),
            "delete": oa.operation(
                f"Remove a {name}", WRITE, {204: None}, parameters=[oa.IF_MATCH],
                refusals=(404, 412),
            ),
        },
    }  # fmt: skip


PATHS: dict[str, Any] = {
    **_item_paths(
        "zones", "zone", ZONE_SCHEMA,
        oa.obj({"description": oa.TEXT, "equipment": oa.TEXT}, ("description",)), [_AREA],
    ),
    **_item_paths("users", "user", USER_SCHEMA, oa.obj({"name": oa.TEXT}, ("name",)), []),
    f"{_ONE}/contacts": {
        "parameters": [_ACCOUNT],
        "get": oa.operation("The account's contacts", READ, {200: oa.items_of(CONTACT_SCHEMA)}),
        "post": oa.operation(
            "Add a contact", WRITE, {201: CONTACT_SCHEMA},
            request=oa.body(oa.obj({**_CONTACT_FIELDS, "lists": _LISTS}, ("name",))),
        ),
    },
    f"{_ONE}/contacts/{{id}}": {
        "parameters": [_ACCOUNT, oa.path_parameter("id", "The contact's id", integer=True)],
        "get": oa.operation("One contact (never its passcode)", READ, {200: CONTACT_SCHEMA}),
        "patch": oa.operation(
            "Change a contact: the members given", WRITE, {200: CONTACT_SCHEMA},
            parameters=[oa.IF_MATCH], request=oa.body(oa.obj(_CONTACT_FIELDS)),
            refusals=(404, 412),
        ),
        "delete": oa.operation(
            "Remove a contact (and take it off every call list)", WRITE, {204: None},
            parameters=[oa.IF_MATCH], refusals=(404, 412),
        ),
    },
    f"{_ONE}/call-lists": {
        "parameters": [_ACCOUNT],
        "get": oa.operation("The account's call lists", READ,
                            {200: oa.items_of(CALL_LIST_SCHEMA)}),
    },
    f"{_ONE}/call-lists/{{name}}": {
        "parameters": [_ACCOUNT, oa.path_parameter("name", "The call list, e.g. PRIMARY")],
        "put": oa.operation(
            "Make a call list exactly these contacts, in calling order (201 when new)", WRITE,
            {200: CALL_LIST_SCHEMA, 201: CALL_LIST_SCHEMA}, parameters=[oa.IF_MATCH],
            request=oa.body(oa.obj({"contacts": {"type": "array", "items": {"type": "integer"}}},
                                   ("contacts",))),
            refusals=(404, 412),
        ),
    },
}  # fmt: skip
