"""Finding a cache shard's current file (format 3: the root's `recent` or its page names the shard),
for tests that hand-edit the cache the way a tamperer would."""
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
