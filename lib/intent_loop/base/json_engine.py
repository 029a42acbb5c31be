"""The JSON engine of the bulk paths: orjson where the interpreter in use can import it, else the
standard library behind the same names.

orjson has no abi3 wheels (each wheel fits one CPython minor and one platform), and the plugin
that runs from the committed source tree has no site-packages at all. So nothing depends on it:
the shiv binaries bundle it for the interpreter they were built with, and everywhere else
`Stdlib` answers with `canonical`, whose bytes are the reference anyway. The bulk verifier only
ever *accepts* a line when the engine re-serialises it byte for byte to what the stdlib writes;
with `Stdlib` that is the stdlib itself, so the verdicts are the same and only the speed differs
(docs/performance.md quotes `verify` both ways; tests/storage/test_bulk_verify.py runs under both).
"""
from intent_loop.base import canonical
from intent_loop.errors import IntentLoopError


class Stdlib:
    """orjson's names used by the bulk paths, answered by the standard library's C accelerators."""

    OPT_SORT_KEYS = 1  # canonical output is always sorted; the flag is accepted and ignored

    class JSONDecodeError(ValueError):
        pass

    class JSONEncodeError(TypeError):
        pass

    @staticmethod
    def loads(data):
        try:
            return canonical.loads(data)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise Stdlib.JSONDecodeError(str(exc)) from None

    @staticmethod
    def dumps(value, option=None):
        try:
            return canonical.canonical_bytes(value)
        except (IntentLoopError, ValueError, RecursionError) as exc:  # NaN, a lone surrogate, depth
            raise Stdlib.JSONEncodeError(str(exc)) from None


try:
    import orjson as engine
except ImportError:
    engine = Stdlib
NAME = "stdlib" if engine is Stdlib else "orjson"
