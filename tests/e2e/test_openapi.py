"""The served OpenAPI document is true: schemathesis generates requests from it (the signaling
interface, the query interface and the integrator API, each with its credentials) against the
node (in this process: tests.support.in_process) and checks every answer against it (no 500,
status, content type and body schema).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from alarmhub.client import QueryClient
from alarmhub.core.api_keys import SCOPES
from tests.support.in_process import BASE_URL, in_process_node, requests_session
from tests.support.processes import cli, cli_json

EXAMPLES = 40
# No 500, and every answer as documented: status code, content type, headers and body schema.
# Not "schema-valid data is accepted": a valid request may still be refused by rules no schema
# can hold (the token's drivers, the DC-05 table), and the document lists those refusals.
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@dataclass
class Api:
    client: httpx.Client
    session: requests.Session  # schemathesis calls through it: to the same node
    token: str
    signer: QueryClient
    key: str  # an integrator API key with every scope

    def schema(self) -> Any:
        """The document the node serves, as schemathesis reads it."""
        answer = self.client.get("/openapi.json")
        assert answer.status_code == 200, answer.text
        return schemathesis.openapi.from_dict(answer.json())


@pytest.fixture(scope="module")
def api(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    data_dir: Path = tmp_path_factory.mktemp("openapi")
    cli(data_dir, "driver", "add", "rx1")
    cli(data_dir, "dnis", "add", "1234", "--mask", "70####")
    cli(data_dir, "account", "add", "700042", "--name", "Openapi School")
    created = cli_json(data_dir, "token", "create", "--name", "t", "--driver", "rx1",
                       "--heartbeat", "site1:rx1")  # fmt: skip
    assert isinstance(created, dict)
    cli(data_dir, "apiuser", "add", "documentation", "--password", "secretpassword")
    scopes = [a for scope in SCOPES for a in ("--scope", scope)]
    key = cli_json(data_dir, "apikey", "create", "--name", "documentation", *scopes, "--json")
    assert isinstance(key, dict)
    signer = QueryClient(
        BASE_URL, appkey="openapi", username="documentation", password="secretpassword"
    )
    with (
        in_process_node(data_dir, {"ALARMHUB_TIMEZONE": "UTC"}) as node,
        requests_session(node.client) as session,
    ):
        try:
            yield Api(node.client, session, str(created["token"]), signer, str(key["key"]))
        finally:
            signer.close()


def _headers(case: Any, api: Api) -> dict[str, str]:
    headers: dict[str, str] = {}
    if case.path.startswith("/rx/"):
        headers["Authorization"] = f"Bearer {api.token}"
    if case.path.startswith("/api/v1/"):
        headers["Authorization"] = f"Bearer {api.key}"
    if case.path == "/rest/rest.php" and isinstance(case.body, dict):
        form = {str(k): str(v) for k, v in case.body.items()}
        headers.update(api.signer.headers(form))
    return headers


@pytest.mark.long  # CPU-bound: started first, never the run's tail
def test_answers_match_the_document(api: Api) -> None:
    schema = api.schema()
    operations = [result.ok() for result in schema.get_all_operations()]
    paths = {op.path for op in operations}
    assert paths >= {"/rx/{pair}/contact_id", "/rest/rest.php", "/api/v1/accounts"}
    for operation in operations:
        if operation.path == "/api/v1/events":  # a stream that never ends: tests of its own
            continue

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            case.call_and_validate(
                BASE_URL, api.session, headers=_headers(case, api), checks=CHECKS
            )

        check()


@pytest.mark.parametrize(
    "form",
    [
        {"*setMethod": "XMHIST", "ACCOUNT": "700042", "HOURS": "24"},
        {"*setMethod": "XMHIST", "ACCOUNT": "700042", "HOURS": "24", "ARRAY": "Y"},
        {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"},
        {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY", "FIXED_HISTORY_TAG": "N"},
        {"*setMethod": "XMAINPRO"},
        {"*setMethod": "XMHIST", "ACCOUNT": "700042", "STARTDATE": "x", "STOPDATE": "y"},
        {"*setMethod": "XMNOPE"},
    ],
)
def test_method_answers_match_the_document(api: Api, form: dict[str, str]) -> None:
    """Signed requests of every method (the generated ones mostly meet the auth and method
    checks), with pending alarms and history to answer with."""
    signal = {"dnis": "1234", "panel": "0042", "code": "E130", "zone_or_user": "5"}
    post = "/rx/site1:rx1/contact_id"
    assert api.client.post(
        post, json=signal, headers={"Authorization": f"Bearer {api.token}"}
    ).is_success
    operation = api.schema()["/rest/rest.php"]["POST"]
    case = operation.Case(
        query={"dataSource": "methods", "*view": "xmsubmit"},
        body=form,
        headers=api.signer.headers(form),
        media_type="multipart/form-data",
    )
    response = case.call_and_validate(BASE_URL, api.session, checks=CHECKS)
    expected = 400 if form["*setMethod"] == "XMNOPE" or "STARTDATE" in form else 200
    assert response.status_code == expected, response.text
