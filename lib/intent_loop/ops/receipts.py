"""What happened to each `intent:` line, as data, and the one place that words it.

Applying commands (ops/apply_commands.py) returns Entry values; every rendering reads them: the
user's receipt line (systemMessage), the model's receipt, a local answer, the change note the
model gets after prompts answered without it, and the CLI's `claim add`. The change note keys on
`outcome`, never on words, so a new outcome cannot silently drop out of it (tests/ops/test_receipts.py
runs every outcome through every rendering).
"""
# outcome -> (words, whether it changed the recorded intent: it then joins the change note)
OUTCOMES = {
    "recorded": "recorded {verb} [{0}]{strength}",
    "acknowledged": "{verb} acknowledged, not recorded (private session)",
    "joined": "joined the current task {0}{label} ({ages}); `intent: new` starts a fresh one",
    "goals": "the objective now holds {count} goals; `intent: replace {0} <text>` changes the first one",
    "started": "started task {0}",
    "continues": "this session continues task {0}{now}",
    "dropped": "dropped [{0}]",
    "replaced": "replaced [{0}] with [{1}]",
    "approved": ("approved [{0}] as `allow: {rule}` [{1}] for the rest of this task, from the Guard contract "
                 "version this prompt publishes; undo: `intent: ask {rule}`"),
    "confirmed": "confirmed {pairs} in task {task}",
    "dismissed": "dismissed {what} [{0}]",
    "private": "private: nothing from this session is recorded until `intent: on`",
    "off": "off: intent-loop records and shows nothing for this task until `intent: on`",
    "on": "on: recording again",
    "replayed": "these commands were already recorded (same prompt); nothing new was written",
    "rejected": "rejected ({code}): {reason}",
}
# What the model hears of a change made in a prompt answered without it: the outcome and ids only
# (the seen record that carries them between prompts is a deletable cache file: no words from it).
CHANGES = {
    "recorded": "recorded {verb} [{0}]", "acknowledged": "{verb} acknowledged, not recorded (private session)",
    "joined": "joined the current task {0}", "started": "started task {0}",
    "continues": "this session continues task {0}",
    "dropped": "dropped [{0}]", "replaced": "replaced [{0}] with [{1}]", "approved": "approved [{0}] as [{1}]",
    "confirmed": "confirmed [{0}] as [{1}]", "dismissed": "dismissed [{0}]", "private": OUTCOMES["private"],
    "off": OUTCOMES["off"], "on": OUTCOMES["on"],
}
_HEX = frozenset("0123456789abcdef-")


class Entry:
    """One outcome of one line: `line` (0 for the prompt as a whole), the verb, the outcome, the
    short ids it names, the error code and what to type (rejections), and `extra` words for the
    receipt only (a rule, a label, ages), never carried into the change note."""

    __slots__ = ("line", "verb", "outcome", "ids", "code", "reason", "extra")

    def __init__(self, line, verb, outcome, ids=(), *, code=None, reason=None, **extra):
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown receipt outcome {outcome!r}")
        self.line, self.verb, self.outcome = line, verb, outcome
        self.ids = tuple(i[:8] for i in ids)
        self.code, self.reason, self.extra = code, reason, extra

    def __repr__(self):
        return f"Entry({self.line}, {self.verb!r}, {self.outcome!r}, {self.ids!r}, code={self.code!r})"

    @property
    def is_change(self):
        return self.outcome in CHANGES

    def text(self):
        """The words of this entry for the user (and the model's receipt)."""
        return OUTCOMES[self.outcome].format(*self.ids, verb=self.verb, code=self.code, reason=self.reason,
                                             **_defaults(self))

    def change(self):
        """This entry as a change-note record (plain data for the seen record)."""
        return {"outcome": self.outcome, "verb": self.verb, "ids": list(self.ids)}


def _defaults(entry):
    extra = {"label": "", "ages": "", "count": "", "now": "", "rule": "", "task": "", "what": "proposal",
             "strength": ""}
    extra.update(entry.extra)
    if entry.outcome == "confirmed" and "pairs" not in entry.extra:
        pairs = [f"[{entry.ids[i]}] as your claim [{entry.ids[i + 1]}]" for i in range(0, len(entry.ids) - 1, 2)]
        extra["pairs"] = ", ".join(pairs)
    return extra


def change_text(record):
    """The words of one change-note record, or None when it is not one this module makes (a
    hand-edited cache cannot put words into the model's context)."""
    if not isinstance(record, dict) or record.get("outcome") not in CHANGES:
        return None
    ids, verb = record.get("ids"), record.get("verb")
    if not isinstance(ids, list) or not all(isinstance(i, str) and len(i) == 8 and _HEX.issuperset(i) for i in ids):
        return None
    from intent_loop.intent.claim_verbs import CLAIM_VERBS, MANAGE_VERBS

    if verb not in CLAIM_VERBS + MANAGE_VERBS:
        return None
    template = CHANGES[record["outcome"]]
    needed = template.count("{") - template.count("{verb}")
    if len(ids) < needed:
        return None
    return template.format(*ids, verb=verb)


def model_receipt(entries):
    """The model's copy: `intent-loop receipt:` and one `- line N: ...` per entry, in typed order."""
    lines = []
    for entry in sorted(entries, key=lambda e: e.line):
        head = f"line {entry.line}: " if entry.line else ""
        lines.append(f"- {head}{entry.text()}")
    return "intent-loop receipt:\n" + "\n".join(lines) if lines else None


# The rule verbs whose refusal must not pass unnoticed (issue 34): the model says so first.
_RULE_LINE_VERBS = ("forbid", "must-not", "must", "ask", "allow")


def refused_rule_note(entries):
    """The model's instruction when a rule line of a prompt that goes on to it was refused, or None:
    in `codex exec`, which prints no receipt, the model's reply is the user's only channel."""
    refused = [e for e in sorted(entries, key=lambda e: e.line)
               if e.outcome == "rejected" and e.verb in _RULE_LINE_VERBS]
    if not refused:
        return None
    lines = "; ".join(f"line {e.line} (`{e.verb}`): {e.code}, {e.reason}" for e in refused)
    return (f"intent-loop: the user's rule was NOT recorded ({lines}). Start your reply by telling the user, in "
            "your first sentence, that this rule was NOT recorded and why, so they can type it again.")


def user_items(entries):
    """The user's receipt items, in typed order: `recorded goal [id]`, `line 3 rejected (CODE): ...`."""
    items = []
    for entry in sorted(entries, key=lambda e: e.line):
        items.append(f"line {entry.line} {entry.text()}" if entry.outcome == "rejected" else entry.text())
    return items


def guard_text(publication):
    """The Guard line: published vN, not updated and why, withdrawn and why; None when nothing
    changed (`unchanged`, or no file and nothing to publish)."""
    if not publication:
        return None
    action = publication.get("action")
    if action == "unchanged":
        return None
    if action == "published":
        return f"Guard contract v{publication.get('version')}"
    if action == "restored":
        return restored_text(publication.get("restored"), publication.get("version"), publication.get("moved"))
    if action == "rewritten":  # the same version, its file written again (after `intent: on`, a repair)
        why = f" ({publication['repaired']})" if publication.get("repaired") else ""
        return f"Guard contract v{publication.get('version')} rewritten{why}"
    reason = publication.get("reason") or action
    if action == "removed":
        return f"Guard contract withdrawn: {reason}"
    code = publication.get("code")
    # A task without a goal is said in words: the code (PROJECTION_INCOMPLETE, in --json and the
    # docs) names the contract's inner part, not something a user typed
    shown = f" ({code})" if code and code != "PROJECTION_INCOMPLETE" else ""
    return f"Guard not updated{shown}: {reason}"


def guard_status(publication, enforcement=None):
    """The line `intent: show` and `intent-loop status` end with: what Guard reads now, from the
    decision a refresh would take (provider.plan_refresh, nothing written), and whether Guard
    enforces it (`enforcement`: a verdict of guard/enforcement.py, with `age` in seconds when it is
    the hooks' record read back; None: nobody saw Guard yet)."""
    action, version = publication.get("action"), publication.get("version")
    if action == "unchanged":
        from intent_loop.ops.enforcement_words import enforcement_seen

        return f"Guard reads contract v{version} of task {publication['task_id'][:8]}: " + \
            enforcement_seen(enforcement)
    if action == "restored":
        return f"Guard file changed outside intent-loop ({TAKEOVERS.get(publication.get('restored'), 'changed')}): " \
               f"the next prompt or Stop restores v{version}; `intent-loop contract publish` restores it now"
    if action in ("published", "rewritten"):
        why = publication.get("repaired") or "its file is missing or older than the recorded contract"
        return f"Guard file behind ({why}): the next prompt or Stop writes v{version}; " \
               "`intent-loop contract publish` writes it now"
    if action == "removed":
        return f"Guard still reads a contract this project no longer stands behind ({publication.get('reason')}): " \
               "the next prompt or Stop withdraws it"
    if action == "absent":
        return f"Guard enforces nothing: {publication.get('reason') or 'no contract'}"
    return guard_text(publication)


DAMAGES = ("emptied", "a BOM in front", "garbage after the document", "truncated")  # guard/file_state.py
# What a takeover of the Guard path found (guard/file_state.takeover_kind), in words.
TAKEOVERS = {"missing": "it was deleted", "emptied": "it was emptied",
             "same_version": "it held other rules under our version number",
             "other_version": "it held another version of our contract", "other_ref": "it held another contract",
             "lite": "it held a TaskContractLite", "other": "it held something else",
             "link": "a folder on its way was replaced by a link",
             "directory": "a directory stood at its name", "not_directory": "a file stood where its folder is"}


_RESTORED_HEAD = "the Guard file was changed outside intent-loop"


def restored_text(found, version, moved=None):
    """The words for a restored Guard file (issue 33): they say what happened without accusing
    anyone, where what stood in the way was moved (`moved`, relative to the project), and the
    supported ways to change the rules."""
    what = TAKEOVERS.get(found, "it was changed")
    aside = f"What stood there was moved, as it was, to {moved}." if isinstance(moved, str) and moved else \
        "The replaced file is kept in intent-loop's data folder (`intent-loop log` names it)."
    return (f"{_RESTORED_HEAD} (by the agent or by hand; {what}); restored v{version}. {aside} Change rules "
            "with `intent:` lines (`intent: forbid ...`, `intent: allow ...`); `intent: off` leaves the Guard file "
            "to you")


def restored_history(payload, task):
    """`intent-loop history`'s words for a `contract_restored` event."""
    kept = f"; the replaced bytes are kept at <data root>/projects/<project>/{payload['kept']}" \
        if payload.get("kept") else ""
    if isinstance(payload.get("moved_aside"), str):
        kept += f"; what stood there was moved to {payload['moved_aside']}"
    return (f"the Guard file was changed outside intent-loop ({TAKEOVERS.get(payload.get('found'), 'changed')}); "
            f"restored v{payload.get('contract_version')} (task {task}){kept}")


def restoration_note(news_text, publication=None):
    """The model's copy of a restoration the user is told of (pending news, or this prompt's own
    Guard line), or None when neither is one."""
    if publication and publication.get("action") == "restored":
        return "intent-loop: " + guard_text(publication)
    if isinstance(news_text, str) and news_text.startswith(_RESTORED_HEAD):
        return "intent-loop: " + news_text
    return None


def add_restoration_note(answer, news_text, publication=None):
    """Put restoration_note first in a hook answer's context: the model hears of a restored Guard
    file as the user does, once."""
    note = restoration_note(news_text, publication)
    if note is not None:
        answer["context"] = "\n\n".join(part for part in (note, answer.get("context")) if part)


def guard_news(result):
    """What a refresh after the answer (Stop, a repair) found that the user must still hear, as
    plain data for the session's seen record (no words: the record is a deletable cache), or None."""
    if not isinstance(result, dict):
        return None
    if result.get("action") == "restored" and result.get("restored") in TAKEOVERS:
        news = {"restored": result["restored"], "version": result.get("version")}
        return dict(news, moved=result["moved"]) if isinstance(result.get("moved"), str) else news
    repaired = result.get("repaired") or ""
    shape = next((d for d in DAMAGES if repaired.endswith(d)), None)
    if shape is not None and result.get("action") in ("rewritten", "published"):
        return {"repaired": shape, "version": result.get("version")}
    if result.get("code") and result.get("action") not in ("published", "rewritten", "unchanged", "removed"):
        return {"code": result["code"], "action": result.get("action")}
    return None


def guard_news_text(news):
    """The words for a seen record's Guard news, or None when it is not one guard_news makes."""
    from intent_loop.errors import ErrorCode

    if not isinstance(news, dict):
        return None
    if news.get("restored") in TAKEOVERS and type(news.get("version")) is int:
        return restored_text(news["restored"], news["version"], news.get("moved"))
    if news.get("repaired") in DAMAGES and type(news.get("version")) is int:
        return f"repaired the Guard file (it was {news['repaired']}); Guard contract v{news['version']}"
    code = news.get("code")
    if isinstance(code, str) and code.isupper() and getattr(ErrorCode, code, None) == code:
        return f"Guard not updated ({code}) at the end of the last turn; `intent-loop status` says why"
    return None


class Receipt:
    """What happened to each command line, for the user (systemMessage) and the model (context)."""

    __slots__ = ("entries", "task_id", "notice", "show_view", "help", "events", "replayed", "publication",
                 "state")

    def __init__(self):
        self.entries = []  # ops.receipts.Entry, one or more per line, rejections included
        self.task_id = None
        self.notice = None
        self.show_view = False
        self.help = False
        self.events = []
        self.replayed = False
        self.publication = None
        self.state = None  # the verified state right after the mutation, when one was written

    def add(self, command, outcome, ids=(), **extra):
        self.entries.append(Entry(command.line, command.verb, outcome, ids, **extra))

    def reject(self, line, verb, code, reason):
        self.entries.append(Entry(line, verb, "rejected", code=code, reason=reason))

    @property
    def rejected(self):
        return [e for e in self.entries if e.outcome == "rejected"]

    @property
    def changes(self):
        return [e for e in self.entries if e.is_change]
