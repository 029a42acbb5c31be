"""Finding a cache shard's current file (format 3: the root's `recent` or its page names the shard),
for tests that hand-edit the cache the way a tamperer would."""
import hashlib
import json
import os

from intent_loop.base.canonical import loads
from intent_loop.storage.cache import cache_store, checkpoint


def _framed_doc(path):
    with open(path, "rb") as fh:
        return loads(fh.read()[65:])


def shard_file(project, name):
    """The path of the slot the current root names for shard `name` (in `recent`, or through its page)."""
    root = _framed_doc(os.path.join(project.cache_dir, checkpoint.ROOT_FILE))
    entry = root["recent"].get(name)
    if entry is None:
        page = cache_store.page_of(name)
        entry = _framed_doc(cache_store.shard_path(project, page, root["pages"][page] % 2))["data"][name]
    return cache_store.shard_path(project, name, entry % 2)


def read_doc(path):
    """A framed cache file's document (past its digest line)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return json.loads(data[65:])


def write_doc(path, doc):
    """What a hand edit that recomputes the digest writes."""
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    with open(path, "wb") as fh:
        fh.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def edit_shard(project, name, change):
    """Hand-edit a cache shard (`t-<task>`, `h-<task>` ...) and recompute its digest, as a tamperer
    would: `change(data)` edits the shard's data in place."""
    path = shard_file(project, name)
    doc = read_doc(path)
    change(doc["data"])
    write_doc(path, doc)
