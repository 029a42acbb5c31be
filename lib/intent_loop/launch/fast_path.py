"""The launcher's fast path: what Python runs when the /bin/sh prefix found a complete runtime.

build.py embeds this module's source (docstrings dropped) in every binary as `python -I -S -c`
code and appends the call. It is compiled on every hook start: about 0.2 ms, 0.1 ms (0.01x an
interpreter start) more than the flat one-letter code it replaced, of which the names are 0.02 ms
and the two functions 0.05 ms. So it stays this small and imports only `sys` (`os` only for a
damaged runtime). recompile_damaged_bytecode (issue 33) adds 0.13-0.2 ms to that compile (0.01x-0.02x
an interpreter start, measured alternating against the code without it) and no module. launcher.py,
the long way, reuses these functions.
"""
import sys

MARKER = ".intent-loop-complete"  # extracted_runtime.finish_extraction writes it once every file is on disk


def answer_fail_open_on_sigterm():
    """A hook killed before hook.runtime installs its own handler still answers fail-open."""
    import _signal  # the C module: `import signal` builds enums
    import posix

    _signal.signal(_signal.SIGTERM, lambda *_: (posix.write(1, b'{"continue":true}'), posix._exit(0)))


def run_extracted(module, function, *, is_hook):
    """sys.argv is [-c, site-packages, binary, *args]: call the entry point as the binary would.
    A runtime it cannot be loaded from loses its marker, and the shell runs again: it now takes
    the long way, which extracts."""
    if is_hook:
        answer_fail_open_on_sigterm()
    recompile_damaged_bytecode()
    site_packages = sys.argv[1]
    sys.argv = sys.argv[2:]
    sys.path[0:0] = [site_packages]
    try:
        entry = getattr(__import__(module, fromlist=[function]), function)
    except (ImportError, AttributeError):
        import os

        try:
            os.unlink(site_packages + "/" + MARKER)
        except FileNotFoundError:  # a concurrent start removed it first
            pass
        os.execv("/bin/sh", ["/bin/sh"] + sys.argv)
    entry()


def recompile_damaged_bytecode():
    """Bytecode that fails to load counts as a cache miss: the module is compiled from its source
    and its .pyc rewritten whole (atomically), for every import of the process, lazy ones too.
    CPython's SourceLoader.get_code unmarshals a .pyc whose header matches its source outside the
    try that falls back to source, so a .pyc cut short after that header (a full disk: its
    _write_atomic ignores a short write) fails every import of its module for good. This wraps
    importlib's own function, already loaded: no module is added."""
    import _frozen_importlib_external as external

    load = getattr(external, "_compile_bytecode", None)
    if load is None:  # a future CPython without it: its imports fail as they would anyway
        return

    def compile_bytecode(data, name=None, bytecode_path=None, source_path=None):  # get_code's keywords
        try:
            return load(data, name, bytecode_path, source_path)
        except (EOFError, ValueError, TypeError, ImportError):  # marshal's errors; a non-code object
            if source_path is None:
                raise
        with external._io.open_code(source_path) as file:
            source = file.read()
        code = compile(source, source_path, "exec", dont_inherit=True)
        if not sys.dont_write_bytecode:
            try:
                stamp = external._code_to_timestamp_pyc(code, external._path_stat(source_path).st_mtime, len(source))
                external._write_atomic(bytecode_path, stamp)
            except OSError:
                pass  # a read-only or still-full disk: the next start compiles again
        return code

    external._compile_bytecode = compile_bytecode
