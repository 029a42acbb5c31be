"""The golden answers of the replay corpus (tests/fixtures/replay/): what differs on every run is
replaced by stable placeholders before comparing or writing them."""
import re

_SHORT_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}(?![0-9a-f])")
_HASH = re.compile(r"[0-9a-f]{64}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalize(value):
    """Replace ids, hashes and uuids (which differ on every run) by stable placeholders."""
    if isinstance(value, str):
        return _SHORT_ID.sub("<id>", _UUID.sub("<uuid>", _HASH.sub("<sha256>", value)))
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    return value
