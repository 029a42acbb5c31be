"""demo: the main job on an embedded sample, through the built hook binaries, in a throw-away place."""
import json
import re

from intent_loop.cli.common import finish_command
from intent_loop.cli.replay import ReplaySession, context_of

_INCLUDE_ID = re.compile(r"\[([0-9a-f]{8})\] scope include:")


def register(subparsers):
    p = subparsers.add_parser("demo", help="replay an embedded Codex session through the hooks and show what happens",
                              description="In a throw-away data root and workspace, replay a realistic recorded "
                                          "Codex session through the built hook binaries and show each hook's "
                                          "answer, the resulting claims, the ledger verification and the "
                                          "published Guard contract with its version history.")
    p.add_argument("--keep", metavar="DIR", help="keep the data root and workspace under DIR")
    finish_command(p, cmd_demo)


def _indent(text, prefix="    "):
    return "\n".join(prefix + line for line in text.splitlines())


def cmd_demo(args, console):
    from intent_loop.cli.demo_sample import STEPS
    from intent_loop.guard.acceptance import validate_provider_document
    from intent_loop.intent.state import active_claims
    from intent_loop.intent.views import claim_line

    session = ReplaySession(console.env, keep=args.keep)
    out = console.out if not args.json else (lambda text="": None)
    try:
        out(f"intent-loop demo: throw-away data root {session.data_root}")
        out(f"                  throw-away workspace {session.workspace}\n")
        include_id = "00000000"
        for number, (title, step) in enumerate(STEPS, 1):
            payload = dict(step["payload"])
            if "prompt" in payload:
                payload["prompt"] = payload["prompt"].replace("{include_id}", include_id)
            result = session.run(step["event"], payload)
            out(f"== step {number}: {title} ({step['event']})")
            if "prompt" in payload:
                out("  prompt:\n" + _indent(payload["prompt"]))
            context = context_of(result["answer"])
            if not result["ok"]:
                out(f"  hook FAILED (exit {result['exit_code']}): {result.get('stdout')!r} {result.get('stderr')!r}")
            elif context:
                out("  hook answered (additionalContext):\n" + _indent(context))
                found = _INCLUDE_ID.search(context)
                if found:
                    include_id = found.group(1)
            else:
                out("  hook answered: " + json.dumps(result["answer"]) + " (nothing added)")
            if isinstance(result["answer"], dict) and result["answer"].get("systemMessage"):
                out("  shown to the user: " + result["answer"]["systemMessage"])
            out()
        ledger, verified = session.ledger()
        claims, history = [], []
        if verified is not None:
            for task_id, task in sorted(verified.state["tasks"].items()):
                claims.extend({"task": task_id[:8], "line": claim_line(r["claim"])} for r in active_claims(task))
            history = [{"version": e["payload"]["contract_version"], "at": e["occurred_at"],
                        "snapshot_sha256": e["payload"]["snapshot_sha256"]}
                       for e in session.events() if e.get("event_type") == "contract_published"]
        provider, path = session.provider()
        errors = validate_provider_document(provider) if provider is not None else None
        ok = ledger["ok"] and all(s["ok"] for s in session.steps) and provider is not None and not errors
        if args.json:
            console.json({"ok": ok, "steps": session.steps, "claims": claims, "ledger": ledger,
                          "provider": provider, "provider_errors": errors, "versions": history})
            return 0
        out("== resulting claims")
        for claim in claims:
            out(f"  task {claim['task']}: {claim['line']}")
        out("\n== ledger verification")
        if ledger["ok"]:
            out(f"  OK: {ledger['events']} events, hash chain intact, last hash {ledger['last_hash']}")
        else:
            out(f"  DAMAGED: {ledger['error']['code']}: {ledger['error']['message']}")
        out("\n== published Guard contract" + (f" ({path})" if path else ""))
        if provider is None:
            out("  none")
        else:
            out(f"  validation: {'valid' if not errors else 'INVALID: ' + '; '.join(errors)}")
            out(_indent(json.dumps(provider, indent=2, ensure_ascii=False), "  "))
        out("\n== contract version history (contract_published events)")
        for item in history:
            out(f"  version {item['version']} at {item['at']}  snapshot {item['snapshot_sha256'][:16]}")
        if args.keep:
            out(f"\nkept under {session.base}")
        else:
            out("\n(the throw-away data root and workspace are removed; `--keep DIR` keeps them)")
    finally:
        session.close()
    return 0
