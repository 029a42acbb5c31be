"""One owner for RFC 3339: every formatter and parser of intent-loop agrees on one instant."""
import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.imports import costly_modules_loaded
from intent_loop.base.timestamps import (
    EPOCH_MAX,
    EPOCH_MIN,
    format_compact_utc,
    format_utc,
    parse_epoch,
    rfc3339_error,
    utc_sort_key,
)
from intent_loop.errors import ErrorCode, IntentLoopError


def test_the_drift_instant_has_one_spelling():
    """...50.9996 was ...50.999Z in the ledger and ...51.000Z in the Guard document."""
    instant = 1_764_486_170.9996
    assert format_utc(instant) == "2025-11-30T07:02:50.999Z"


@given(st.integers(min_value=0, max_value=4_102_444_800_000))
def test_format_truncates_to_the_millisecond_like_datetime(millis):
    epoch = millis / 1000 + 0.0004  # a sub-millisecond remainder that rounding would have kept
    expected = datetime.datetime.fromtimestamp(millis // 1000, datetime.UTC).strftime(
        "%Y-%m-%dT%H:%M:%S") + f".{millis % 1000:03d}Z"
    assert format_utc(epoch) == expected


# Up to 2100 a float epoch holds its millisecond exactly enough (spacing < 0.5 us); later ones are
# truncated as the float really is, which is what the formatter promises.
@given(st.integers(min_value=-2_208_988_800, max_value=4_102_444_800), st.integers(min_value=0, max_value=999))
def test_parse_is_the_inverse_of_format(seconds, millis):
    text = format_utc(seconds + millis / 1000)
    assert rfc3339_error(text) is None
    assert round(parse_epoch(text) * 1000) == seconds * 1000 + millis


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-01-31T12:00:00Z", 1_769_860_800.0),
    ("2026-01-31T13:30:00+01:30", 1_769_860_800.0),
    ("2026-01-31T10:00:00.5-02:00", 1_769_860_800.5),
    ("2000-02-29T00:00:00.000000001Z", 951_782_400.000000001),
])
def test_parse_offsets_and_fractions(text, expected):
    assert parse_epoch(text) == pytest.approx(expected, abs=1e-6)
    assert parse_epoch(text) == pytest.approx(datetime.datetime.fromisoformat(text).timestamp(), abs=1e-6)


@pytest.mark.parametrize("text", ["2026-02-30T00:00:00Z", "2026-01-31t12:00:00z", "2026-01-31T12:00Z",
                                  "2026-01-31T23:59:60Z", "2026-01-31T12:00:00", None, 5])
def test_parse_refuses_what_the_check_refuses(text):
    assert rfc3339_error(text) is not None
    assert parse_epoch(text) is None


def test_sort_key_orders_like_the_instant():
    stamps = ["2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00.05Z", "2026-01-01T00:00:00Z"]
    assert sorted(stamps, key=utc_sort_key) == ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.05Z",
                                                  "2026-01-01T00:00:00.1Z"]
    assert utc_sort_key("2026-01-01T00:00:00+00:00") is None


@pytest.mark.parametrize(("epoch", "expected"), [
    (EPOCH_MIN, "0001-01-01T00:00:00.000Z"), (EPOCH_MAX, "9999-12-31T23:59:59.000Z"),
    (-1.5, "1969-12-31T23:59:58.500Z"), (1.001, "1970-01-01T00:00:01.001Z")])
def test_format_at_the_edges(epoch, expected):
    assert format_utc(epoch) == expected
    assert parse_epoch(expected) == pytest.approx(epoch, abs=1e-3)


def test_compact_stamp_for_file_names():
    assert format_compact_utc(1_764_486_170.9996) == "20251130T070250Z"


@pytest.mark.parametrize("epoch", [float("nan"), float("inf"), EPOCH_MAX + 1, EPOCH_MIN - 1])
def test_format_refuses_what_rfc3339_cannot_spell(epoch):
    with pytest.raises(IntentLoopError) as caught:
        format_utc(epoch)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT


def test_no_other_module_formats_or_parses_timestamps():
    """The six copies this module replaced must not come back."""
    lib = Path(__file__).resolve().parents[2] / "lib" / "intent_loop"
    patterns = ("%Y-%m-%dT", "%Y%m%dT", "fromisoformat", "strptime", "isoformat(", "def rfc3339")
    copies = sorted(p.relative_to(lib).as_posix() for p in lib.rglob("*.py")
                    if p.name != "timestamps.py" and any(x in p.read_text() for x in patterns))
    assert copies == []


def test_timestamps_import_nothing_heavy():
    assert costly_modules_loaded("import intent_loop.base.timestamps",
                                 ("re", "datetime", "calendar", "json", "enum", "typing")) == []
