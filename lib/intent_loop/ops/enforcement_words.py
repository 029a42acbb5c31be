"""What the user and the model are told of enforcement and protection: which Guard state holds in
this session (guard/enforcement.py's verdicts) and where the threat model does not cover a session
(hook/exposure.py). Kept apart from ops/receipts.py so that SessionStart, which says these, loads
none of the receipts' machinery.
"""

# -- what Guard enforces (guard/enforcement.py's states), on every surface ---------------------
# The receipt's short Guard line, after `Guard contract vN, `; `status`, `show`, doctor and
# intent_status use the same words.
ENFORCEMENT_SHORT = {  # short: the receipt line has two lines of 160 characters for everything
    "enforced": "enforced (balanced mode)",
    "reminders": "reminders only (shadow)",
    "off": "not enforced (Guard off)",
    "not_running": "not enforced (Guard's hooks not running)",
    "not_installed": "not enforced (no Guard)",
    "unconfirmed": "enforcement unconfirmed",
    "other_host": "not enforced on this host (Guard runs only under Codex)",
}
# The model's header: whether Guard blocks the user's rules in this session.
ENFORCEMENT_HEADERS = {
    "enforced": "Execution Fidelity Guard blocks actions that break the structured rules (action:, tool:, "
                "command-prefix:) in this session, and only reminds of the natural-language ones.",
    "reminders": "Execution Fidelity Guard runs in shadow mode in this session: it reminds, it blocks nothing.",
    "off": "Execution Fidelity Guard is off in this session: it blocks nothing.",
    "not_running": "Execution Fidelity Guard's hooks do not run in this session: nothing blocks an action that "
                   "breaks these rules.",
    "not_installed": "Execution Fidelity Guard is not installed: nothing blocks an action that breaks these rules.",
    "unconfirmed": "Whether Execution Fidelity Guard blocks anything in this session is not confirmed.",
    "other_host": "This session runs in Claude Code, where Execution Fidelity Guard does not run: nothing on this "
                  "host blocks an action that breaks these rules; you are only told them.",
}
# Said once, in the header, where Guard may deny or pause (not per rule: the view is capped).
GUARD_DENIALS = ("If Guard pauses an action under an `ask` rule, tell the user which rule and that "
                 "`intent: approve <id>` allows it for the rest of the task; if Guard blocks one under a forbid, "
                 "say so and name the rule: only the user lifts it, so do not argue for lifting it.")
# Why a state holds (guard/enforcement.py's causes), for the user.
ENFORCEMENT_CAUSES = {
    "untrusted": "Codex has no trust record for all of Guard's hooks; open /hooks in the Codex TUI and trust them",
    "not_seen": "Guard's hooks were trusted once but have not run in this session, so its copy likely changed "
                "since it was trusted; open /hooks in the Codex TUI and trust them again",
    "plugin_disabled": "Guard's plugin is disabled in Codex's config.toml; enable it (`enabled = true`)",
    "no_copy": "config.toml names Guard's plugin but Codex has no copy of it; run "
               "`codex plugin add execution-fidelity-guard@<marketplace>`",
    "hooks_disabled": "some of Guard's hooks are disabled in /hooks; enable them",
    "hooks_feature_off": "`[features] hooks = false` in config.toml turns every hook off",
    "plugins_feature_off": "`[features] plugins = false` in config.toml turns every plugin off",
    "node_missing": "Guard's hooks run `node`, which is not on Codex's PATH; install Node.js 20 or newer",
    "no_records": "Guard keeps no records (EFG_PERSIST is off), so nothing shows that its hooks run",
    "records_in_workspace": "Guard keeps its records where the agent can write (EFG_STATE_DIR), so they prove "
                            "nothing",
    "not_yet": "Guard has not been seen running in this session yet; the next prompt checks again",
}
# Both routes seen with Codex 0.169.0: the hooks get the variable, and a $CODEX_HOME/.env line wins
# over the shell's value (tests/e2e/test_real_guard.py).
TURN_ON = ("start Codex with EFG_MODE=balanced (`export EFG_MODE=balanced`, or the line `EFG_MODE=balanced` in "
           "$CODEX_HOME/.env, which wins over the shell)")


# What a literal command prefix misses, and the action Guard's classifier gives its variants
# (classify.mjs: rm, `git clean` delete; curl, wget, ssh move data over the network; `git push`
# publishes). `sudo rm -rf`, `/bin/rm -rf`, `rm -fr` and `cd x && rm -rf .` all pass `rm -rf`.
_PREFIX_ACTIONS = {"rm": "delete", "rmdir": "delete", "unlink": "delete", "shred": "delete", "git clean": "delete",
                   "curl": "network", "wget": "network", "ssh": "network", "scp": "network", "rsync": "network",
                   "git push": "publish", "npm publish": "publish"}
# The verbs whose receipt says how strong the rule is (issue 34): Guard blocks or pauses on them.
STRENGTH_VERBS = ("forbid", "must-not", "ask")


def rule_strength(verb, statement, *, host=None):
    """The receipt's short words on what Guard does with a recorded rule: block (pause, for `ask`) a
    structured one, only remind of prose; a command prefix matches literally, so the `action:` rule
    that covers its variants is named. In a Claude Code session (`host`), where Guard does not run,
    a structured rule is blocked only in Codex sessions, and the words say so."""
    from intent_loop.intent.claims import split_prefix
    from intent_loop.intent.rule_grammar import rule_kind

    kind, value = rule_kind(split_prefix(statement)[1])
    if kind is None:
        return " (prose: a reminder only)"
    does = "Guard can pause it" if verb == "ask" else "Guard can block it"
    if host == "claude-code":
        does += " in Codex sessions, not here"
    if kind != "command-prefix":
        return f" ({does})"
    words = value.split()
    action = _PREFIX_ACTIONS.get(" ".join(words[:2])) or _PREFIX_ACTIONS.get(words[0] if words else "")
    cover = f"`action:{action}` covers `sudo {value}`" if action else "an `action:` rule covers its variants"
    return f" ({does}; a prefix matches literally: {cover})"


def enforcement_header(state, *, stops=2):
    """The sentence the model's view header carries for a Guard state (`stops`: kept for callers)."""
    text = ENFORCEMENT_HEADERS[state]
    return f"{text} {GUARD_DENIALS}" if state in ("enforced", "unconfirmed") else text


def enforcement_short(verdict):
    """`enforced (balanced mode)` and the like: the short form of a verdict, for the Guard line."""
    return ENFORCEMENT_SHORT.get((verdict or {}).get("state"), ENFORCEMENT_SHORT["unconfirmed"])


def enforcement_seen(verdict):
    """The short state, with when the hooks saw it when read back from their record."""
    if not verdict:
        return "whether Guard enforces it is not known yet (no hook has looked since intent-loop was updated)"
    if verdict.get("state") is None:
        return "no Codex session has looked here yet"
    age = verdict.get("age")
    if type(age) is not int:
        return enforcement_short(verdict)
    from intent_loop.base.timestamps import duration_words

    return f"{enforcement_short(verdict)}, as the hooks saw it {duration_words(max(age, 0))} ago"


def enforcement_summary(verdict):
    """One sentence for `status`, `show`, doctor and intent_status: the short state, when the hooks
    saw it, and why (the cause), or that no hook has looked yet."""
    text = "Guard: " + enforcement_seen(verdict)
    cause = (verdict or {}).get("cause")
    if cause in ENFORCEMENT_CAUSES:
        text = f"{text}; {ENFORCEMENT_CAUSES[cause]}"
    claude = (verdict or {}).get("claude_code_age")
    if type(claude) is int:
        from intent_loop.base.timestamps import duration_words

        text += (f"; in Claude Code sessions nothing enforces it, Guard runs only under Codex (a Claude Code hook "
                 f"ran here {duration_words(max(claude, 0))} ago)")
    return text


def enforcement_explained(verdict):
    """What the user is told once a session, and when the state changes: the state, why, the cost of
    a "done" in balanced mode, and how to get enforcement where it is off."""
    state, cause = verdict.get("state"), verdict.get("cause")
    why = f": {ENFORCEMENT_CAUSES[cause]}" if cause in ENFORCEMENT_CAUSES else ""
    if state == "enforced":
        stops = verdict.get("stops", 2)
        cost = (f"after the agent says it is done, Guard asks for up to {stops} more verification turns in each "
                "session and contract version (EFG_MAX_STOP_CONTINUATIONS=0 turns them off; `efg evidence add "
                "--kind user` attests the outcome)") if stops else \
            "Guard asks for no verification turns after a \"done\" (EFG_MAX_STOP_CONTINUATIONS=0)"
        return f"Guard blocks actions that break your structured rules (balanced mode); {cost}"
    if state == "reminders":
        return ("Guard runs in shadow mode: it reminds the agent of your rules but blocks nothing; "
                f"to have it block them, {TURN_ON}")
    if state == "off":
        return f"Guard is off (EFG_MODE=off), so nothing blocks what breaks your rules; {TURN_ON}"
    if state == "not_running":
        return f"Guard is installed, but its hooks are not running{why}; until they do, your rules " \
               "are reminders only"
    if state == "not_installed":
        return ("Execution Fidelity Guard is not installed, so your rules reach the agent as reminders "
                "only; the README's `Guard` section says how to install it")
    if state == "other_host":
        return ("nothing enforces your rules in Claude Code: Execution Fidelity Guard runs only under Codex, so "
                "here the agent is only told them; the Guard file is still kept for Codex sessions in this workspace")
    return f"whether Guard blocks anything is not confirmed{why}"


EXPOSURES = {
    "claude_code": ("in Claude Code the agent's commands run without an OS sandbox unless you turned one on, and its "
                    "shell can send a prompt through Claude Code's messaging socket that reaches intent-loop as if you "
                    "typed it: your recorded intent here is only as safe as the agent is careful (docs/security.md)"),
    "unsandboxed": ("this Codex runs without its sandbox (danger-full-access or --yolo): the agent can rewrite "
                    "intent-loop's data, what it runs and the Guard file, so your recorded intent is only as "
                    "safe as the agent is careful; run Codex with its default sandbox to keep them out of reach"),
    "workspace_holds_home": ("this workspace contains your home folder, so the agent may write where intent-loop "
                             "keeps your intent and what it runs; open Codex in a project folder instead"),
    "workspace_holds_data_root": ("this workspace contains intent-loop's data root, so the agent may rewrite your "
                                  "recorded intent; open Codex in a project folder, or set INTENT_LOOP_DATA_DIR "
                                  "outside the workspace"),
}


def exposure_text(reasons):
    """The once-a-session line for the reasons hook.exposure found (none: None)."""
    if not reasons:
        return None
    return "intent-loop: not protected here: " + "; and ".join(EXPOSURES[reason] for reason in reasons)


def other_stores_text(others, root):
    """The once-a-session line when another data root also holds this folder's intent (none: None)."""
    if not others:
        return None
    return (f"intent-loop: this folder's intent is also kept in another store, {', '.join(others)}; this session "
            f"reads and writes {root}, so what was recorded there is not shown here: point both hosts at one "
            "store (docs/storage.md, \"Two stores\")")
