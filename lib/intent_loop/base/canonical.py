"""Canonical JSON (the bytes that get hashed) and a fast parser, without importing `json`.

Canonical form: object keys sorted by code point, recursively; arrays in order; separators
`,` and `:`; strings escape only `"`, `\\`, `\\b \\f \\n \\r \\t` and other control characters
(as lowercase `\\u00xx`); everything else is raw UTF-8; no NaN/Infinity. It is byte for byte
`json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`,
built here from CPython's C accelerators directly because `import json` pulls in `re` and
costs about one whole interpreter start (docs: startup-performance.md).
"""
from intent_loop.errors import ErrorCode, IntentLoopError

try:  # the C accelerators behind the json package; ~1 ms instead of ~10 ms
    from _json import encode_basestring as _encode_str
    from _json import make_encoder as _make_encoder
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - an interpreter without _json
    _make_encoder = _make_scanner = None

try:
    from _sha256 import sha256 as _sha256  # 3.11
except ImportError:  # pragma: no cover - 3.12+ renamed the builtin module
    try:
        from _sha2 import sha256 as _sha256
    except ImportError:
        from hashlib import sha256 as _sha256


def _reject_non_json(value):
    as_json = getattr(value, "__json__", None)  # a cache-backed mapping (lazy_map.LazyMap)
    if as_json is not None:
        return as_json()
    raise IntentLoopError(ErrorCode.INVALID_EVENT, f"not representable in JSON: {type(value).__name__}")


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


class _ScanContext:
    """The attribute bag _json.make_scanner reads; mirrors json.JSONDecoder's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject_constant)
    memo = {}


if _make_encoder is not None:
    _encode = _make_encoder(None, _reject_non_json, _encode_str, None, ":", ",", True, False, False)
    _scan = _make_scanner(_ScanContext())
else:  # pragma: no cover
    import json as _json_module

    def _encode(value, _level):
        return [_json_module.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)]

    _scan = None

_WHITESPACE = " \t\n\r"


def dumps(value):
    """The canonical JSON text of `value` (str). Floats NaN/Infinity are rejected."""
    try:
        return "".join(_encode(value, 0))
    except ValueError as exc:  # allow_nan=False raises ValueError
        raise IntentLoopError(ErrorCode.INVALID_EVENT, f"not canonical JSON: {exc}") from exc


def canonical_bytes(value):
    """UTF-8 bytes of the canonical JSON; strings with lone surrogates are INVALID_TEXT."""
    try:
        return dumps(value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise IntentLoopError(ErrorCode.INVALID_TEXT, "text contains a lone surrogate; send valid Unicode") from exc


def sha256_hex(data):
    return _sha256(data).hexdigest()


def loads(text):
    """Parse one JSON document (str or UTF-8 bytes); raises ValueError on anything invalid."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if _scan is None:  # pragma: no cover
        import json as _json_module

        return _json_module.loads(text)
    start = 0
    end = len(text)
    while start < end and text[start] in _WHITESPACE:
        start += 1
    while end > start and text[end - 1] in _WHITESPACE:
        end -= 1
    try:
        value, stop = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"invalid JSON at offset {exc.value}") from None
    except SystemError:  # _json raises JSONDecodeError through json.decoder, which we never import:
        raise ValueError("invalid JSON (an unterminated string or a bad escape)") from None
    if stop != end:
        raise ValueError(f"extra data at offset {stop}")
    return value
