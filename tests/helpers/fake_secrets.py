"""Deterministic fake credentials, made at import so that no real one is committed: the alphabets,
`fake`, issue 14's formats and its leaks, shared by the redaction tests and the tests of secrets at
rest (tests/mcp/test_secrets_at_rest.py)."""
import base64
import random
import string

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
BASE64 = ALNUM + "+/"


def fake(length, *, seed, alphabet=ALNUM):
    """A deterministic fake secret that mixes upper, lower and digits (no real credential is committed)."""
    rng = random.Random(seed)
    body = "".join(rng.choice(alphabet) for _ in range(length - 3))
    return "xQ7" + body if alphabet is not string.digits else body + "123"


# Issue 14's formats. Prefixes are split ("S" "G.") so that secret scanners do not flag this file.
HEX = "0123456789abcdef"
GCP_KEY_ID = fake(43, seed=160, alphabet=HEX)[3:]  # 40 hex: [3:] drops fake()'s mixed-case lead
DATADOG = fake(35, seed=161, alphabet=HEX)[3:]
HEROKU = "-".join(fake(n + 3, seed=162 + n, alphabet=HEX)[3:] for n in (8, 4, 4, 4, 12))
SHOPIFY = {prefix: "shp" + prefix + "_" + fake(35, seed=170 + n, alphabet=HEX)[3:]
           for n, prefix in enumerate(("at", "ca", "pa", "ss"))}
DIGITALOCEAN = {prefix: "do" + prefix + "_v1_" + fake(67, seed=175 + n, alphabet=HEX)[3:]
                for n, prefix in enumerate("opr")}
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
AGE = ["AGE-SECRET" "-KEY-1" + fake(61, seed=180 + n, alphabet=BECH32)[3:] for n in range(2)]
SENDGRID_ID, SENDGRID_SECRET = fake(22, seed=185, alphabet=URLSAFE), fake(43, seed=186, alphabet=URLSAFE)
SENDGRID = "S" "G." + SENDGRID_ID + "." + SENDGRID_SECRET
BASIC_SHORT = base64.b64encode(b"user:pass").decode()  # dXNlcjpwYXNz: 12 characters, no digit
BASIC_PADDED = base64.b64encode(b"admin:hunter2").decode()


# Issue 14's 11 formats and 2 fragments: (text, what version 1 left of the secret).
ISSUE_14_LEAKS = [
    (f'"private_key_id": "{GCP_KEY_ID}"', GCP_KEY_ID), ("token: qwertyuiop", "qwertyuiop"),
    (f"Authorization: Basic {BASIC_SHORT}", BASIC_SHORT), (f"datadog api key: {DATADOG}", DATADOG),
    (f"heroku api key: {HEROKU}", HEROKU), (f"use {SHOPIFY['at']}", SHOPIFY["at"]),
    (f"use {DIGITALOCEAN['p']}", DIGITALOCEAN["p"]), (f"use {AGE[0]}", AGE[0]),
    ("mysql -u root -pS3cr3tPw app", "S3cr3tPw"), ("sshpass -p hunter2x ssh host", "hunter2x"),
    ("curl -u alice:s3cret https://h", "s3cret"), ("my password is tr0ub4dor&3", "&3"),
    (f"key {SENDGRID}", SENDGRID_ID),
]
