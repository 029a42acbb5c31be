"""Every combination of what decides the data root, for comparing base/data_root.py with its shell
twin launch/data_root.sh (and with the copy build.py embeds in each binary's Python launcher)."""
import itertools
import os

# None: unset. Nested, relative, doubled-slash, dotted and trailing-slash values on purpose: the two
# copies disagreed exactly there before they were one rule (issue 36, item 1).
VALUES = {
    "INTENT_LOOP_DATA_DIR": [None, "", "/data/root", "/data//root/", "relative/root", "/data/./x/../root",
                             "//data/root"],
    "CODEX_HOME": [None, "", "/codex/home", "/codex/home/", "codex-relative", "/", "/codex/../other"],
    "PLUGIN_DATA": [None, "", "/h/.codex/plugins/data/intent-loop-market",
                    "/h/.codex/plugins/data/market/nested", "/h/.codex/plugins/data/", "/plugins/data/x",
                    "/elsewhere/data", "relative/plugins/data/x", "/h/./plugins//data/x/", "/h/plugins/data/x/..",
                    "//plugins/data/x"],
    "HOME": ["with", "without", None, "", "relative"],
}
# {codex}: a Codex home (it holds config.toml); {claude}: Claude Code's ~/.claude, the same
# plugins/cache layout without config.toml; {bare}: a plugins/cache under no home of either host.
EXECUTABLES = ["/opt/bin/intent-loop-stop", "{codex}/plugins/cache/market/intent-loop/1.0/dist/intent-loop-stop",
               "{claude}/plugins/cache/market/intent-loop/1.0/hooks/intent-loop", "/plugins/cache/x/bin",
               "{codex}/../.codex/./plugins/cache/m/x", "{bare}/plugins/cache/a/plugins/cache/b"]


def make_homes(base):
    """{"with", "without": two HOMEs (the first holds .codex/config.toml and .claude/), and the
    executables' places "codex", "claude", "bare"}, under base."""
    with_codex, without = base / "with", base / "without"
    (with_codex / ".codex").mkdir(parents=True)
    (with_codex / ".codex" / "config.toml").write_text("")
    (with_codex / ".claude").mkdir()
    (base / "bare").mkdir()
    without.mkdir()
    return {"with": str(with_codex), "without": str(without), "codex": str(with_codex / ".codex"),
            "claude": str(with_codex / ".claude"), "bare": str(base / "bare")}


def environments(homes, variables=VALUES, executables=EXECUTABLES):
    """(env, executable) for every combination: the env holds only the variables that are set."""
    executables = [executable.format(**homes) for executable in executables]
    for combo in itertools.product(*variables.values(), executables):
        *values, executable = combo
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for name, value in zip(variables, values, strict=True):
            if name == "HOME" and value in ("with", "without"):
                value = homes[value]
            if value is not None:
                env[name] = value
        yield env, executable


def found(find, env, executable):
    """find(env, executable), with a refused relative override as the string "ValueError"."""
    try:
        return find(env, executable)
    except ValueError:
        return "ValueError"
