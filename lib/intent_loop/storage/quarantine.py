"""Names of the files in a project's `quarantine/`: what each kind is called and how to tell them apart.

Quarantine keeps what was cut out of a ledger (a torn tail's digest, a recovered suffix with its
manifest, a migration's manifest). Every writer names its file here and every reader (deletion's
scan, doctor) recognizes it here, so a name cannot drift between them. Names start with a
sortable UTC stamp and a random part, so two in one second never collide.
"""
from intent_loop.base import fast_os
from intent_loop.base.timestamps import format_compact_utc

TORN_TAIL = "-torn-tail.json"
RECOVERED_SUFFIX = "-suffix.jsonl"
RECOVERED_MANIFEST = "-suffix.manifest.json"
MIGRATION_MANIFEST = "-migration.json"
_TWINS = {RECOVERED_SUFFIX: RECOVERED_MANIFEST, RECOVERED_MANIFEST: RECOVERED_SUFFIX}


def _stem(now, random_bytes):
    return f"{format_compact_utc(now)}-{fast_os.urandom(random_bytes).hex()}"


def torn_tail_name(now):
    return _stem(now, 4) + TORN_TAIL


def recovered_suffix_names(now):
    """(suffix file, manifest file) for one recovery: they belong together."""
    stem = _stem(now, 3)
    return stem + RECOVERED_SUFFIX, stem + RECOVERED_MANIFEST


def migration_manifest_name(now):
    return _stem(now, 4) + MIGRATION_MANIFEST


def is_torn_tail(name):
    return name.endswith(TORN_TAIL)


def twin_of(name):
    """The file that must go with `name` (a recovered suffix and its manifest), or None."""
    for ending, other in _TWINS.items():
        if name.endswith(ending):
            return name[: -len(ending)] + other
    return None
