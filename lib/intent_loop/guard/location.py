"""Where Guard reads the contract: the one rule, light enough for every prompt's one lstat."""
from intent_loop.base import fast_os

DEFAULT_PATH = (".execution-fidelity", "contract.json")


def provider_path(workspace, env):
    """Where Guard 0.2.2 reads the contract: `path.resolve(cwd, EFG_CONTRACT_PATH.trim())`, a blank
    value meaning unset, else <cwd>/.execution-fidelity/contract.json (lexical, no realpath)."""
    configured = env.get("EFG_CONTRACT_PATH") or ""
    if configured:  # rarely set: the grammar module loads only then
        from intent_loop.intent.rule_grammar import js_trim

        configured = js_trim(configured)  # as Guard 0.2.2 trims it (not str.strip)
    if configured:
        return fast_os.path.normpath(fast_os.path.join(workspace, configured))
    return fast_os.path.join(workspace, *DEFAULT_PATH)
