"""Credential redaction: a table per family, false positives, properties, pre-filter and speed."""
import base64
import os
import random
import re
import string
import subprocess
import sys
import sysconfig
import time
import types
from pathlib import Path

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from helpers.fake_secrets import (
    AGE,
    ALNUM,
    BASE64,
    BASIC_PADDED,
    BASIC_SHORT,
    DATADOG,
    DIGITALOCEAN,
    GCP_KEY_ID,
    HEROKU,
    HEX,
    ISSUE_14_LEAKS,
    SENDGRID,
    SHOPIFY,
    URLSAFE,
    fake,
)
from intent_loop.redaction import redact as redact_module
from intent_loop.redaction import secret_rules
from intent_loop.redaction.redact import has_secret, redact
from intent_loop.redaction.secret_rules import KINDS

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"\[REDACTED:([^\]]*)\]")


def b64url(text):
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# Prefixes are split ("gh" "p_") so that secret scanners do not flag this test file.
ANTHROPIC = ["sk-" "ant-api03-" + fake(93, seed=s, alphabet=URLSAFE) + "AA" for s in range(3)]
OPENAI_LEGACY = "sk-" + fake(48, seed=10)
OPENAI_PROJECT = "sk-" "proj-" + fake(40, seed=11, alphabet=URLSAFE) + "_T3BlbkFJ" + fake(40, seed=12, alphabet=URLSAFE)
OPENAI_SERVICE = "sk-" "svcacct-" + fake(60, seed=13, alphabet=URLSAFE)
OPENAI_ADMIN = "sk-" "admin-" + fake(50, seed=14, alphabet=URLSAFE)
GITHUB = {prefix: "gh" + prefix + "_" + fake(36, seed=20 + n) for n, prefix in enumerate("pousr")}
GITHUB_PAT = "github" "_pat_" + "11ABCDEFG0" + fake(12, seed=26) + "_" + fake(59, seed=27)
AWS_ACCESS = "AKIA" + fake(16, seed=30, alphabet=string.ascii_uppercase + string.digits).upper()
AWS_SESSION = "ASIA" + fake(16, seed=31, alphabet=string.ascii_uppercase + string.digits).upper()
GOOGLE = ["AI" "za" + fake(35, seed=40 + n, alphabet=URLSAFE) for n in range(3)]
SLACK_BOT = ("xo" "xb-" + fake(12, seed=50, alphabet=string.digits) + "-" + fake(13, seed=51, alphabet=string.digits)
             + "-" + fake(24, seed=52))
SLACK_USER = ("xo" "xp-" + fake(12, seed=53, alphabet=string.digits) + "-" + fake(12, seed=54, alphabet=string.digits)
              + "-" + fake(32, seed=55))
SLACK_APP = ("xa" "pp-1-A0" + fake(9, seed=56, alphabet=string.digits) + "-" + fake(13, seed=57, alphabet=string.digits)
             + "-" + fake(64, seed=58))
SLACK_LEGACY = "xo" "xa-2-" + fake(40, seed=59)
STRIPE = {f"{role}_{mode}": f"{role}_{mode}_" + fake(24, seed=60 + n)
          for n, (role, mode) in enumerate((r, m) for r in ("sk", "rk", "pk") for m in ("live", "test"))}
NPM = ["np" "m_" + fake(36, seed=70 + n) for n in range(3)]
HUGGINGFACE = ["h" "f_" + fake(34, seed=80 + n) for n in range(3)]
JWT_HEADER = b64url('{"alg":"HS256","typ":"JWT"}')
JWTS = [f"{JWT_HEADER}.{b64url(payload)}.{fake(43, seed=90 + n, alphabet=URLSAFE)}" for n, payload in enumerate((
    '{"sub":"1234567890","name":"Jane Doe","iat":1516239022}',
    '{"iss":"https://issuer.example","aud":"intent-loop","exp":1900000000}',
    '{"user_id":42,"scope":"read write"}',
))]
OPAQUE = [fake(32, seed=100 + n) for n in range(4)]
BASE64_40 = fake(40, seed=110, alphabet=BASE64)
BASE64_88 = fake(86, seed=111, alphabet=BASE64) + "=="
URLSAFE_64 = fake(64, seed=112, alphabet=URLSAFE)
PEM_BODY = "\n".join(fake(64, seed=120 + n, alphabet=BASE64) for n in range(4))
PEM_LINE = " ".join(fake(64, seed=130 + n, alphabet=BASE64) for n in range(3))
# Issue 14's formats (GCP_KEY_ID to BASIC_PADDED) are in helpers/fake_secrets.py, shared with the
# tests of secrets at rest.


def pem(label, body, *, end=True, newline="\n"):
    head = f"-----BEGIN {label}-----"
    return newline.join([head, body] + ([f"-----END {label}-----"] if end else []))


# (text, the secret that must be gone, expected kind)
POSITIVE_CASES = [
    # private_key
    (f"Here is the deploy key:\n{pem('RSA PRIVATE KEY', PEM_BODY)}\nplease store it", PEM_BODY, "private_key"),
    (f"key: {pem('RSA PRIVATE KEY', PEM_LINE, newline=' ')} end", PEM_LINE, "private_key"),
    (f"my ssh key {pem('OPENSSH PRIVATE KEY', PEM_BODY, end=False)}", PEM_BODY, "private_key"),
    ('{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n' + PEM_LINE
     + '\\n-----END PRIVATE KEY-----\\n"}', PEM_LINE, "private_key"),
    (f"```\n{pem('EC PRIVATE KEY', PEM_BODY)}\n```", PEM_BODY, "private_key"),
    (f"gpg export:\n{pem('PGP PRIVATE KEY BLOCK', PEM_BODY)}", PEM_BODY, "private_key"),
    (f"{pem('ENCRYPTED PRIVATE KEY', PEM_LINE, newline=' ')}", PEM_LINE, "private_key"),
    (f"truncated paste -----BEGIN DSA PRIVATE KEY----- {PEM_LINE}", PEM_LINE, "private_key"),
    # url_credentials
    ("git clone https://alice:S3cretPass@github.com/org/repo.git", "alice:S3cretPass", "url_credentials"),
    ("DATABASE_URL=postgres://admin:pa55word@db.internal:5432/app", "admin:pa55word", "url_credentials"),
    ("connect to redis://:hunter2x@cache:6379/0 first", ":hunter2x", "url_credentials"),
    ("amqp://guest:gu3st!@rabbit.local/vhost", "guest:gu3st!", "url_credentials"),
    ("curl https://bob:p@ss@host.example.com/path?q=1", "bob:p@ss", "url_credentials"),
    ("ftp://anonymous:anon%40mail@ftp.example.org/pub", "anonymous:anon%40mail", "url_credentials"),
    (f"remote = https://x-access-token:{GITHUB['s']}@github.com/o/r", GITHUB["s"], "url_credentials"),
    # anthropic_key
    (f"export ANTHROPIC_API_KEY={ANTHROPIC[0]}", ANTHROPIC[0], "anthropic_key"),
    (f'{{"anthropic": {{"key": "{ANTHROPIC[1]}"}}}}', ANTHROPIC[1], "anthropic_key"),
    (f"curl -H 'x-api-key: {ANTHROPIC[2]}' https://api.anthropic.com/v1/messages", ANTHROPIC[2], "anthropic_key"),
    (f"use {ANTHROPIC[0]} for the eval run", ANTHROPIC[0], "anthropic_key"),
    (f"client = Anthropic(api_key='{ANTHROPIC[1]}')", ANTHROPIC[1], "anthropic_key"),
    # openai_key
    (f"my key is {OPENAI_LEGACY}, rotate it later", OPENAI_LEGACY, "openai_key"),
    (f"OPENAI_API_KEY={OPENAI_PROJECT}", OPENAI_PROJECT, "openai_key"),
    (f'{{"openai_api_key": "{OPENAI_SERVICE}"}}', OPENAI_SERVICE, "openai_key"),
    (f"Authorization: Bearer {OPENAI_PROJECT}", OPENAI_PROJECT, "openai_key"),
    (f"codex login --api-key {OPENAI_ADMIN}", OPENAI_ADMIN, "openai_key"),
    (f"openai.api_key = \"{OPENAI_LEGACY}\"", OPENAI_LEGACY, "openai_key"),
    (f"(key:{OPENAI_SERVICE})", OPENAI_SERVICE, "openai_key"),
    # github_token
    (f"push with {GITHUB['p']} then stop", GITHUB["p"], "github_token"),
    (f"GH_TOKEN={GITHUB['o']} gh pr create", GITHUB["o"], "github_token"),
    (f'"token": "{GITHUB["u"]}"', GITHUB["u"], "github_token"),
    (f"git remote set-url origin https://{GITHUB['p']}@github.com/o/r.git", GITHUB["p"], "github_token"),
    (f"the refresh token {GITHUB['r']} expired", GITHUB["r"], "github_token"),
    (f"fine-grained: {GITHUB_PAT}", GITHUB_PAT, "github_token"),
    (f"echo {GITHUB_PAT} | gh auth login --with-token", GITHUB_PAT, "github_token"),
    (f"installation token ({GITHUB['s']})", GITHUB["s"], "github_token"),
    # aws_access_key
    (f"aws_access_key_id = {AWS_ACCESS}", AWS_ACCESS, "aws_access_key"),
    (f'{{"AccessKeyId": "{AWS_SESSION}", "Expiration": "2030-01-01T00:00:00Z"}}', AWS_SESSION, "aws_access_key"),
    (f"the key {AWS_ACCESS} belongs to the ci user", AWS_ACCESS, "aws_access_key"),
    (f"AWS_ACCESS_KEY_ID={AWS_SESSION} aws s3 ls", AWS_SESSION, "aws_access_key"),
    (f"[default]\naws_access_key_id={AWS_ACCESS}\nregion=eu-west-1", AWS_ACCESS, "aws_access_key"),
    # google_api_key
    (f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={GOOGLE[0]}", GOOGLE[0], "google_api_key"),
    (f'const firebaseConfig = {{ apiKey: "{GOOGLE[1]}", projectId: "demo" }};', GOOGLE[1], "google_api_key"),
    (f"GOOGLE_API_KEY={GOOGLE[2]}", GOOGLE[2], "google_api_key"),
    (f"the gemini key {GOOGLE[0]} is in the vault", GOOGLE[0], "google_api_key"),
    (f"--google-key={GOOGLE[1]}", GOOGLE[1], "google_api_key"),
    # slack_token
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT, "slack_token"),
    (f"post with {SLACK_USER} to #general", SLACK_USER, "slack_token"),
    (f'{{"app_level_token": "{SLACK_APP}"}}', SLACK_APP, "slack_token"),
    (f"legacy workspace token {SLACK_LEGACY}", SLACK_LEGACY, "slack_token"),
    (f"curl -H 'Authorization: Bearer {SLACK_BOT}' https://slack.com/api/chat.postMessage", SLACK_BOT, "slack_token"),
    (f"slack: {SLACK_APP}", SLACK_APP, "slack_token"),
    # stripe_key
    (f"STRIPE_SECRET_KEY={STRIPE['sk_live']}", STRIPE["sk_live"], "stripe_key"),
    (f"stripe.api_key = '{STRIPE['sk_test']}'", STRIPE["sk_test"], "stripe_key"),
    (f"restricted key {STRIPE['rk_live']} for the webhook", STRIPE["rk_live"], "stripe_key"),
    (f'<script>Stripe("{STRIPE["pk_live"]}")</script>', STRIPE["pk_live"], "stripe_key"),
    (f"test mode: {STRIPE['pk_test']}", STRIPE["pk_test"], "stripe_key"),
    (f"rk={STRIPE['rk_test']}", STRIPE["rk_test"], "stripe_key"),
    # npm_token
    (f"//registry.npmjs.org/:_authToken={NPM[0]}", NPM[0], "npm_token"),
    (f"NPM_TOKEN={NPM[1]} npm publish", NPM[1], "npm_token"),
    (f"the npm automation token is {NPM[2]}.", NPM[2], "npm_token"),
    (f'{{"npm": "{NPM[0]}"}}', NPM[0], "npm_token"),
    # huggingface_token
    (f"huggingface-cli login --token {HUGGINGFACE[0]}", HUGGINGFACE[0], "huggingface_token"),
    (f"HF_TOKEN={HUGGINGFACE[1]}", HUGGINGFACE[1], "huggingface_token"),
    (f"login(token='{HUGGINGFACE[2]}')", HUGGINGFACE[2], "huggingface_token"),
    (f"read access via {HUGGINGFACE[0]}", HUGGINGFACE[0], "huggingface_token"),
    # jwt
    (f"Cookie: session={JWTS[0]}; Path=/", JWTS[0], "jwt"),
    (f"the id_token was {JWTS[1]}", JWTS[1], "jwt"),
    (f'{{"access_token": "{JWTS[2]}", "expires_in": 3600}}', JWTS[2], "jwt"),
    (f"Authorization: Bearer {JWTS[0]}", JWTS[0], "jwt"),
    (f"decode {JWTS[1]}.", JWTS[1], "jwt"),
    # bearer_token
    (f"Authorization: Bearer {OPAQUE[0]}", OPAQUE[0], "bearer_token"),
    (f'curl -H "authorization: bearer {OPAQUE[1]}" https://api.example.com', OPAQUE[1], "bearer_token"),
    (f"AUTHORIZATION: BEARER {OPAQUE[2]}", OPAQUE[2], "bearer_token"),
    ("Authorization: Bearer ya29.a0AfH6SMBx" + fake(40, seed=140, alphabet=URLSAFE), "a0AfH6SMBx", "bearer_token"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw==", "bearer_token"),
    (f"send 'Bearer {OPAQUE[3]}~x.y' with each call", OPAQUE[3], "bearer_token"),
    ("curl -H 'Authorization: Bearer my-test-token-123' localhost", "my-test-token-123", "bearer_token"),
    # assignment
    ('password = "hunter2x"', "hunter2x", "assignment"),
    ('{"api_key": "abc123def456"}', "abc123def456", "assignment"),
    ("API_KEY=abcdefgh", "abcdefgh", "assignment"),
    ("token: abc123xyz", "abc123xyz", "assignment"),
    ("DB_PASSWORD=letmein", "letmein", "assignment"),
    ("client_secret: 'Zx9-secret-value'", "Zx9-secret-value", "assignment"),
    ("mysql -u root --password=s3cr3t! app", "s3cr3t!", "assignment"),
    ("the password is hunter2x, do not share it", "hunter2x", "assignment"),
    ("private_key: \"aGVsbG8gd29ybGQ=\"", "aGVsbG8gd29ybGQ=", "assignment"),
    ("const config = { apiKey: 'q1w2e3r4' };", "q1w2e3r4", "assignment"),
    ("'password' => 'Tr0ub4dor&3',", "Tr0ub4dor&3", "assignment"),
    ('passphrase := "correct horse battery staple"', "correct horse battery staple", "assignment"),
    ("X-Auth-Token: 9f8e7d6c5b4a", "9f8e7d6c5b4a", "assignment"),
    ("access_key: AbCd1234EfGh", "AbCd1234EfGh", "assignment"),
    ('"credentials": "svc:Pa55w0rd"', "svc:Pa55w0rd", "assignment"),
    ("SECRET_KEY = 'django-insecure-not-for-prod'", "django-insecure-not-for-prod", "assignment"),
    ("export DB_PASSWD=rosebud", "rosebud", "assignment"),
    ("auth_token=7a1c9e!x in the query", "7a1c9e!x", "assignment"),
    ('secret: "hunter2"', "hunter2", "assignment"),
    ("Password: 12345678", "12345678", "assignment"),
    # the formats issue 14 found stored raw (version 2 of the rules)
    (f'{{"type": "service_account", "private_key_id": "{GCP_KEY_ID}", "client_id": "1"}}', GCP_KEY_ID, "assignment"),
    (f"private_key_id: {GCP_KEY_ID}", GCP_KEY_ID, "assignment"),
    ("token: qwertyuiop", "qwertyuiop", "assignment"),
    ("use token: qwertyuiop for the ci", "qwertyuiop", "assignment"),
    ("TOKEN=letmeinplease make deploy", "letmeinplease", "assignment"),
    ("auth_token: abcdefghij", "abcdefghij", "assignment"),
    (f"DD_APP_KEY={DATADOG}", DATADOG, "assignment"),
    (f"datadog api key: {DATADOG}", DATADOG, "assignment"),
    (f'{{"datadog_key": "{DATADOG}"}}', DATADOG, "assignment"),
    (f"heroku api key: {HEROKU}", HEROKU, "assignment"),
    (f"heroku_key = {HEROKU}", HEROKU, "assignment"),
    (f"HEROKU_KEY={HEROKU} heroku ps", HEROKU, "assignment"),
    ("my password is tr0ub4dor&3", "tr0ub4dor&3", "assignment"),
    ("password: p&ss,w;rd1 then", "p&ss,w;rd1", "assignment"),
    ("login with token=a1b2c3&d4", "a1b2c3&d4", "assignment"),
    (f"install with {SHOPIFY['at']}", SHOPIFY["at"], "shopify_token"),
    (f"SHOPIFY_ACCESS_TOKEN={SHOPIFY['ca']}", SHOPIFY["ca"], "shopify_token"),
    (f'{{"shopify": "{SHOPIFY["pa"]}"}}', SHOPIFY["pa"], "shopify_token"),
    (f"the app secret {SHOPIFY['ss']} leaked", SHOPIFY["ss"], "shopify_token"),
    (f"doctl auth init -t {DIGITALOCEAN['p']}", DIGITALOCEAN["p"], "digitalocean_token"),
    (f"DIGITALOCEAN_TOKEN={DIGITALOCEAN['o']}", DIGITALOCEAN["o"], "digitalocean_token"),
    (f"refresh with {DIGITALOCEAN['r']}.", DIGITALOCEAN["r"], "digitalocean_token"),
    (f'"do": "{DIGITALOCEAN["p"]}"', DIGITALOCEAN["p"], "digitalocean_token"),
    (f"# created: 2026-01-01\n# public key: age1xyz\n{AGE[0]}", AGE[0], "age_secret_key"),
    (f"decrypt with {AGE[1]} please", AGE[1], "age_secret_key"),
    (f"SOPS_AGE_KEY={AGE[0]}", AGE[0], "age_secret_key"),
    (f"({AGE[1]})", AGE[1], "age_secret_key"),
    (f"SENDGRID_API_KEY={SENDGRID}", SENDGRID, "sendgrid_key"),
    (f"send mail with {SENDGRID} today", SENDGRID, "sendgrid_key"),
    (f'{{"sendgrid": "{SENDGRID}"}}', SENDGRID, "sendgrid_key"),
    (f"Authorization: Bearer {SENDGRID}", SENDGRID, "sendgrid_key"),
    # issue 23, item 8 (version 3): a key after a key name and spaces alone, JSON inside a JSON string
    (f"datadog api key {DATADOG}", DATADOG, "assignment"),
    (f"heroku api key {HEROKU} for the deploy", HEROKU, "assignment"),
    (f"DD_APP_KEY\t{DATADOG}", DATADOG, "assignment"),
    (f"the newrelic license key {DATADOG}.", DATADOG, "assignment"),
    (f"herokuApiKey {HEROKU.upper()}", HEROKU.upper(), "assignment"),
    ('{\\"password\\": \\"hunter2-secret\\"}', "hunter2-secret", "assignment"),
    ('"{\\"api_key\\":\\"abc123def456\\",\\"user\\":\\"bob\\"}"', "abc123def456", "assignment"),
    ('{\\"token\\": \\"qwertyuiop\\"}', "qwertyuiop", "assignment"),
    (f'{{\\"datadog_key\\": \\"{DATADOG}\\"}}', DATADOG, "assignment"),
    ('{\\"client_secret\\": \\"Zx9\\\\\\"quoted\\"}', "quoted", "assignment"),  # an inner \"
    ("{\\'password\\': \\'hunter2x\\'}", "hunter2x", "assignment"),
    (f"key          : {DATADOG}", DATADOG, "assignment"),  # the pre-filter looked 8 characters ahead
    (f"Authorization: Basic {BASIC_SHORT}", BASIC_SHORT, "basic_credentials"),
    (f"the ci creds are {BASIC_SHORT}", BASIC_SHORT, "basic_credentials"),
    (f"basic auth header {BASIC_PADDED}", BASIC_PADDED, "basic_credentials"),
    ("Authorization: basic dTpwdw==", "dTpwdw==", "basic_credentials"),
    (f'"auth": "Basic {BASIC_SHORT}"', BASIC_SHORT, "assignment"),  # a quoted value goes whole
    ("mysql -u root -pS3cr3tPw app", "S3cr3tPw", "command_password"),
    ("mysqldump -h db -uadmin -p'hunter 2' shop > dump.sql", "hunter 2", "command_password"),
    ("sshpass -p 'hunter2' ssh -p 22 deploy@host", "hunter2", "command_password"),
    ("sshpass -p hunter2x scp a b", "hunter2x", "command_password"),
    ("sshpass -phunter2x ssh host", "hunter2x", "command_password"),
    ("curl -u alice:s3cret https://api.example.com", "alice:s3cret", "command_password"),
    ("curl -s --user bob:hunter2x https://api.example.com/x", "bob:hunter2x", "command_password"),
    ("curl -ualice:letmein https://h", "alice:letmein", "command_password"),
    ("psql --password s3cretpw -h db", "s3cretpw", "command_password"),
    # high_entropy
    (f"rotate {BASE64_40} in the vault", BASE64_40, "high_entropy"),
    (f"use {OPAQUE[0]} as the session id", OPAQUE[0], "high_entropy"),
    (f"signed url ...?sig={URLSAFE_64}&exp=1", URLSAFE_64, "high_entropy"),
    (f"AccountKey={BASE64_88};EndpointSuffix=core.windows.net", BASE64_88, "high_entropy"),
    (f"- webhook signing value: {fake(24, seed=150)}", fake(24, seed=150), "high_entropy"),
    (f"blob '{BASE64_40}'", BASE64_40, "high_entropy"),
]

NEGATIVE_CASES = [
    "fix the bug introduced in da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "git show 3f786850e387550fdab836ed7e6dc881de23001b --stat",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches",
    "SHA256: E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
    "task 3f2a9c1e-8b7d-4c6a-9e5f-1a2b3c4d5e6f is done",
    "request id 550E8400-E29B-41D4-A716-446655440000",
    "ids: 9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d, 1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed",
    "edit /usr/local/lib/python3.11/site-packages/intent_loop/redact.py",
    "the crash is in src/components/Header2/index.tsx line 42",
    r"open C:\Users\Alice\Documents\QuarterlyReport2024Final.docx",
    "def redact(text: str) -> str:",
    "token = tokens[0]",
    "password = getpass.getpass()",
    "self.token = token",
    "if token is None:",
    "def login(password: str, token: str | None = None):",
    "max_tokens = 4096",
    'secret = os.environ["SECRET"]',
    'headers["Authorization"] = f"Bearer {token}"',
    "const apiKey = process.env.API_KEY;",
    "fetch(url, { headers: { Authorization: token } })",
    "class AbstractSingletonProxyFactoryBean extends HTTPSConnectionPool2Handler {}",
    "pip install scikit-learn (imported as sklearn; people say sk-learn)",
    "close task-123 and ask-me-anything thread",
    "set npm_config_cache and call hf_hub_download from huggingface_hub",
    "see https://github.com/openai/codex/issues/29131 for details",
    "GET http://localhost:8080/api/v1/users?id=42&page=2",
    "git clone git@github.com:org/repo.git && ssh://git@host:22/repo",
    "reset the password flow so users get an email",
    "Rotate the API token after the incident review.",
    "We should never log the secret or the token.",
    "The author of this module prefers small functions.",
    "use bearer tokens for auth, see RFC 6750 (Bearer authentication)",
    "token: ${TOKEN}",
    "password: <your-password-here>",
    "API_KEY=$API_KEY",
    '"password": ""',
    "token: none",
    "password = None",
    'secret: "***"',
    "api_key: {{ secrets.API_KEY }}",
    "password: true",
    'token = "[REDACTED:github_token]"',
    "upgrade to Python 3.11.7 and codex 0.169.0 (v1.2.3-rc.1+build.20240101)",
    "aGVsbG8= d29ybGQ= dGVzdA== base64 of short words",
    "test_redact_leaves_long_snake_case_identifiers_alone_even_when_they_are_long",
    "MAX_RETRY_COUNT_FOR_UPLOADS_2024 = 3",
    "npm i @types/node @openai/codex@0.169.0 eslint-plugin-react-hooks",
    "token_count: 12345678",
    "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR4M1XZ3X8fYy3oeBA==",
    "| col | value |\n|---|---|\n| timeout | 30s |",
    "the quick brown fox jumps over the lazy dog; nothing to see here.",
    "read ~/.codex/sessions/2026/11/30/rollout-2026-11-30T07-02-50-01a22b43-73c0-7793-8e50-f1583941ed4b.jsonl",
    "otherwise `$PLUGIN_DATA/intent-loop/v1` as the seed says",
    "moved to quarantine/20260101T000000Z-0a1b2c3d-torn-tail.json",
    "the header is `Authorization: Bearer AuthenticationScheme` in the RFC prose",
    "see node_modules/@babel/core/lib/config/files/ModuleTypes2Resolver.js",
    "def f(token: str, password: bytes, auth: Optional[str] = None):",
    '{"token": token, "secret": secret_value}',
    "auth = handler",
    "token: expired",
    "the key is in the drawer",
    "sorted(items, key=len)",
    "monkey: banana",
    "primary key: id",
    "ssh -p 2222 deploy@host && mkdir -p build",
    "mysql -p shop (it asks for the password)",
    'sshpass -p "$SSHPASS" ssh host',
    "sshpass -f ~/.pw ssh -p 22 host",
    "curl -u alice https://api.example.com",
    'curl -u "$USER:$TOKEN" https://api.example.com',
    "curl -sS -o out.json https://example.com/x",
    "psql --password -h db",
    "Makefile JavaScript TypeScript PostgreSQL Kubernetes",
    "the cache_key is name:version",
    "SG.dependency module",
    # version 3's spaced key: only a hex key or a UUID, not after a key that is no secret
    "primary key 3f2a9c1e-8b7d-4c6a-9e5f-1a2b3c4d5e6f",
    "the cache_key e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "gpg --recv-key 9DC858229FC7DD38854AE2D88D81803C0EBFCD88",
    "idempotencyKey 550e8400-e29b-41d4-a716-446655440000",
    "key 12345678901234567890123456789012 is a number",
    "press any key 0123456789abcdef to continue",
    "api key abcdef0123456789",
    '{\\"key\\": \\"name\\"}',
    '{\\"token\\": \\"${TOKEN}\\"}',
    '{\\"password\\": \\"\\"}',
    'print("{\\"token\\": %s}" % token)',
]


@pytest.mark.parametrize(("text", "secret", "kind"), POSITIVE_CASES)
def test_secret_is_replaced_by_its_typed_marker(text, secret, kind):
    redacted = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert has_secret(text)
    assert redact(redacted) == redacted


def test_positive_table_covers_every_kind_several_times():
    counts = {kind: sum(1 for _text, _secret, case_kind in POSITIVE_CASES if case_kind == kind) for kind in KINDS}
    assert len(POSITIVE_CASES) >= 80
    assert min(counts.values()) >= 4, counts


@pytest.mark.parametrize("text", NEGATIVE_CASES)
def test_ordinary_text_survives_unchanged(text):
    assert redact(text) == text
    assert not has_secret(text)


def test_negative_table_is_large_enough():
    assert len(NEGATIVE_CASES) >= 40


def test_assignment_keeps_the_key_and_quotes():
    assert redact('password = "hunter2x"') == 'password = "[REDACTED:assignment]"'
    assert redact('{"api_key": "abc123def456"}') == '{"api_key": "[REDACTED:assignment]"}'
    assert redact("GITHUB_TOKEN=abc12345 make") == "GITHUB_TOKEN=[REDACTED:assignment] make"


def test_url_credentials_keep_scheme_and_host():
    assert redact("see https://alice:S3cret@example.com/x") == "see https://[REDACTED:url_credentials]@example.com/x"
    assert redact("https://alice@example.com/x") == "https://alice@example.com/x"  # no password: nothing to hide


def test_a_redaction_leaves_no_fragment_of_the_secret():
    assert redact("my password is tr0ub4dor&3") == "my password is [REDACTED:assignment]"
    assert redact(f"key {SENDGRID} here") == "key [REDACTED:sendgrid_key] here"  # the id goes with the secret
    assert redact("curl -u alice:s3cret https://h") == "curl -u [REDACTED:command_password] https://h"
    assert redact("sshpass -p 'hunter 2' ssh -p 22 h") == "sshpass -p [REDACTED:command_password] ssh -p 22 h"


def test_values_end_where_a_query_or_cookie_goes_on():
    assert redact("GET /x?token=a1b2c3&page=2") == "GET /x?token=[REDACTED:assignment]&page=2"
    assert redact("Cookie: auth=a1b2c3;Path=/") == "Cookie: auth=[REDACTED:assignment];Path=/"
    assert redact("token: a1b2c3, then go") == "token: [REDACTED:assignment], then go"


def test_generic_key_needs_a_generated_value():
    assert redact(f"DD_APP_KEY={DATADOG}") == "DD_APP_KEY=[REDACTED:assignment]"
    for text in ("key = 'name'", "sort(key=str.lower)", "key: 2026-01-01T00:00:00Z", "key: v1.2.3-build.2024"):
        assert redact(text) == text


def test_private_key_without_end_is_redacted_to_the_end_of_the_text():
    text = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nafter the paste"
    assert redact(text) == "before\n[REDACTED:private_key]"


def test_two_private_keys_are_redacted_separately():
    text = f"{pem('PRIVATE KEY', PEM_BODY)}\nbetween\n{pem('EC PRIVATE KEY', PEM_LINE)}"
    assert redact(text) == "[REDACTED:private_key]\nbetween\n[REDACTED:private_key]"


def test_public_material_is_not_a_private_key():
    text = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PUBLIC KEY-----\nMIIB"
    assert redact(text) == text


@pytest.mark.parametrize("kind", KINDS)
def test_markers_never_match_a_pattern(kind):
    marker = f"[REDACTED:{kind}]"
    for text in (marker, f"password = {marker}", f'"token": "{marker}"', f"API_KEY={marker}",
                 f"https://{marker}@host", f"Bearer {marker}", f"the token is {marker}", marker * 3,
                 f'{{\\"password\\": \\"{marker}\\"}}', f"datadog api key {marker}", f"key {marker}"):
        assert redact(text) == text


def test_kinds_are_unique_and_markers_hold_only_a_kind():
    assert len(set(KINDS)) == len(KINDS)
    everything = "\n".join(text for text, _secret, _kind in POSITIVE_CASES)
    assert set(MARKER.findall(redact(everything))) <= set(KINDS)


def test_ids_containing_a_credential_are_detected():
    assert has_secret(f"session-{GITHUB['p']}")
    assert redact(f"session-{GITHUB['p']}") == "[REDACTED:high_entropy]"  # glued: not at a ghp_ prefix
    assert not has_secret("3f2a9c1e-8b7d-4c6a-9e5f-1a2b3c4d5e6f")
    assert not has_secret("turn_0194c2f1e7a47c3b9d5e8f6a1b2c3d4e")


# Property tests ---------------------------------------------------------------------------------

TOKEN_SECRETS = [*ANTHROPIC, OPENAI_LEGACY, OPENAI_PROJECT, OPENAI_SERVICE, OPENAI_ADMIN, *GITHUB.values(), GITHUB_PAT,
                 AWS_ACCESS, AWS_SESSION, *GOOGLE, SLACK_BOT, SLACK_USER, SLACK_APP, SLACK_LEGACY, *STRIPE.values(),
                 *NPM, *HUGGINGFACE, *JWTS, *OPAQUE, BASE64_40, BASE64_88, URLSAFE_64, *SHOPIFY.values(),
                 *DIGITALOCEAN.values(), *AGE, SENDGRID]
# The shortest match of each prefixed family, and a barely long mixed run: the pre-filter must notice them.
MINIMAL_SECRETS = ["sk-" "ant-" + "a" * 19 + "1", "sk-" + "a" * 19 + "1", "gh" "p_" + "a" * 30,
                   "github" "_pat_" + "a" * 22,
                   "AKIA" + "A" * 16, "AIza" + "a" * 35, "xo" "xb-" + "1" * 12, "sk" "_live_" + "a" * 16,
                   "np" "m_" + "a" * 36, "h" "f_" + "a" * 30, "eyJ" + "a" * 13 + "." + "b" * 10 + ".",
                   "aB3" + "cdefghij" * 3, "shp" "at_" + "a" * 32, "do" "p_v1_" + "a" * 64,
                   "AGE-SECRET" "-KEY-1" + "Q" * 58, "S" "G." + "a" * 22 + "." + "b" * 43, "dTpwdw==", "YTpiYw=="]
SECRET_SAMPLES = TOKEN_SECRETS + MINIMAL_SECRETS + [
    pem("RSA PRIVATE KEY", PEM_BODY), pem("PRIVATE KEY", PEM_LINE, newline=" "), "https://u:pw123@h.example",
    "Bearer " + OPAQUE[1], "Bearer ab12.cd34.ef56.gh78", "Authorization: Basic dXNlcjpwYXNz9w==",
    'password="x1y2z3"', "API_KEY=abc", "token: 1a2b3c4d", "the secret is s3cr3t!", "apiKey: 'q1w2e3'",
    "passwd=pa55", "auth: 'abc'", "Credential = \"x9y8z7\"", "x-access-key: k3y!",
    f"private_key_id: {GCP_KEY_ID}", "token: qwertyuiop", "token=abcd", f"DD_APP_KEY={DATADOG}", f"key: {HEROKU}",
    "my password is tr0ub4dor&3", "Basic dTpw", BASIC_SHORT, "mysql -pS3cret db", "sshpass -p pw1 ssh -p 22 h",
    "sshpass -ppw1 ssh", "curl -u a:pw1 h", "curl --user=a:pw1", "--password pw1",
    f"datadog api key {DATADOG}", f"heroku api key {HEROKU}", f"key\t{DATADOG}", '{\\"password\\": \\"hunter2x\\"}',
    f'\\"datadog_key\\":\\"{DATADOG}\\"', "\\'token\\': \\'a1b2c3\\'", f"key          : {DATADOG}",
]
WORDS = ["the", "token", "password", "key", "secret", "auth", "Bearer", "is", "none", "sk", "ghp", "AKIA", "eyJ",
         "-----BEGIN", "PRIVATE KEY-----", "-----END", "https", "://", "user", "@", "host", "API_KEY", "${TOKEN}",
         "[REDACTED:jwt]", "REDACTED", "hex", "da39a3ee5e6b4b0d3255bfef95601890afd80709", "xoxb", "hf", "npm",
         "key", "KEY", "Basic", "basic", "mysql", "-p", "sshpass", "curl", "-u", "--user", "--password", "SG.",
         "shpat_", "dop_v1_", "AGE-SECRET-KEY-1", "&", ",", ";", "qwertyuiop", "str", "is", "\\\"", "\\'",
         "\\\\", "api key", "primary", " ", DATADOG, HEROKU]
PUNCTUATION = list(" \n\t=:;,.'\"/@-_+()[]{}<>$*")


def fragments(text):
    return st.tuples(st.integers(0, len(text)), st.integers(0, len(text))).map(lambda ab: text[min(ab):max(ab)])


CASE_CHANGES = (str.upper, str.lower, str.swapcase, str.title)
# Characters whose lower case leaves or enters ASCII or changes length, or that split runs as whitespace.
UNICODE_TRAPS = ["\u0130", "\u212a", "\u017f", "\ufb00", "\u00e9", "\u3000", "\u00a0", "\u2028", "\u0131"]

pieces = st.one_of(
    st.sampled_from(SECRET_SAMPLES),
    st.tuples(st.sampled_from(SECRET_SAMPLES + WORDS),
              st.sampled_from(CASE_CHANGES)).map(lambda pair: pair[1](pair[0])),
    st.sampled_from(UNICODE_TRAPS),
    st.sampled_from(SECRET_SAMPLES).flatmap(fragments),
    st.sampled_from(WORDS),
    st.sampled_from(PUNCTUATION),
    st.text(alphabet=ALNUM + "+/=_-", max_size=30),
    st.text(max_size=5),
)
texts = st.lists(pieces, max_size=12).map("".join)


def test_prefilter_never_clears_a_sample_or_any_piece_of_one():
    for sample in SECRET_SAMPLES + WORDS:
        for variant in {change(sample) for change in CASE_CHANGES} | {sample}:
            for piece in _pieces_of(variant):
                if not redact_module._may_contain_secret(piece):
                    assert redact_module._apply_patterns(piece) == piece


@pytest.mark.parametrize("trap", [("i", "\u0130"), ("k", "\u212a"), ("s", "\u017f"), ("K", "\u212a")])
def test_prefilter_folds_case_exactly_like_the_patterns(trap):
    plain, lookalike = trap
    for keyword in secret_rules.ASSIGNMENT_KEYWORDS + ("bearer", "authorization: basic"):
        for text in (f"{keyword.replace(plain, lookalike)}=abc123",
                     f"{keyword.replace(plain, lookalike)} a1b2c3d4e5f6g7h8"):
            if not redact_module._may_contain_secret(text):
                assert redact_module._apply_patterns(text) == text


def _pieces_of(text):
    """Every prefix and suffix, and the substrings of up to 48 characters at every third offset."""
    yield from (text[:end] for end in range(len(text) + 1))
    yield from (text[start:] for start in range(len(text)))
    yield from (text[start:start + size] for size in range(1, 49) for start in range(0, len(text) - size + 1, 3))


@settings(max_examples=400, deadline=None)
@given(texts)
def test_redaction_is_idempotent(text):
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=400, deadline=None)
@given(texts)
def test_nothing_matching_a_pattern_survives(text):
    assert has_secret(redact(text)) is False


@settings(max_examples=1000, deadline=None)
@given(texts)
def test_prefilter_never_clears_a_text_the_patterns_would_change(text):
    cleared = not redact_module._may_contain_secret(text)
    event(f"pre-filter cleared: {cleared}")
    if cleared:
        assert redact_module._apply_patterns(text) == text


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TOKEN_SECRETS), st.lists(st.sampled_from(WORDS + PUNCTUATION), max_size=6).map("".join),
       st.sampled_from([" ", "\n", " - ", "; ", "\t"]))
@example(AGE[0], "AGE-SECRET-KEY-1", " ")  # found in CI: the context holds the key's own prefix
def test_markers_hold_no_part_of_the_secret(secret, context, gap):
    redacted = redact(f"{context}{gap}{secret}{gap}{context}")
    assert secret not in redacted
    assert set(MARKER.findall(redacted)) <= set(KINDS)
    without_markers = MARKER.sub("", redacted)
    # a piece the context itself holds (the words "AGE-SECRET-KEY-1" around an age key) is the
    # surrounding text, not a leak
    pieces = (secret[i:i + 12] for i in range(len(secret) - 11))
    assert not any(piece in without_markers and piece not in context for piece in pieces)


# False positives and speed ----------------------------------------------------------------------

CORPUS_MODULES = """argparse ast base64 bisect calendar cmd codecs configparser contextlib copy csv dataclasses
datetime difflib dis enum fileinput fnmatch fractions ftplib functools getopt getpass gettext glob gzip hashlib
heapq hmac imaplib inspect ipaddress linecache mailbox netrc ntpath optparse os pathlib pickle platform plistlib
poplib posixpath pprint random secrets shlex shutil smtplib socket ssl statistics string subprocess tarfile
tempfile textwrap threading tokenize traceback typing uuid warnings zipfile http/client http/cookiejar
urllib/request urllib/parse email/utils logging/__init__ json/decoder unittest/mock""".split()
# A broken pattern changes whole percents of these lines; the tuned module changes a few in 100,000.
MAX_FALSE_POSITIVE_RATE = 0.002


def test_false_positive_rate_on_stdlib_sources():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = [stdlib / f"{name}.py" for name in CORPUS_MODULES if (stdlib / f"{name}.py").is_file()]
    if len(sources) < 50:
        pytest.skip(f"only {len(sources)} stdlib sources found under {stdlib}")
    lines = [line for path in sources for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    changed = [line for line in lines if redact(line) != line]
    rate = len(changed) / len(lines)
    print(f"\nfalse positives: {len(changed)} of {len(lines)} lines in {len(sources)} stdlib modules = {rate:.4%}")
    for line in changed:
        print("  ", line.strip()[:120])
    assert rate < MAX_FALSE_POSITIVE_RATE


ORDINARY_PROMPT = (
    "Please refactor the ledger module so that append() takes a keyword-only deadline, then update the tests "
    "in tests/storage/test_ledger.py and make sure the README explains the new error code; keep the public API stable "
    "and do not touch the hooks. Run the suite and tell me what changed."
)


def test_ordinary_prompt_takes_the_fast_path():
    assert not redact_module._may_contain_secret(ORDINARY_PROMPT)
    started = time.perf_counter()
    for _ in range(1000):
        assert redact(ORDINARY_PROMPT) is ORDINARY_PROMPT
    elapsed = time.perf_counter() - started
    print(f"\n{len(ORDINARY_PROMPT)}-character prompt: {elapsed * 1000:.1f} us per redact (fast path)")
    assert elapsed < 1.0  # measured ~15 ms for all 1000


def test_three_megabytes_of_secrets_finish_quickly():
    rng = random.Random(5)
    lines, size = [], 0
    while size < 3_000_000:
        line = f"note {rng.choice(SECRET_SAMPLES)} then\n"
        lines.append(line)
        size += len(line)
    text = "".join(lines)
    started = time.perf_counter()
    redacted = redact(text)
    elapsed = time.perf_counter() - started
    print(f"\n3 MB of secrets: {elapsed:.2f} s")
    assert elapsed < 3.0  # measured ~0.3 s
    assert not any(secret in redacted for secret in (OPENAI_PROJECT, GITHUB["p"], JWTS[0], BASE64_40))


@pytest.mark.parametrize("unit", ["-----BEGIN ", "-----BEGIN PRIVATE KEY-----\n", "a=", "token=", "password=\"",
                                  "password='\\", "token is ", "x://a:", "http://a:b@", "bearer ", "sk-", "aB3",
                                  "eyJ.", "eyJ-", "github_pat_", "A", "key=", "key:", "token:", "token:a.",
                                  "TOKEN=ab=", "mysql -p", "curl -u a:", "sshpass -p ", "--password ", "SG.",
                                  "basic ", "dTpwdw==", "token=a&", "key ", "key\t", "key 0", "key 0a",
                                  "key 0123456789abcdef", "key 00000000-0000-", "api key 0a1b2c3d-",
                                  '\\"password\\": \\"', '{\\"token\\":\\"a\\\\', "\\'secret\\': \\'",
                                  '\\"key\\": \\"', 'token:\\"\\\\', "key\\'", 'password\\"'])
def test_adversarial_input_is_linear(unit):
    text = unit * (3_000_000 // len(unit))
    started = time.perf_counter()
    redact(text)
    elapsed = time.perf_counter() - started
    assert elapsed < 10.0, f"{unit!r}: {elapsed:.2f} s"  # measured 0.2-2 s; quadratic would take hours


# A key name or an opened value, then 3 MB of what keeps a match going or makes it fail late.
@pytest.mark.parametrize(("head", "filler"), [('{\\"password\\": \\"', "\\"), ('{\\"password\\": \\"', "a"),
                                             ('\\"key\\": \\"', "0a"), ("datadog api key", " "), ("key ", "0"),
                                             ("key", "\t "), ("key ", "0a1b2c3d-"), ("token\\", " ")])
def test_adversarial_tail_is_linear(head, filler):
    text = head + filler * (3_000_000 // len(filler))
    started = time.perf_counter()
    redact(text)
    elapsed = time.perf_counter() - started
    assert elapsed < 10.0, f"{head!r} + {filler!r}: {elapsed:.2f} s"


# The rules as released before version 2: `redact(text, version=1)` must reproduce them exactly, or
# a prompt retried across the upgrade would get a new request id and be recorded twice.
VERSION_1_COMMIT = "981fef67cd244c8be19b41b90bb8bac4ed586f9c"


def _released_version_1():
    return _released(VERSION_1_COMMIT, 1)


def _released(commit, version):
    try:
        source = subprocess.run(["git", "show", f"{commit}:lib/intent_loop/redact.py"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip(f"the git history holding redaction version {version} is not available")
    module = types.ModuleType(f"released_redact_v{version}")
    exec(compile(source, f"released_redact_v{version}", "exec"), module.__dict__)
    return module


def test_version_1_reproduces_the_released_rules():
    released = _released_version_1()
    texts = [text for text, _secret, _kind in POSITIVE_CASES] + NEGATIVE_CASES + SECRET_SAMPLES + WORDS
    rng = random.Random(14)
    texts += [" ".join(rng.choice(SECRET_SAMPLES + WORDS + PUNCTUATION) for _ in range(8)) for _ in range(2000)]
    assert [redact(text, version=1) for text in texts] == [released.redact(text) for text in texts]
    assert redact("token: qwertyuiop", version=1) == "token: qwertyuiop"  # a version 2 rule




@pytest.mark.parametrize(("text", "leaked"), ISSUE_14_LEAKS)
def test_version_2_redacts_what_version_1_left(text, leaked):
    assert leaked in redact(text, version=1)
    assert leaked not in redact(text)


# The rules as released before version 3 (issue 23): `redact(text, version=2)` reproduces them,
# pre-filter included, for the former request id of a prompt retried across the upgrade.
VERSION_2_COMMIT = "fb45b480b9516a60104b72898ba789d11e0252a8"


def test_version_2_reproduces_the_released_rules():
    released = _released(VERSION_2_COMMIT, 2)
    assert released.VERSION == 2
    texts = ([text for text, _secret, _kind in POSITIVE_CASES] + NEGATIVE_CASES + SECRET_SAMPLES + WORDS
             + [text for text, _leaked in ISSUE_23_LEAKS])
    rng = random.Random(23)
    texts += [" ".join(rng.choice(SECRET_SAMPLES + WORDS + PUNCTUATION) for _ in range(8)) for _ in range(2000)]
    texts += ["".join(rng.choice(SECRET_SAMPLES + WORDS + PUNCTUATION) for _ in range(8)) for _ in range(2000)]
    assert [redact(text, version=2) for text in texts] == [released.redact(text) for text in texts]
    assert [redact(text, version=1) for text in texts] == [released.redact(text, version=1) for text in texts]


# Issue 23, item 8: (text, what version 2 left of the secret).
ISSUE_23_LEAKS = [
    (f"datadog api key {DATADOG}", DATADOG), (f"heroku api key {HEROKU}", HEROKU),
    (f"DD_APP_KEY {DATADOG} make", DATADOG), (f"heroku_api_key\t{HEROKU}", HEROKU),
    ('{\\"password\\": \\"hunter2-secret\\"}', "hunter2-secret"),
    ('"{\\"api_key\\": \\"abc123def456\\"}"', "abc123def456"),
    ('{\\"token\\":\\"qwertyuiop\\"}', "qwertyuiop"),
    (f'{{\\"datadog_key\\": \\"{DATADOG}\\"}}', DATADOG),
    ("{\\'secret\\': \\'s3cr3t-value\\'}", "s3cr3t-value"),
    (f"key          : {DATADOG}", DATADOG),  # released pre-filter: `key` then 9 spaces was cleared
]


@pytest.mark.parametrize(("text", "leaked"), ISSUE_23_LEAKS)
def test_version_3_redacts_what_version_2_left(text, leaked):
    assert leaked in redact(text, version=2)
    assert leaked not in redact(text)
    assert redact_module.VERSION == 3


# Every separator the assignment rule accepts between a key name and its value: a closing quote of
# the key (plain or escaped), spaces and tabs, an operator, spaces and tabs; ` is `; and, for a key
# name ending in `key` before a hex key or a UUID, spaces or tabs alone. Each with every value quote.
KEY_QUOTES = ["", '"', "'", '\\"', "\\'"]
OPERATORS = ["=", ":", ":=", "=>"]
GAPS = ["", " ", "\t", "  ", " \t", "\t "]
VALUE_QUOTES = KEY_QUOTES
SEPARATORS = ([(close, before + op + after, value_quote) for close in KEY_QUOTES for before in GAPS
               for op in OPERATORS for after in GAPS for value_quote in VALUE_QUOTES]
              + [("", f"{before}is{after}", value_quote) for before in GAPS[1:] for after in GAPS[1:]
                 for value_quote in VALUE_QUOTES])
SPACED_SEPARATORS = [("", gap, "") for gap in GAPS[1:]]
STRONG_KEYS = secret_rules.ASSIGNMENT_KEYWORDS + ("private_key_id",)
GENERIC_KEYS = ("key", "api key", "datadog api key", "heroku api key", "DD_APP_KEY", "datadog_key", "apiKey",
                "x-api-key", "HEROKU_API_KEY", "app key", "secret key", "access key", "private key", "license key")
CONTEXTS = [("", ""), ("{", "}"), ("config ", " and more"), ("- ", ", next"), ('"{', '}"'), ("", "\n"), ("", ";")]

strong_values = st.text(alphabet=ALNUM + "-_.!@#%*~+/", min_size=8, max_size=40).filter(
    lambda value: any(char.isdigit() for char in value))
uuids = st.tuples(*(st.text(alphabet=HEX, min_size=n, max_size=n) for n in (8, 4, 4, 4, 12))).map("-".join)
hex_keys = st.one_of(st.text(alphabet=HEX, min_size=32, max_size=48), uuids).filter(
    lambda value: any(char.isdigit() for char in value) and any(char.isalpha() for char in value))
generic_values = st.tuples(hex_keys, st.sampled_from((str.lower, str.upper))).map(lambda pair: pair[1](pair[0]))
key_cases = st.sampled_from((str, str.upper, str.lower, str.title))


def assignment(name, separator, value, context):
    close, gap, value_quote = separator
    before, after = context
    # the key opens with the quote it closes with, the value closes with the one it opens with
    return f"{before}{close}{name}{close}{gap}{value_quote}{value}{value_quote}{after}"


def assert_value_is_gone(text, name, value):
    redacted = redact(text)
    assert value not in redacted, (text, redacted)
    assert name in redacted and "[REDACTED:" in redacted, (text, redacted)
    assert redact(redacted) == redacted
    assert has_secret(redacted) is False


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(STRONG_KEYS), st.sampled_from(("", "DB_", "x-", "my", "client_")), key_cases,
       st.sampled_from(SEPARATORS), strong_values, st.sampled_from(CONTEXTS))
@example("password", "", str, ("\\\"", ": ", '\\"'), "hunter2-secret", ("{", "}"))
def test_a_secret_key_value_never_survives_any_separator(keyword, prefix, case, separator, value, context):
    name = case(prefix + keyword)
    assert_value_is_gone(assignment(name, separator, value, context), name, value)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(GENERIC_KEYS), st.one_of(st.sampled_from(SEPARATORS), st.sampled_from(SPACED_SEPARATORS)),
       generic_values, st.sampled_from(CONTEXTS))
@example("datadog api key", ("", " ", ""), "0123456789abcdef0123456789abcdef", ("", ""))
@example("heroku api key", ("", " ", ""), "12345678-1234-1234-1234-123456789abc", ("", ""))
def test_a_key_never_survives_any_separator(name, separator, value, context):
    assert_value_is_gone(assignment(name, separator, value, context), name, value)


def test_every_separator_once():
    """Not a sample: each of the separators above, with a strong and a generic key name."""
    for separator in SEPARATORS + SPACED_SEPARATORS:
        for name, value in (("datadog api key", DATADOG), ("heroku_api_key", HEROKU), ("key", DATADOG.upper())):
            assert_value_is_gone(assignment(name, separator, value, ("{", "}")), name, value)
        if separator not in SPACED_SEPARATORS:
            for name in ("password", "DB_PASSWORD", "x-auth-token", "apiKey"):
                assert_value_is_gone(assignment(name, separator, "s3cr3t!value", ("{", "}")), name, "s3cr3t!value")
    assert len(SEPARATORS + SPACED_SEPARATORS) == 5 * 6 * 4 * 6 * 5 + 5 * 5 * 5 + 5


PROSE_CORPUS = "pydoc_data/topics.py"  # the Python language reference and library topics, as prose


def test_false_positive_rate_on_prose():
    path = Path(sysconfig.get_paths()["stdlib"]) / PROSE_CORPUS
    if not path.is_file():
        pytest.skip(f"{path} is not installed")
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    changed = [line for line in lines if redact(line) != line]
    rate = len(changed) / len(lines)
    print(f"\nfalse positives: {len(changed)} of {len(lines)} prose lines = {rate:.4%}")
    assert len(lines) > 10_000
    assert rate < MAX_FALSE_POSITIVE_RATE


def test_import_does_not_load_re():
    """Ordinary text is cleared by the pre-filter: neither `re` nor the patterns' module load."""
    code = ("import sys; sys.path.insert(0, 'lib'); import intent_loop.redaction.redact as r; "
            "r.redact('please fix the flaky test in tests/storage/test_ledger.py'); "
            "print('re' in sys.modules, 'intent_loop.redaction.passes' in sys.modules)")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False False"
