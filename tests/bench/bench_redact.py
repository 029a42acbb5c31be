"""What redaction costs, as ratios to `python3 -I -S -c pass` measured in the same run.

    python3 tests/bench/bench_redact.py [--lib DIR ...] [--detect-secrets SITE_PACKAGES] [--runs N]
                                        [--adversarial [MB]]

Each `--lib` is a `lib/` directory to measure (default: this checkout's; give main's too to compare
before and after). Process figures are medians of fresh `python3 -I -S` runs that import the
module and redact one prompt: with no candidate secret (the pre-filter clears it, `re` is never
imported), and with candidates (`re`, compiling the rules, the patterns). "+ former id" adds the
previous version's rules, which the prompt hook also compiles when a prompt holds a candidate (its
former request id, docs/upgrading.md). In-process figures are warm per-prompt times. With
`--detect-secrets`, the same for detect-secrets from that site-packages (scanning a prompt means
writing it to a file: its API scans files). With `--adversarial`, seconds to redact MB megabytes
(default 3) of each input that keeps a pattern going or makes it fail late, under each lib's current
rules, and the worst (tests/test_redact.py holds the same inputs under a 10 s bound).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAIN = ("Please refactor the ledger module so that append() takes a keyword-only deadline, then update the "
         "tests in tests/storage/test_ledger.py and make sure the README explains the new error code; keep the public "
         "API stable and do not touch the hooks. Run the suite and tell me what changed.")
# Fake credentials, split so that secret scanners do not flag this file.
CANDIDATE = ("intent: must deploy with DD_APP_KEY=" + "0a1b2c3d" * 4 + " and mysql -u root -pS3cr3tPw app\n"
             "then push with gh" "p_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5" + " and curl -u alice:s3cret x")


def run(argv, runs):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def redaction_module(lib):
    """The module holding `redact` in `lib`: a package since issue 36, a flat module before."""
    return "intent_loop.redaction.redact" if os.path.isdir(os.path.join(lib, "intent_loop", "redaction")) \
        else "intent_loop.redact"


def redact_program(lib, text, *, former=False):
    call = "r.redact(t)" + ("; r.redact(t, version=r.VERSION - 1)" if former else "")
    return (f"import sys; sys.path.insert(0, {lib!r}); import {redaction_module(lib)} as r; t = {text!r}; {call}; "
            "assert 're' in sys.modules or r.redact(t) is t")


def detect_secrets_program(site, text):
    return (f"import sys, tempfile; sys.path.insert(0, {site!r}); from detect_secrets import SecretsCollection; "
            "from detect_secrets.settings import default_settings\n"
            f"with tempfile.NamedTemporaryFile('w', suffix='.txt') as fh:\n fh.write({text!r}); fh.flush()\n"
            " with default_settings():\n  SecretsCollection().scan_file(fh.name)")


def warm_us(lib, text, *, version=None, repeat=2000):
    program = (f"import sys, time; sys.path.insert(0, {lib!r}); import {redaction_module(lib)} as r; t = {text!r}\n"
               f"kw = {{}} if {version!r} is None else {{'version': {version!r}}}\n"
               f"r.redact(t, **kw); s = time.perf_counter()\nfor _ in range({repeat}): r.redact(t, **kw)\n"
               f"print((time.perf_counter() - s) / {repeat} * 1e6)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", program], check=True, capture_output=True, text=True)
    return float(out.stdout)


# (head, repeated unit): the version 3 rules' worst cases, and the slowest earlier ones for scale.
ADVERSARIAL = [("", "key "), ("", "key\t"), ("", "key 0a"), ("", "key 0123456789abcdef"), ("", "key 00000000-0000-"),
               ("", "api key 0a1b2c3d-"), ("", '\\"password\\": \\"'), ("", '{\\"token\\":\\"a\\\\'),
               ("", "\\'secret\\': \\'"), ("", '\\"key\\": \\"'), ("", 'token:\\"\\\\'), ("", 'password\\"'),
               ('{\\"password\\": \\"', "\\"), ('{\\"password\\": \\"', "a"), ("datadog api key", " "),
               ("key ", "0"), ("key ", "0a1b2c3d-"),
               ("", "key:"), ("", "token is "), ("", "password=\""), ("", "mysql -p"), ("", "http://a:b@")]


def adversarial_seconds(lib, head, unit, megabytes):
    program = (f"import sys, time; sys.path.insert(0, {lib!r}); import {redaction_module(lib)} as r\n"
               f"t = {head!r} + {unit!r} * ({int(megabytes * 1_000_000)} // {len(unit)})\n"
               "s = time.perf_counter(); r.redact(t); print(time.perf_counter() - s)")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", program], check=True, capture_output=True, text=True)
    return float(out.stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", action="append", help="a lib/ directory (repeatable)")
    parser.add_argument("--detect-secrets", help="site-packages holding detect-secrets")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--adversarial", type=float, nargs="?", const=3.0, metavar="MB",
                        help="time the adversarial inputs instead (default 3 MB each)")
    args = parser.parse_args(argv)
    libs = args.lib or [os.path.join(REPO, "lib")]
    if args.adversarial:
        for lib in libs:
            print(f"\n{lib}: seconds per {args.adversarial:g} MB")
            times = [(adversarial_seconds(lib, head, unit, args.adversarial), head, unit) for head, unit in ADVERSARIAL]
            for seconds, head, unit in times:
                print(f"  {head + unit if head else unit!r:40} {seconds:6.2f}")
            print(f"  {'worst':40} {max(times)[0]:6.2f}  ({max(times)[1] + max(times)[2]!r})")
        return 0
    python = [sys.executable, "-I", "-S", "-c"]
    base = run(python + ["pass"], args.runs)
    print(f"python3 -I -S -c pass: {base * 1000:.1f} ms (= 1.00)")
    for lib in libs:
        source = os.path.join(lib, *redaction_module(lib).split(".")) + ".py"
        has_versions = "VERSION" in open(source, encoding="utf-8").read()
        rows = [("import + redact, no candidate", redact_program(lib, PLAIN)),
                ("import + redact, candidates", redact_program(lib, CANDIDATE))]
        if has_versions:
            rows.append(("import + redact, candidates + former id", redact_program(lib, CANDIDATE, former=True)))
        print(f"\n{lib}")
        for name, program in rows:
            print(f"  {name:42} {run(python + [program], args.runs) / base:5.2f}x")
        start_us = base * 1e6
        for name, text, version in (("warm redact, no candidate", PLAIN, None),
                                    ("warm redact, candidates", CANDIDATE, None)):
            us = warm_us(lib, text, version=version)
            print(f"  {name:42} {us:7.1f} us = {us / start_us:.4f}x")
    if args.detect_secrets:
        site = args.detect_secrets
        print(f"\ndetect-secrets from {site}")
        imported = run(python + [f"import sys; sys.path.insert(0, {site!r}); from detect_secrets import "
                                 "SecretsCollection; from detect_secrets.settings import default_settings"],
                       args.runs)
        print(f"  {'import':42} {imported / base:5.2f}x")
        for name, text in (("import + scan, no candidate", PLAIN), ("import + scan, candidates", CANDIDATE)):
            print(f"  {name:42} {run(python + [detect_secrets_program(site, text)], args.runs) / base:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
