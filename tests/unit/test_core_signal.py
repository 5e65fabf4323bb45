"""``alarmhub.core.signal.validate``: every refusal of decisions §2, in contract order."""

from __future__ import annotations

from typing import Any

import pytest

from alarmhub.core import errors
from alarmhub.core.errors import SignalRefusal
from alarmhub.core.signal import SignalFields, valid_dnis, validate

GOOD: dict[str, Any] = {
    "dnis": "1234",
    "panel": "0042",
    "code": "E130",
    "area": "01",
    "zone_or_user": "015",
}
ABSENT = object()


def body(**changes: Any) -> dict[str, Any]:
    """The good body with fields changed; a field set to ABSENT is removed."""
    result = {**GOOD, **changes}
    return {k: v for k, v in result.items() if v is not ABSENT}


REFUSALS: list[tuple[str, dict[str, Any], SignalRefusal]] = [
    # dnis
    ("dnis absent", body(dnis=ABSENT), errors.DNIS_REQUIRED),
    ("dnis empty", body(dnis=""), errors.DNIS_REQUIRED),
    ("dnis null", body(dnis=None), errors.DNIS_REQUIRED),
    ("dnis number", body(dnis=1234), errors.DNIS_INVALID),
    ("dnis zero number", body(dnis=0), errors.DNIS_INVALID),
    ("dnis list", body(dnis=["1234"]), errors.DNIS_INVALID),
    ("dnis too long", body(dnis="123456"), errors.DNIS_INVALID),
    ("dnis not alnum", body(dnis="12-3"), errors.DNIS_INVALID),
    ("dnis space", body(dnis="12 3"), errors.DNIS_INVALID),
    ("dnis all zeros", body(dnis="00000"), errors.DNIS_INVALID),
    ("dnis one zero", body(dnis="0"), errors.DNIS_INVALID),
    ("dnis non-ascii letter", body(dnis="12é"), errors.DNIS_INVALID),
    ("dnis non-ascii digits", body(dnis="１２３"), errors.DNIS_INVALID),
    # panel
    ("panel absent", body(panel=ABSENT), errors.PANEL_REQUIRED),
    ("panel empty", body(panel=""), errors.PANEL_REQUIRED),
    ("panel null", body(panel=None), errors.PANEL_REQUIRED),
    ("panel number", body(panel=42), errors.PANEL_INVALID),
    ("panel too long", body(panel="ABCDEFGHIJK"), errors.PANEL_INVALID),
    ("panel not alnum", body(panel="00-42"), errors.PANEL_INVALID),
    ("panel all zeros", body(panel="0000"), errors.PANEL_INVALID),
    ("panel ten zeros", body(panel="0000000000"), errors.PANEL_INVALID),
    ("panel non-ascii", body(panel="00ß2"), errors.PANEL_INVALID),
    # code
    ("code absent", body(code=ABSENT), errors.CODE_REQUIRED),
    ("code empty", body(code=""), errors.CODE_REQUIRED),
    ("code null", body(code=None), errors.CODE_REQUIRED),
    ("code number", body(code=130), errors.CODE_INVALID),
    ("code unknown event", body(code="E999"), errors.CODE_INVALID),
    ("code unknown event 000", body(code="E000"), errors.CODE_INVALID),
    ("code wrong qualifier", body(code="X130"), errors.CODE_INVALID),
    ("code qualifier digit", body(code="1130"), errors.CODE_INVALID),
    ("code DC-09 qualifier P", body(code="P130"), errors.CODE_INVALID),
    ("code too short", body(code="E13"), errors.CODE_INVALID),
    ("code too long", body(code="E1300"), errors.CODE_INVALID),
    ("code no qualifier", body(code="130"), errors.CODE_INVALID),
    # area
    ("area too long", body(area="123"), errors.AREA_INVALID),
    ("area letter", body(area="a"), errors.AREA_INVALID),
    ("area number", body(area=1), errors.AREA_INVALID),
    ("area negative", body(area="-1"), errors.AREA_INVALID),
    ("area space", body(area=" 1"), errors.AREA_INVALID),
    ("area non-ascii digit", body(area="١"), errors.AREA_INVALID),
    # zone_or_user
    ("zone too long", body(zone_or_user="1000"), errors.ZONE_INVALID),
    ("zone letter", body(zone_or_user="01a"), errors.ZONE_INVALID),
    ("zone number", body(zone_or_user=7), errors.ZONE_INVALID),
    ("zone non-ascii digit", body(zone_or_user="٧"), errors.ZONE_INVALID),
    # several bad fields: the first in contract order wins
    ("dnis before panel", body(dnis="", panel=""), errors.DNIS_REQUIRED),
    ("dnis-2 before panel-1", body(dnis="!", panel=ABSENT), errors.DNIS_INVALID),
    ("panel before code", body(panel="0000", code=ABSENT), errors.PANEL_INVALID),
    ("code before area", body(code="X999", area="abc"), errors.CODE_INVALID),
    ("area before zone", body(area="abc", zone_or_user="1000"), errors.AREA_INVALID),
    ("all bad", dict.fromkeys(GOOD, 1), errors.DNIS_INVALID),
    ("empty body", {}, errors.DNIS_REQUIRED),
]


@pytest.mark.parametrize(
    ("given", "refusal"), [(b, r) for _, b, r in REFUSALS], ids=[n for n, _, _ in REFUSALS]
)
def test_refusals_in_contract_order(given: dict[str, Any], refusal: SignalRefusal) -> None:
    assert validate(given) == refusal


NORMAL = SignalFields(dnis="1234", panel="0042", code="E130", area="01", zone="015")


def fields(**changes: str) -> SignalFields:
    """The normalised fields of the good body, with some changed."""
    return NORMAL._replace(**changes)


ACCEPTED: list[tuple[str, dict[str, Any], SignalFields]] = [
    ("all given", body(), NORMAL),
    ("restore", body(code="R130"), fields(code="R130")),
    ("lower-case code", body(code="e130"), fields(code="E130")),
    ("lower-case restore", body(code="r121"), fields(code="R121")),
    ("area absent", body(area=ABSENT), fields(area="00")),
    ("area empty", body(area=""), fields(area="00")),
    ("area null", body(area=None), fields(area="00")),
    ("area one digit", body(area="1"), fields(area="01")),
    ("area 99", body(area="99"), fields(area="99")),
    ("zone absent", body(zone_or_user=ABSENT), fields(zone="000")),
    ("zone empty", body(zone_or_user=""), fields(zone="000")),
    ("zone null", body(zone_or_user=None), fields(zone="000")),
    ("zone one digit", body(zone_or_user="7"), fields(zone="007")),
    ("zone two digits", body(zone_or_user="15"), fields(zone="015")),
    ("zone 999", body(zone_or_user="999"), fields(zone="999")),
    ("dnis letters", body(dnis="AbC12"), fields(dnis="AbC12")),
    ("dnis leading zeros", body(dnis="00001"), fields(dnis="00001")),
    ("panel ten alnum", body(panel="A1B2C3D4E5"), fields(panel="A1B2C3D4E5")),
    ("panel five digits", body(panel="12345"), fields(panel="12345")),
    ("panel zero-led", body(panel="000A"), fields(panel="000A")),
    ("extra fields ignored", body(extra="x", more=[1]), NORMAL),
]


@pytest.mark.parametrize(
    ("given", "expected"), [(b, f) for _, b, f in ACCEPTED], ids=[n for n, _, _ in ACCEPTED]
)
def test_accepted_and_normalised(given: dict[str, Any], expected: SignalFields) -> None:
    assert validate(given) == expected


def test_valid_dnis() -> None:
    assert valid_dnis("1")
    assert valid_dnis("ABCDE")
    assert not valid_dnis("")
    assert not valid_dnis("000")
    assert not valid_dnis("ABCDEF")
    assert not valid_dnis(12)
    assert not valid_dnis(None)
