"""What every endpoint of the integrator API shares, on both databases: the key's own resource,
one answer for no key, an unknown key and a revoked one (401 API-AUTH, before the body is
read), problem details for paths and methods the API does not have, and a cursor it never gave
refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api_station import ApiHub, api_hub, problem

pytestmark = pytest.mark.backends("sqlite", "postgresql")

KEYS = {
    "dealer": (("accounts:read",), "7000"),
    "gone": (("accounts:read",), ""),
    "alarms": (("alarms:read",), ""),
}


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiHub]:
    data_dir: Path = tmp_path_factory.mktemp("api-foundation")
    with api_hub(data_dir, KEYS, revoked=["gone"]) as hub:
        yield hub


def test_a_key_reads_its_own_scopes_and_range(hub: ApiHub) -> None:
    assert hub.ok("dealer", "GET", "/key") == {
        "name": "dealer", "scopes": ["accounts:read"], "accounts": "7000",
    }  # fmt: skip


def test_no_key_a_wrong_key_and_a_revoked_key_get_one_answer(hub: ApiHub) -> None:
    wrong = "ahk_" + "A" * 43
    answers = [
        hub.call(None, "GET", "/key"),
        hub.call(None, "GET", "/key", headers={"Authorization": f"Bearer {wrong}"}),
        hub.call(None, "GET", "/key", headers={"Authorization": "Basic abc"}),
        hub.call("gone", "GET", "/key"),
    ]
    bodies = [problem(a, 401, "API-AUTH") for a in answers]
    assert all(a.headers["www-authenticate"].startswith("Bearer") for a in answers)
    assert bodies[1] == bodies[3]  # unknown and revoked: the same answer


def test_a_body_is_not_read_before_the_key(hub: ApiHub) -> None:
    answer = hub.call(None, "PUT", "/accounts/700001/schedule", body=["not", "an", "object"])
    problem(answer, 401, "API-AUTH")


@pytest.mark.parametrize("path", ["/nope", "/accounts%0A", "/key/more"])
def test_paths_the_api_does_not_have_are_problem_details(hub: ApiHub, path: str) -> None:
    problem(hub.call("dealer", "GET", path), 404, "API-NOTFOUND")


@pytest.mark.parametrize("cursor", ["!!!", "a b", "x" * 300])
def test_a_cursor_the_api_never_gave_is_refused(hub: ApiHub, cursor: str) -> None:
    problem(hub.call("alarms", "GET", "/alarms", params={"cursor": cursor}), 422, "API-INPUT")
