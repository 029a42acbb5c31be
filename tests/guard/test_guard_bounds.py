"""Review findings 5 and 10, in-process: the temp cleanup looks at a bounded number of names, and
the kept-bytes store holds at most KEPT_FILES_CAP files and KEPT_TOTAL_CAP bytes (the newest)."""
import os
import types

from intent_loop.guard import guard_dir, takeover


def test_clean_temps_looks_at_a_bounded_number_of_names(tmp_path):
    for _ in range(1000):
        (tmp_path / f"contract.json.{os.urandom(16).hex()}.tmp").write_bytes(b"")
    (tmp_path / "contract.json").write_bytes(b"{}")
    scanned = []
    real = guard_dir.is_temp_name_for
    guard_dir.is_temp_name_for = lambda entry, name: scanned.append(entry) or real(entry, name)
    try:
        directory = guard_dir.GuardDir(os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY), "contract.json")
        with directory:
            removed = directory.clean_temps(limit=256)
    finally:
        guard_dir.is_temp_name_for = real
    assert len(scanned) == 256 and 0 < removed <= 256
    assert len(os.listdir(tmp_path)) == 1001 - removed
    assert (tmp_path / "contract.json").read_bytes() == b"{}"


def test_the_kept_bytes_store_keeps_the_newest_within_its_cap(tmp_path):
    paths = types.SimpleNamespace(dir=str(tmp_path))
    names = []
    for index in range(takeover.KEPT_FILES_CAP + 8):
        name = takeover.keep_replaced(paths, f"takeover {index}".encode() * 10)
        os.utime(os.path.join(tmp_path, name), ns=(index * 10**9, index * 10**9))
        names.append(name)
    takeover.prune_kept(paths)
    left = sorted(os.listdir(tmp_path / takeover.KEPT_DIR))
    assert left == sorted(os.path.basename(n) for n in names[-takeover.KEPT_FILES_CAP:])
    big = []
    for index in range(20):  # as provider.apply_file does: keep, then hold the store to its caps
        big.append(takeover.keep_replaced(paths, bytes([index]) * takeover.KEEP_CAP))
        takeover.prune_kept(paths, keep=big[-1])
    total = sum(os.path.getsize(os.path.join(tmp_path, n)) for n in
                (f"{takeover.KEPT_DIR}/{e}" for e in os.listdir(tmp_path / takeover.KEPT_DIR)))
    assert total <= takeover.KEPT_TOTAL_CAP
    assert os.path.exists(os.path.join(tmp_path, big[-1]))  # the newest is always kept
