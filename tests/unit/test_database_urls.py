"""The database URL as every connection of a node reads it (decisions §14): one URL, multi-host
forms included, gives the engines and the connections opened with psycopg itself (the console's
LISTEN) the same servers, ports and session attributes. No database is needed."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import make_url

from alarmhub.store.engine import CONNECTION_DEFAULTS, driver_url, libpq_conninfo

QUERY_FORM = (
    "postgresql://alarmhub:SECRET@/alarmhub"
    "?host=pg1:5432&host=pg2:5433&host=pg3:5434&target_session_attrs=read-write"
)
COMMA_FORM = (
    "postgresql://alarmhub:SECRET@pg1:5432,pg2:5433,pg3:5434/alarmhub"
    "?target_session_attrs=read-write"
)


@pytest.mark.parametrize("url", [QUERY_FORM, COMMA_FORM], ids=["query", "comma"])
def test_a_multi_host_url_names_every_server_with_its_port(url: str) -> None:
    params = conninfo_to_dict(libpq_conninfo(url))
    assert params == {
        "host": "pg1,pg2,pg3",
        "port": "5432,5433,5434",
        "dbname": "alarmhub",
        "user": "alarmhub",
        "password": "SECRET",
        "target_session_attrs": "read-write",
        **CONNECTION_DEFAULTS,
    }


def test_the_comma_form_becomes_the_query_form_sqlalchemy_reads() -> None:
    url = make_url(driver_url(COMMA_FORM))
    assert url.drivername == "postgresql+psycopg"
    assert url.host is None
    assert url.query["host"] == ("pg1:5432", "pg2:5433", "pg3:5434")
    assert url.query["target_session_attrs"] == "read-write"
    assert url.database == "alarmhub"


def test_the_engine_url_and_the_text_give_the_same_conninfo() -> None:
    """The console's LISTEN passes the engine's URL object; the node's settings hold text."""
    assert libpq_conninfo(make_url(driver_url(QUERY_FORM))) == libpq_conninfo(QUERY_FORM)


def test_hosts_without_ports_take_the_default_port() -> None:
    params = conninfo_to_dict(libpq_conninfo("postgresql://u@pg1,pg2/db"))
    assert params["host"] == "pg1,pg2"
    assert params.get("port", "") in ("", ",")  # libpq: an empty entry is the default port


def test_a_single_host_url_is_left_as_it_was() -> None:
    url = "postgresql://postgres@127.0.0.1:5432/postgres"
    assert driver_url(url) == "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    params = conninfo_to_dict(libpq_conninfo(url))
    named = {"host": "127.0.0.1", "port": "5432", "dbname": "postgres", "user": "postgres"}
    assert params == {**named, **CONNECTION_DEFAULTS}


def test_a_password_with_quotes_and_spaces_survives() -> None:
    params = conninfo_to_dict(libpq_conninfo("postgresql://u:p%20'x%40y@pg1:5432,pg2/db"))
    assert params["password"] == "p 'x@y"
    assert params["host"] == "pg1,pg2"


def test_sqlite_urls_are_not_touched() -> None:
    assert driver_url("sqlite:///var/alarmhub.db") == "sqlite:///var/alarmhub.db"


def test_every_connection_gives_up_on_a_server_gone_silent_unless_the_url_says_otherwise() -> None:
    params = conninfo_to_dict(libpq_conninfo(QUERY_FORM))
    for name, value in CONNECTION_DEFAULTS.items():
        assert params[name] == value
    own = conninfo_to_dict(libpq_conninfo(QUERY_FORM + "&tcp_user_timeout=5000&keepalives=0"))
    assert (own["tcp_user_timeout"], own["keepalives"]) == ("5000", "0")
    assert own["keepalives_idle"] == CONNECTION_DEFAULTS["keepalives_idle"]
