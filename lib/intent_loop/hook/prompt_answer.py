"""What the user sees for a prompt's `intent:` lines: the receipt line under the prompt, and the
local answer for a prompt made only of management verbs and rejected lines (docs/hooks.md)."""

PREFIX = "intent-loop: "
WIDTH = 160  # issue 15: at most two lines of about 160 characters, the rest as `+N more`
MAX_ROWS = 2
LOCAL_HEADER = "intent-loop answered this prompt here; nothing was sent to the model."
_SEPARATOR = "; "


def is_local_only(prompt, commands):
    """Every non-blank line is an `intent:` line, and each is a management verb or was rejected
    (one accepted claim verb or one prose line sends the prompt to the model)."""
    lines = prompt.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    non_blank = sum(1 for line in lines if line.strip())
    # a line that only looks like a command (a list item, backticks) counts as prose: it goes on
    return bool(commands) and non_blank == len(commands) and all(c.kind not in ("claim", "near") for c in commands)


def receipt_items(receipt, *, notice=None, enforcement=None):
    """The Guard contract's news first, then the continuity notice (the current task moved), then
    one short text per command line in the order typed. The first two are PINNED: receipt_line
    never cuts them (they say what Guard enforces). `enforcement`: this session's verdict on Guard
    (guard/enforcement.py), whose short form follows a published contract's version."""
    from intent_loop.ops import receipts  # not on the SessionStart path, which imports this module for PREFIX

    guard = receipts.guard_text(receipt.publication)
    if guard and enforcement and (receipt.publication or {}).get("action") in ("published", "restored", "rewritten"):
        from intent_loop.ops.enforcement_words import enforcement_short

        guard = f"{guard}, {enforcement_short(enforcement)}"
    pinned = [item for item in (guard, notice) if item]
    return [Pinned(item) for item in pinned] + receipts.user_items(receipt.entries)


class Pinned(str):
    """A receipt item the line cap never cuts or clips: what Guard enforces, and that it moved."""

    __slots__ = ()


def change_items(receipt):
    """What a locally answered prompt changed, as plain records for the seen record (rejections and
    reads changed nothing); the next model prompt's change note words them (receipts.change_text)."""
    return [entry.change() for entry in receipt.changes]


def change_texts(records):
    """The words of the seen record's change records, dropping any this build did not make."""
    from intent_loop.ops import receipts

    texts = (receipts.change_text(record) for record in records)
    return [text for text in texts if text is not None]


def receipt_line(items):
    """The systemMessage: the items packed into at most two lines of about 160 characters, the rest
    as `+N more: intent: show`. Pinned items come first and are never cut or clipped."""
    if not items:
        return None
    pinned = [item for item in items if isinstance(item, Pinned)]
    rest = [_clipped(item, WIDTH - len(PREFIX)) for item in items if not isinstance(item, Pinned)]
    rows = _rows(pinned) if pinned else [[]]
    for index, item in enumerate(rest):
        left = len(rest) - index - 1
        if not _fits(rows, item, left) and len(rows) < MAX_ROWS and rows[-1]:
            rows.append([])  # the next line (the last one may also need room for the count)
        if _fits(rows, item, left) or not (rows[-1] or len(rows) >= MAX_ROWS and left):
            rows[-1].append(item)
            continue
        tail = [f"+{left} more: intent: show"] if left else []  # the last item needs no count after it
        room = WIDTH - (len(PREFIX) if len(rows) == 1 else 0) - len(_SEPARATOR.join(rows[-1] + [""] + tail))
        if room >= MIN_CLIPPED:  # the last line: as much of it as fits (its line number and code first)
            rows[-1] += [_clipped(item, room), *tail]
        else:
            rows[-1].append(f"+{left + 1} more: intent: show")
        break
    return "\n".join((PREFIX if index == 0 else "") + _SEPARATOR.join(row) for index, row in enumerate(rows))


MIN_CLIPPED = 40  # shorter than this, a clipped item says too little to be worth its room


def _fits(rows, item, left):
    """Whether `item` fits on the current line, with the `+N more` count after it on the last line."""
    tail = [f"+{left} more: intent: show"] if len(rows) >= MAX_ROWS and left else []
    return (len(PREFIX) if len(rows) == 1 else 0) + len(_SEPARATOR.join(rows[-1] + [item] + tail)) <= WIDTH


def _rows(items):
    rows, row, used = [], [], len(PREFIX)
    for item in items:
        cost = len(item) + (len(_SEPARATOR) if row else 0)
        if row and used + cost > WIDTH:
            rows.append(row)
            row, used, cost = [], 0, len(item)
        row.append(item)
        used += cost
    rows.append(row)
    return rows


SHOWN_PROPOSALS = 2  # named one by one; the rest are a count (issue 13: at most two lines)


def proposal_items(proposals, *, session_task=None):
    """The agent's new proposals for the user's receipt line, whole (verb, text, scope: never
    clipped, so what the user confirms is what they read): never the user's words until confirmed."""
    from intent_loop.intent.views import proposal_text

    items = [Pinned(proposal_text(c, session_task=session_task)) for c in proposals[:SHOWN_PROPOSALS]]
    if len(proposals) > SHOWN_PROPOSALS:
        items.append(f"+{len(proposals) - SHOWN_PROPOSALS} more agent proposals: `intent-loop candidate list`")
    return items


def _clipped(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"


_NEXT_STEP = {
    "DEADLINE_EXCEEDED": "type them again in your next prompt",
    "LOCK_TIMEOUT": "another intent-loop process held the project; type them again in your next prompt",
    "WRITE_FAILED": "free disk space or fix permissions, then type them again",
}


def failure_code(exc):
    from intent_loop.errors import ErrorCode, IntentLoopError
    from intent_loop.hook.runtime import HookDeadline  # loaded already: it runs every hook

    if isinstance(exc, IntentLoopError):
        return exc.code
    if isinstance(exc, HookDeadline):
        return ErrorCode.DEADLINE_EXCEEDED
    return ErrorCode.INTERNAL_ERROR


def failure_line(exc, *, count):
    """What the user (and the model) are told when a prompt's `intent:` lines could not be
    recorded: how many, the code (docs/errors.md; the message may name a pid or a path, so it stays
    in the log) and what to do. Never a bare continue:true: a command typed is never dropped unsaid."""
    code = failure_code(exc)
    what = _NEXT_STEP.get(code, "type them again; if it repeats, run `intent-loop doctor`")
    noun = "command" if count == 1 else "commands"
    return f"{PREFIX}{count} {noun} NOT recorded ({code}): {what}; the prompt went to the model as typed"


def failure_answer(exc, *, count):
    line = failure_line(exc, count=count)
    return {"system_message": line, "context": line}


def recorded_answer(exc):
    """The commands were recorded but composing the answer failed: say so, and how to see them."""
    line = (f"{PREFIX}the `intent:` lines were recorded, but the receipt could not be shown ({failure_code(exc)}); "
            "`intent: show` shows them")
    return {"system_message": line, "context": line}


def unconfirmed_answer(exc, *, count):
    """What the user and the model are told when a prompt's `intent:` lines reached the ledger but
    the call did not finish (its sync failed or outlasted the hook's time, or a later step
    failed): they are recorded for every reader, so typing them again would record them twice."""
    noun = "command" if count == 1 else "commands"
    line = (f"{PREFIX}{count} {noun} written to the ledger but not confirmed ({failure_code(exc)}): do not type "
            "them again; `intent: show` shows what was recorded")
    return {"system_message": line, "context": line}


def show_text(state, paths, session_hash, *, guard=None):
    """What `intent: show` answers locally: the compact view `intent-loop show` prints, of the
    session's task or of the current task it follows, ending with the Guard line (`guard`)."""
    text = _shown(state, paths, session_hash)
    return text if guard is None else f"{text}\n{guard}"


def _shown(state, paths, session_hash):
    from intent_loop.intent.continuity import Place, not_followed_notice
    from intent_loop.intent.views import compact_view  # only `intent: show` needs it

    place = Place(state, paths, session_hash)
    if place.kind == "older" and place.current_standing == "on" and not place.own_control:
        # one truth (issue 35 item 4): the current task, which Guard reads and the model is given;
        # the session's own older task is named with the way back to it
        older = place.linked[:8]
        return (compact_view(state, place.current) + f"\nthis session's earlier task {older} is not the current "
                f"one; `intent: resume {older}` makes it current again")
    task_id = place.task_id
    task = state["tasks"].get(task_id)
    if place.own_control or (task is not None and task["mode"] == "private"):
        return "this session is private: nothing is recorded or shown; `intent: on` ends private mode"
    if task is None and place.kind == "unlinked":
        return not_followed_notice(state, paths, place).removeprefix(PREFIX)
    if task is None:
        return "this session has no task yet; `intent: goal <text>` starts one"
    if task["mode"] == "off":
        return f"task {task_id[:8]} is off; `intent: on` re-enables it"
    return compact_view(state, task_id)


def local_answer(receipt, *, shown, help_text, extra=(), notice=None, enforcement=None):
    """The `reason` of the block: the receipt, then the view and the verbs when asked for."""
    parts = [LOCAL_HEADER]
    items = receipt_items(receipt, notice=notice, enforcement=enforcement) + list(extra)
    if items:
        parts.append("\n".join("- " + item for item in items))
    if receipt.show_view:
        parts.append(shown)
    if receipt.help:
        parts.append(help_text)
    return "\n\n".join(parts)


def change_note(items):
    """The one line the model gets with the refreshed view after prompts answered locally."""
    if not items:
        return None
    return _clipped("intent-loop: the user changed the recorded intent in prompts answered without you: "
                    + _SEPARATOR.join(items) + ". The view below is current.", 2 * WIDTH)


def not_typed_note(mark):
    """The receipt of a prompt the host wrote (prompt_scan.injected_by) that held `intent:` lines."""
    return (f"this prompt carries {mark}: the host wrote it, not your typing, so its intent: lines "
            "were not recorded; type them yourself to record them")
