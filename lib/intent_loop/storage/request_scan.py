"""Finding requests in the ledger's bytes without the request index: one request's events by a
chunked byte search (what a mutation falls back on while the index is missing, stale or behind),
and every request's span in whole lines (what the index's catch-up and its rebuild insert).

Loaded only on those paths: a mutation whose index is current reads the ledger only for the
request the index names (storage/request_index.py).
"""
from intent_loop.base.canonical import loads
from intent_loop.storage.ledger import read_range

SCAN_CHUNK = 1 << 20


def requests_in(data, base):
    """(request_id, offset, end, last_hash) of every request in whole lines `data` at `base`."""
    current, start, last_hash, pos = None, 0, None, 0
    while pos < len(data):
        stop = data.find(b"\n", pos)
        if stop < 0:
            stop = len(data)  # a last line without LF (the verified prefix may end so)
        if stop == pos:  # the LF an append wrote for a previous line that lacked it
            pos += 1
            continue
        event = loads(data[pos:stop])
        if event["request_id"] != current:
            if current is not None:
                yield current, base + start, base + pos, last_hash
            current, start = event["request_id"], pos
        last_hash, pos = event["event_hash"], stop + 1
    if current is not None:
        yield current, base + start, base + min(pos, len(data)), last_hash


def request_spans(fd, size):
    """[(request_id, offset, end)] of every request in the verified ledger bytes [0, size), read in
    SCAN_CHUNK pieces (bounded memory at any size)."""
    requests, pos, carry = [], 0, b""
    while pos < size:
        chunk = carry + read_range(fd, pos, min(size, pos + SCAN_CHUNK))
        base = pos - len(carry)
        pos = min(size, pos + SCAN_CHUNK)
        cut = len(chunk) if pos >= size else chunk.rfind(b"\n") + 1
        for request_id, offset, end, _h in requests_in(chunk[:cut], base):
            if requests and requests[-1][0] == request_id and requests[-1][2] == offset:
                requests[-1] = (request_id, requests[-1][1], end)  # a request split across chunks
            else:
                requests.append((request_id, offset, end))
        carry = chunk[cut:]
    return requests


def scan(fd, size, request_id):
    """The events of `request_id` found by searching the ledger's bytes in chunks (no index)."""
    needle = b'"request_id":"' + request_id.encode() + b'"'
    pos, carry = 0, b""
    while pos < size:
        chunk = carry + read_range(fd, pos, min(size, pos + SCAN_CHUNK))
        base = pos - len(carry)
        hit = chunk.find(needle)
        if hit >= 0:
            line_start = base + chunk.rfind(b"\n", 0, hit) + 1
            return _events_from(fd, size, line_start, request_id)
        cut = chunk.rfind(b"\n") + 1  # keep the unfinished line for the next round
        carry = chunk[cut:] if cut else chunk
        pos = min(size, pos + SCAN_CHUNK)
    return []


def _events_from(fd, size, start, request_id):
    events = []
    while start < size:
        line = read_range(fd, start, min(size, start + (1 << 16)))
        stop = line.find(b"\n")
        while stop < 0 and start + len(line) < size:  # a line longer than the window
            line = read_range(fd, start, min(size, start + 2 * len(line)))
            stop = line.find(b"\n")
        line = line[:stop] if stop >= 0 else line
        event = loads(line)
        if event["request_id"] != request_id:
            break
        events.append(event)
        start += len(line) + 1
    return events
