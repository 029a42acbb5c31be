"""The `intent:` verbs: what each records (facet, scope, field prefix), the help text, which verb
made a stored claim, and what to suggest for a mistyped one."""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claims import split_prefix

# verb, facet, scope, stored field prefix (None: the statement is the bare text); the order
_CLAIM_TABLE = (
    ("goal", "outcome", "task", None),
    ("object", "outcome", "task", "object"),
    ("surface", "outcome", "task", "surface"),
    ("include", "hard_constraint", "task", "scope include"),
    ("exclude", "hard_constraint", "task", "scope exclude"),
    ("must", "hard_constraint", "task", "must"),
    ("must-not", "hard_constraint", "task", "must not"),
    ("allow", "soft_constraint", "task", "allow"),
    ("ask", "hard_constraint", "task", "ask"),
    ("forbid", "hard_constraint", "task", "forbid"),
    ("done-when", "success_signal", "task", "done when"),
    ("prefer", "soft_constraint", "task", None),
    ("tradeoff", "tradeoff", "task", None),
    ("always", "soft_constraint", "long_term", None),
)
CLAIM_VERBS = tuple(row[0] for row in _CLAIM_TABLE)
MANAGE_VERBS = ("show", "help", "new", "resume", "drop", "replace", "approve", "confirm", "dismiss", "private",
                "off", "on")
CLAIM_SPECS = {verb: (facet, scope, prefix) for verb, facet, scope, prefix in _CLAIM_TABLE}
PREFIX_VERBS = {prefix: verb for verb, _facet, _scope, prefix in _CLAIM_TABLE if prefix}
RULE_VERBS = ("allow", "ask", "forbid", "must-not")  # Guard checks the rule grammar on these lists
# How an unprefixed stored claim maps back to a verb, most specific facet first.
_UNPREFIXED_FACET_VERBS = (
    ("outcome", "goal"), ("success_signal", "done-when"), ("tradeoff", "tradeoff"),
    ("soft_constraint", "prefer"), ("hard_constraint", "must"),
)
# People type the stored prefix's spelling; `must not x` must never become the claim `must: not x`.
TWO_WORD_VERBS = {"must": ("not", "must-not"), "done": ("when", "done-when")}
_ECHO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_:")

HELP_TEXT = """\
Write `intent: <verb> ...` alone on a prompt line to record what you ask for:
  goal <text>          the outcome you want
  object <text>        the main thing changed
  surface <text>       where it is delivered
  include <text>       in scope
  exclude <text>       out of scope
  must <text>          a requirement
  must-not <text>      a prohibition (text or rule)
  allow <rule>         allowed without asking
  ask <rule>           needs your approval first
  forbid <rule>        never allowed
  done-when <text> [(sources: test, file)]  how completion is shown;
      sources: file command test api database real_page release user
  prefer <text>        a soft preference
  tradeoff <text>      an accepted tradeoff
  always <text>        a rule for all future tasks
Rules Guard blocks (EFG_MODE=balanced): action:<delete|network|write|...>, tool:<name>,
  command-prefix:<cmd> (literal); prose only reminds.
  show                 this task's claims and ids
  help                 this list
  new [label]          start a fresh task
  resume [id]          the current task, or <id>
  drop <id>            drop a claim/proposal
  replace <id> <text>  supersede a claim
  approve <id>         grant an ask: rule for the task
  confirm <id>...      make agent proposals yours
  dismiss <id>...      refuse proposals
  private              this session records nothing
  off / on             stop / restart recording this task
One line per claim, at most 500 characters; secrets are redacted."""


def verb_for_claim(statement, facets, scope):
    """The claim verb whose build_claim produces a claim like this one (its prefix decides first)."""
    prefix, _value = split_prefix(statement)
    if prefix is not None:
        return PREFIX_VERBS[prefix]
    if scope == "long_term":
        return "always"
    for facet, verb in _UNPREFIXED_FACET_VERBS:
        if facet in facets:
            return verb
    reason = f"no intent: verb records a claim with facets {', '.join(facets) or '(none)'}; drop it and add a new claim"
    raise IntentLoopError(ErrorCode.INVALID_CLAIM, reason)


def unknown_verb_reason(typed, *, claim_only=False):
    """What to type instead; the typed word is echoed only when it cannot be a secret."""
    shown = f"`{typed}`" if 0 < len(typed) <= 20 and set(typed.replace(" ", "")) <= _ECHO_CHARS else "that word"
    if claim_only and typed.lower() in MANAGE_VERBS:
        return f"{shown} is not a claim verb; claim verbs: {', '.join(CLAIM_VERBS)}"
    suggestion = _closest_verb(typed, CLAIM_VERBS if claim_only else CLAIM_VERBS + MANAGE_VERBS)
    if suggestion is None:
        return f"{shown} is not an intent: verb; `intent: help` lists the verbs"
    colon = " (no colon after the verb)" if typed.endswith(":") else ""
    return f"{shown} is not an intent: verb; did you mean `{suggestion}`{colon}? `intent: help` lists the verbs"


def _closest_verb(typed, verbs):
    """Same letters ignoring `-`, `_`, spaces and colons; else a verb it abbreviates; else a 1-2 edit typo."""
    key = _verb_key(typed[:40])
    if not key or len(key) > 12:  # no verb is within two edits of a longer word; keeps garbage cheap
        return None
    for verb in verbs:
        if _verb_key(verb) == key:
            return verb
    if len(key) >= 3:
        for verb in verbs:
            if _verb_key(verb).startswith(key):
                return verb
    limit = 1 if len(key) <= 4 else 2
    distance, best = min((_edit_distance(key, _verb_key(verb)), index) for index, verb in enumerate(verbs))
    return verbs[best] if distance <= limit else None  # ties go to the earlier verb in table order


def _verb_key(word):
    return "".join(char for char in word.lower() if char not in "-_: ")


def _edit_distance(left, right):
    """Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    previous, current = None, list(range(len(right) + 1))
    for i in range(1, len(left) + 1):
        before, previous, current = previous, current, [i] + [0] * len(right)
        for j in range(1, len(right) + 1):
            cost = left[i - 1] != right[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and left[i - 1] == right[j - 2] and left[i - 2] == right[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
    return current[len(right)]
