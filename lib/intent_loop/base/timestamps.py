"""RFC 3339 UTC timestamps: the one formatter (milliseconds, truncated), the one strict check, parsing.

Every timestamp intent-loop writes (ledger events, the Guard document's `updated_at`, export
files, manifests) comes from `format_utc`, so one instant has one spelling everywhere: the
fraction is truncated to milliseconds, never rounded (rounding turned ...50.9996 into ...51.000Z
in one place and ...50.999Z in another). Import-light on purpose: no `datetime`, `calendar` or `re`
(each would cost a hook a measurable slice of its start-up).
"""
import time

from intent_loop.errors import ErrorCode, IntentLoopError

_DIGITS = "0123456789"
EPOCH_MIN = -62_135_596_800  # 0001-01-01T00:00:00Z
EPOCH_MAX = 253_402_300_799  # 9999-12-31T23:59:59Z: RFC 3339 years have four digits


def format_utc(epoch_seconds):
    """RFC 3339 UTC with milliseconds and `Z`, e.g. 2026-11-30T07:02:50.123Z (truncated)."""
    if not EPOCH_MIN <= epoch_seconds < EPOCH_MAX + 1:  # also false for NaN
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"timestamp out of range: {epoch_seconds!r}")
    seconds = int(epoch_seconds // 1)
    # the fraction (exact: a float minus its floor) to whole microseconds first, then truncated:
    # 1.001 is 1.000999... as a float and must not lose its millisecond
    micros = round((epoch_seconds - seconds) * 1_000_000)
    seconds, millis = seconds + micros // 1_000_000, micros % 1_000_000 // 1000
    t = time.gmtime(seconds)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{millis:03d}Z")


def format_compact_utc(epoch_seconds):
    """Whole seconds as 20261130T070250Z: for file names (quarantine, backups), which sort by it."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(int(epoch_seconds // 1)))


def rfc3339_error(text):
    """None for an RFC 3339 date-time Guard accepts, else why not.

    Uppercase `T` and `Z` only (RFC 3339 section 5.6 lets a specification require them), seconds
    required, a real calendar date, no leap second 60, offset `Z` or `+hh:mm`/`-hh:mm`.
    """
    if not isinstance(text, str):
        return f"must be an RFC 3339 date-time string, not {_json_type_name(text)}"
    year, month, day = _digits(text, 0, 4), _digits(text, 5, 2), _digits(text, 8, 2)
    hour, minute, second = _digits(text, 11, 2), _digits(text, 14, 2), _digits(text, 17, 2)
    separators = (text[4:5], text[7:8], text[10:11], text[13:14], text[16:17])
    if None in (year, month, day, hour, minute, second) or separators != ("-", "-", "T", ":", ":"):
        return "must look like 2026-11-30T07:02:50.123Z (uppercase T and Z, seconds required)"
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        return f"{text[:10]} is not a real calendar date"
    if hour > 23 or minute > 59 or second > 59:
        return f"{text[11:19]} is not a valid time (leap second 60 is rejected)"
    return _offset_error(text, 19)


def parse_epoch(text):
    """Epoch seconds (float) of a timestamp `rfc3339_error` accepts; None for anything else."""
    if rfc3339_error(text) is not None:
        return None
    fraction, offset = _split_tail(text)
    days = _days_from_civil(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    seconds = days * 86400 + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
    if offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        seconds -= sign * (int(offset[1:3]) * 3600 + int(offset[4:6]) * 60)
    return seconds + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


def utc_sort_key(text):
    """A key that sorts like the instant, for a `Z` timestamp with at most nine fraction digits;
    None when it is not one (export files compare timestamps as text this way)."""
    if not isinstance(text, str) or not 20 <= len(text) <= 40 or not text.endswith("Z"):
        return None
    whole, _, fraction = text[:-1].partition(".")
    if len(fraction) > 9 or rfc3339_error(text) is not None:
        return None
    return whole + "." + fraction.ljust(9, "0")


def _json_type_name(value):
    names = {dict: "object", list: "array", bool: "boolean", type(None): "null", int: "number", float: "number"}
    return names.get(type(value), type(value).__name__)


def _digits(text, start, count):
    """The integer in text[start:start+count], or None unless it is exactly ASCII digits."""
    part = text[start:start + count]
    if len(part) != count or any(char not in _DIGITS for char in part):
        return None
    return int(part)


def _days_in_month(year, month):
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year, month, day):
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _split_tail(text):
    """(fraction digits, offset) of a timestamp already known to be valid."""
    position, fraction = 19, ""
    if text[19:20] == ".":
        end = 20
        while text[end] in _DIGITS:
            end += 1
        fraction, position = text[20:end], end
    return fraction, text[position:]


def _offset_error(text, position):
    """Checks the optional `.fraction` and the mandatory offset that start at `position`."""
    if text[position:position + 1] == ".":
        end = position + 1
        while end < len(text) and text[end] in _DIGITS:
            end += 1
        if end == position + 1:
            return "a '.' must be followed by fraction digits"
        position = end
    offset = text[position:]
    if offset == "Z":
        return None
    hours, minutes = _digits(offset, 1, 2), _digits(offset, 4, 2)
    if len(offset) != 6 or offset[0] not in "+-" or offset[3] != ":" or None in (hours, minutes):
        return "must end with 'Z' or an offset like '+02:00'"
    if hours > 23 or minutes > 59:
        return f"offset {offset} is out of range"
    return None


def duration_words(seconds):
    """"3 weeks", "2 days", "5 hours", "4 minutes", "a moment": a span of time as a person says it
    (the task ages a session is told, doctor's hook runs)."""
    seconds = max(0, seconds)
    for unit, size in (("year", 365 * 86400), ("month", 30 * 86400), ("week", 7 * 86400), ("day", 86400),
                       ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return "a moment"
