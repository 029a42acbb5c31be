"""Our `[mcp_servers.intent_loop]` table in <codex-home>/config.toml: read with tomllib, written by a
table-scoped text edit that keeps every other byte of the user's file.

The edit replaces or removes exactly the lines of our table and its subtables (from each of their
headers to the next header of another table). It is checked before anything is written: the file
after the edit, parsed, must equal the file before it with only our table changed; a config that
defines the table another way (dotted keys, an inline table) is refused rather than guessed at.
"""
import os
import shlex

from intent_loop.errors import ErrorCode, IntentLoopError

CONFIG_FILE = "config.toml"
SERVER_NAME = "intent_loop"  # Codex shows the tools as mcp__intent_loop__*
MCP_BINARY = "intent-loop-mcp"
ENV_VARS = ("CODEX_HOME", "INTENT_LOOP_DATA_DIR")  # Codex drops CODEX_HOME from a server's env otherwise
TOOL_TIMEOUT_SEC = 30


class McpChange:
    """What install/uninstall would do to config.toml: `new_bytes` None means nothing to write."""

    __slots__ = ("path", "target", "raw", "new_bytes", "warning")

    def __init__(self, path, target, raw, new_bytes, warning=None):
        self.path, self.target, self.raw, self.new_bytes, self.warning = path, target, raw, new_bytes, warning


CONFIG_READ_CAP = 4 << 20  # a Codex config.toml is a few KiB


def _invalid(path, why):
    return IntentLoopError(ErrorCode.CODEX_CONFIG_INVALID,
                           f"{path} {why}; fix it by hand (intent-loop never overwrites it)", details={"path": path})


def _toml_string(value):
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in out) + '"'


def table_text(binary, python):
    return (f"[mcp_servers.{SERVER_NAME}]\n"
            f"command = {_toml_string(binary)}\n"
            "args = []\n"
            f"env_vars = [{', '.join(_toml_string(v) for v in ENV_VARS)}]\n"
            f"tool_timeout_sec = {TOOL_TIMEOUT_SEC}\n"
            "\n"
            f"[mcp_servers.{SERVER_NAME}.env]\n"
            f"INTENT_LOOP_PYTHON = {_toml_string(python)}\n")


def read(path):
    """(raw text or None when missing, parsed dict). CODEX_CONFIG_INVALID for what tomllib refuses."""
    import tomllib

    from intent_loop.storage.paths import read_others_config

    raw = read_others_config(path, CONFIG_READ_CAP, _invalid)  # a link is read through; never a FIFO or /dev/zero
    if raw is None:
        return None, {}
    try:
        return raw.decode("utf-8"), tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _invalid(path, f"is not valid TOML ({exc})") from exc


def is_our_table(table):
    command = table.get("command") if isinstance(table, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command) if " " in command.strip() else [command]
    except ValueError:  # an unclosed quote: not a command line we wrote (install/doctor must not crash on it)
        return False
    return bool(words) and os.path.basename(words[-1]) == MCP_BINARY


def header_path(line):
    """The key path of a `[table]` header line, or None (`[[array]]` headers count as other tables)."""
    text = line.strip()
    if not text.startswith("[") or text.startswith("[["):
        return () if text.startswith("[[") else None
    end = _header_end(text)
    if end is None:
        return None
    rest = text[end + 1:].strip()
    if rest and not rest.startswith("#"):
        return None
    return _split_key(text[1:end])


def _header_end(text):
    quote = None
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "]":
            return index
    return None


def _split_key(key):
    parts, current, quote = [], "", None
    for char in key:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return tuple(parts)


def _without_ours(text):
    """(the lines outside our table and its subtables, the index where our first one started or None)."""
    lines = text.splitlines(keepends=True)
    kept, first, inside, string = [], None, False, None
    for line in lines:
        # a line inside a multi-line string is never a header (the tomllib check in `edited` catches
        # what this line-level scan misjudges, and then nothing is written)
        path = header_path(line) if string is None else None
        for delimiter in ('"""', "'''"):
            if (string is None or string == delimiter) and line.count(delimiter) % 2:
                string = None if string == delimiter else delimiter
        if path is not None:
            inside = path[:2] == ("mcp_servers", SERVER_NAME)
            if inside and first is None:
                first = len(kept)
        if not inside:
            kept.append(line)
    return kept, first


def _others(parsed):
    """The parsed config without our table (an emptied [mcp_servers] counts as absent)."""
    out = dict(parsed)
    servers = out.get("mcp_servers")
    if isinstance(servers, dict):
        servers = {k: v for k, v in servers.items() if k != SERVER_NAME}
        if servers:
            out["mcp_servers"] = servers
        else:
            out.pop("mcp_servers")
    return out


def edited(text, table, path):
    """`text` with our table replaced by `table` (None removes it); checked with tomllib."""
    import tomllib

    kept, first = _without_ours(text or "")
    if table is None and first is not None and first == len(kept) and first > 0 and not kept[first - 1].strip():
        kept.pop()  # the blank line install put before our table at the end: uninstall leaves the file as it was
    if table is not None:
        block = table
        if first is None:
            if kept and not kept[-1].endswith("\n"):
                kept[-1] += "\n"
            if kept and kept[-1].strip():
                block = "\n" + block
            kept.append(block)
        else:
            if first < len(kept) and kept[first].strip():
                block += "\n"
            kept.insert(first, block)
    new = "".join(kept)
    refused = _invalid(path, f"defines [mcp_servers.{SERVER_NAME}] in a way a table-scoped edit cannot change "
                             "(dotted keys or an inline table)")
    try:
        before, after = tomllib.loads(text or ""), tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise refused from exc
    ours = after.get("mcp_servers", {}).get(SERVER_NAME)
    wanted = tomllib.loads(table)["mcp_servers"][SERVER_NAME] if table is not None else None
    if _others(before) != _others(after) or ours != wanted:
        raise refused
    return new


def plan(codex_home, *, install, binary=None, python=None):
    """The McpChange for install (binary, python) or uninstall; a foreign table is left alone."""
    path = os.path.join(codex_home, CONFIG_FILE)
    target = os.path.realpath(path)  # a symlinked config.toml is written through to its target
    text, parsed = read(path)
    current = parsed.get("mcp_servers", {}).get(SERVER_NAME) if isinstance(parsed.get("mcp_servers"), dict) else None
    if current is not None and not is_our_table(current):
        warning = {"code": ErrorCode.MCP_SERVER_FOREIGN, "message": (
            f"{path} has an [mcp_servers.{SERVER_NAME}] table that runs another command; it was left alone. "
            "Rename or remove it to let intent-loop register its MCP server")}
        return McpChange(path, target, text, None, warning)
    if install:
        new = edited(text, table_text(binary, python), path)
    elif current is None:
        return McpChange(path, target, text, None)
    else:
        new = edited(text, None, path)
    if text is not None and new == text:
        return McpChange(path, target, text, None)
    return McpChange(path, target, text, new)
