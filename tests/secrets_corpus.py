"""The credential detector's corpus: credential shapes that must be refused, and benign
technical text that must pass. `tests/storage/test_secrets_corpus.py` holds the detector to its
targets over it; `bench/secrets_corpus.py` prints the figures quoted in docs/reliability.md.

EVERY CREDENTIAL HERE IS FAKE. Each is built when this module is imported, from a fixed
random seed, in the shape of the real thing (prefix, length, alphabet), so that no
credential-shaped literal sits in this repository for a scanner (memstore's own lint,
detect-secrets, a forge's push protection) to trip over. The few literal values are the
documented examples the issue names, split so that no line holds one whole.
"""

from __future__ import annotations

import base64
import random
import string

_rng = random.Random(20261130)

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def fake(n: int, alphabet: str = ALNUM) -> str:
    """`n` random characters of `alphabet` (never a run of x's, which reads as a placeholder)."""
    return "".join(_rng.choice(alphabet.replace("x", "").replace("X", "")) for _ in range(n))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _pem(kind: str = "RSA PRIVATE KEY") -> str:
    body = "\n".join(fake(64, B64) for _ in range(4))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def _uuid() -> str:
    return f"{fake(8, HEX)}-{fake(4, HEX)}-{fake(4, HEX)}-{fake(4, HEX)}-{fake(12, HEX)}"


def _jwt() -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = '{"sub":"' + fake(10, string.digits) + '","name":"svc","iat":1516239022}'
    payload = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    return f"{head}.{payload}.{fake(43, URLSAFE)}"


# AWS's documented example keys (split over two literals): public, never valid, so they pass.
AWS_DOC_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
AWS_DOC_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"

_gh = "ghp_" + fake(36)
_gh_classic = fake(40, HEX)
_split_at = 18

CREDENTIALS: list[tuple[str, str]] = [
    # -- issue #11 item 15, verbatim shapes
    ("aws secret in ini", "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "ZQ3KE8"),
    ("env password", "DB_PASSWORD=" + "Xk9vTq2LmP"),
    ("redis url, empty user", "cache at redis://:" + "p4ss@h"),
    ("yaml password starting with $", "password: " + "$uperS3cret!x"),
    ("base64-wrapped private key", f"tls.key: {b64(_pem())}"),
    ("base64-wrapped aws key id", f"data:\n  aws: {b64('AKIA' + fake(16, UPPER_ALNUM))}"),
    ("github token split over lines", f"token: {_gh[:_split_at]}\n      {_gh[_split_at:]}"),
    ("jwt split with backslash", f'curl -H "X-Auth: {_jwt()[:30]}\\\n{_jwt()[30:]}"'),
    ("uppercase url scheme", "POSTGRES://admin:" + fake(10) + "@db.internal:5432/app"),
    ("uppercase https scheme", "HTTPS://deploy:" + fake(12) + "@git.example.com/repo.git"),
    ("basic auth header", f"Authorization: Basic {b64('admin:' + fake(12))}"),
    ("curl -u", f"curl -u ops:{fake(12)} https://api.example.com/v1/jobs"),
    ("classic github token in env", f"GITHUB_TOKEN={_gh_classic}"),
    ("classic github token in url", f"git clone https://{fake(40, HEX)}@github.com/acme/app.git"),
    ("classic github token header", f"-H 'Authorization: token {fake(40, HEX)}'"),
    ("npm token", "npm_" + fake(36)),
    ("npmrc auth token", f"//registry.npmjs.org/:_authToken=npm_{fake(36)}"),
    (
        "npmrc legacy uuid token",
        f"//registry.npmjs.org/:_authToken={fake(8, HEX)}-{fake(4, HEX)}"
        f"-{fake(4, HEX)}-{fake(4, HEX)}-{fake(12, HEX)}",
    ),
    ("pypi token", "pypi-AgEIcHlwaS5vcmc" + fake(70, URLSAFE)),
    (
        "pypirc password",
        f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{fake(60, URLSAFE)}",
    ),
    ("sendgrid key", f"SENDGRID={'SG.' + fake(22, URLSAFE) + '.' + fake(43, URLSAFE)}"),
    (
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;"
        f"AccountKey={fake(86, B64)}==;EndpointSuffix=core.windows.net",
    ),
    (
        "azure sas url",
        "https://acme.blob.core.windows.net/c/f.zip?sv=2022-11-02&ss=b&srt=o"
        f"&sp=r&se=2026-12-01T00:00:00Z&sig={fake(43, ALNUM)}%3D",
    ),
    ("azure ad client secret", f"AZURE_CLIENT_SECRET={fake(3)}8Q~{fake(34, URLSAFE + '~.')}"),
    (
        "azure service bus key",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;"
        f"SharedAccessKey={fake(43, B64)}=",
    ),
    ("twilio api key", "SK" + fake(32, HEX)),
    ("twilio auth token", f"TWILIO_AUTH_TOKEN={fake(32, HEX)}"),
    (
        "slack app token",
        f"xapp-1-A0{fake(9, UPPER_ALNUM)}-{fake(13, string.digits)}-{fake(64, HEX)}",
    ),
    ("slack bot token", f"xoxb-{fake(12, string.digits)}-{fake(13, string.digits)}-{fake(24)}"),
    ("slack config token", f"xoxe.xoxp-1-{fake(60)}"),
    (
        "slack webhook",
        "https://hooks.slack.com/services/"
        f"T{fake(8, UPPER_ALNUM)}/B{fake(8, UPPER_ALNUM)}/{fake(24)}",
    ),
    # -- cloud and platform tokens
    ("aws access key id", "AKIA" + fake(16, UPPER_ALNUM)),
    ("aws session token", f"AWS_SESSION_TOKEN={'IQoJb3JpZ2luX2Vj' + fake(200, B64)}"),
    ("google api key", "AIza" + fake(35, URLSAFE)),
    ("google oauth client secret", "GOCSPX-" + fake(28, URLSAFE)),
    ("google oauth access token", "ya29." + fake(80, URLSAFE)),
    (
        "gcp service account json",
        '{"type": "service_account", "private_key": "'
        + _pem("PRIVATE KEY").replace("\n", "\\n")
        + '"}',
    ),
    ("github oauth token", "gho_" + fake(36)),
    ("github app token", "ghs_" + fake(36)),
    ("github fine-grained pat", "github_pat_" + fake(22) + "_" + fake(59)),
    ("gitlab pat", "glpat-" + fake(20, URLSAFE)),
    ("gitlab runner token", "glrt-" + fake(20, URLSAFE)),
    ("gitlab private-token header", f"PRIVATE-TOKEN: glpat-{fake(20, URLSAFE)}"),
    ("stripe live key", "sk_live_" + fake(24)),
    ("stripe restricted key", "rk_live_" + fake(24)),
    ("stripe webhook secret", "whsec_" + fake(32)),
    ("openai project key", "sk-proj-" + fake(48, URLSAFE)),
    ("openai legacy key", "sk-" + fake(20) + "T3BlbkFJ" + fake(20)),
    ("anthropic key", f"ANTHROPIC_API_KEY=sk-ant-api03-{fake(93, URLSAFE)}AA"),
    ("hugging face token", "hf_" + fake(34, string.ascii_letters)),
    ("shopify token", "shpat_" + fake(32, HEX)),
    ("digitalocean token", "dop_v1_" + fake(64, HEX)),
    ("databricks token", "dapi" + fake(32, HEX)),
    ("vault token", "hvs." + fake(24, URLSAFE)),
    ("doppler token", "dp.st.prd." + fake(40)),
    ("linear key", "lin_api_" + fake(40)),
    ("postman key", f"PMAK-{fake(24, HEX)}-{fake(34, HEX)}"),
    ("grafana service account token", f"glsa_{fake(32)}_{fake(8, HEX)}"),
    ("telegram bot token", f"bot {fake(9, string.digits)}:AA{fake(33, URLSAFE)}"),
    ("discord bot token", f"M{fake(23, URLSAFE)}.{fake(6, URLSAFE)}.{fake(27, URLSAFE)}"),
    ("mailgun key", "key-" + fake(32, HEX)),
    ("mailchimp key", fake(32, HEX) + "-us14"),
    ("square secret", "sq0csp-" + fake(43, URLSAFE)),
    ("age secret key", "AGE-SECRET-KEY-1" + fake(58, UPPER_ALNUM)),
    ("alibaba key id", "LTAI" + fake(20)),
    ("datadog api key", f"DD_API_KEY={fake(32, HEX)}"),
    (
        "heroku api key",
        f"HEROKU_API_KEY={_uuid()}",
    ),
    ("cloudflare token", f"CLOUDFLARE_API_TOKEN={fake(40, URLSAFE)}"),
    ("okta api token header", f"Authorization: SSWS 00{fake(40, URLSAFE)}"),
    ("jwt", _jwt()),
    ("bearer token", f"Authorization: Bearer {fake(40, URLSAFE)}"),
    # -- private keys
    ("rsa private key", _pem()),
    ("openssh private key", _pem("OPENSSH PRIVATE KEY")),
    ("ec private key", _pem("EC PRIVATE KEY")),
    ("encrypted private key", _pem("ENCRYPTED PRIVATE KEY")),
    ("pgp private key block", _pem("PGP PRIVATE KEY BLOCK")),
    (
        "putty key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n" + fake(44, B64),
    ),
    # -- passwords in config and code
    ("dotenv secret key", f"SECRET_KEY=django-insecure-{fake(40, LOWER_ALNUM + '!@#$%^&*(-_=+)')}"),
    ("jwt secret", f"JWT_SECRET={fake(32)}"),
    ("mysql root password", f"MYSQL_ROOT_PASSWORD={fake(14)}"),
    ("pgpassword", f"PGPASSWORD={fake(12)} psql -h db -U app"),
    ("json password", '{"user": "svc", "password": "Summer2026!' + fake(3) + '"}'),
    ("json client secret", '{"client_id": "web", "client_secret": "' + fake(32, URLSAFE) + '"}'),
    ("yaml nested password", f"db:\n  user: app\n  password: {fake(10)}#{fake(3)}"),
    ("camelCase access token", f'const accessToken = "{fake(32)}";'),
    ("python password", f'password = "correct-horse-{fake(4, string.digits)}"'),
    ("x-api-key header", f"X-API-Key: {fake(32, HEX)}"),
    ("query api key", f"https://api.example.com/v2/data?api_key={fake(24)}&page=2"),
    ("query access token", f"GET /me?access_token={fake(40, URLSAFE)}"),
    ("mongodb srv url", f"mongodb+srv://app:{fake(16)}@cluster0.ab1cd.mongodb.net/prod"),
    ("amqp url", f"amqp://worker:{fake(10)}@mq.internal:5672/"),
    ("smtp url with encoded user", f"smtp://ops%40example.com:{fake(12)}@smtp.example.com:587"),
    ("jdbc password param", f"jdbc:mysql://db:3306/app?user=root&password={fake(12)}"),
    ("sql server connection string", f"Server=db;Database=app;User Id=sa;Password=P@ss{fake(8)};"),
    ("sql create user", f"CREATE USER app WITH PASSWORD '{fake(12)}';"),
    ("mysql identified by", f"ALTER USER 'root'@'%' IDENTIFIED BY '{fake(12)}';"),
    ("mysql -p", f"mysql -u root -p{fake(12)} app < dump.sql"),
    ("docker login -p", f"docker login -u ci -p {fake(16)} registry.example.com"),
    (
        "docker config auth",
        '{"auths": {"registry.example.com": {"auth": "' + b64("ci:" + fake(16)) + '"}}}',
    ),
    ("netrc", f"machine api.example.com login deploy password {fake(14)}"),
    ("sshpass", f"sshpass -p '{fake(12)}' ssh admin@10.0.0.5"),
    ("requests auth tuple", f'requests.get(url, auth=("admin", "{fake(12)}"))'),
    ("xml password", f"<password>{fake(12)}</password>"),
    ("rails secret key base", f"secret_key_base: {fake(128, HEX)}"),
    ("laravel app key", f"APP_KEY=base64:{fake(43, B64)}="),
    ("kubernetes secret base64 value", f"data:\n  password: {b64('s3cret-' + fake(8))}"),
    ("prose password", f"the staging admin password is {fake(10)}!"),
    ("cli flag password", f"./deploy --db-password={fake(12)} --region eu"),
    (
        "kafka jaas",
        'sasl.jaas.config=PlainLoginModule required username="svc" password="' + fake(14) + '";',
    ),
]
"""(label, text): each must be refused."""


def _benign() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    add = out.append
    # Commit ids, hashes and checksums (the hex the entropy detectors would trip over).
    for i in range(25):
        sha = fake(40, HEX)
        add((f"commit sha {i}", f"fixed in {sha} (merge {fake(7, HEX)}); see git show {sha[:10]}"))
    for i in range(15):
        add((f"sha256 {i}", f"sha256: {fake(64, HEX)}  dist/app-{i}.tar.gz"))
    for i in range(5):
        add((f"md5 {i}", f"md5sum {fake(32, HEX)} backup-{i}.sql.gz"))
    for i in range(8):
        add((f"npm integrity {i}", f'"integrity": "sha512-{fake(86, B64)}=="'))
    for i in range(5):
        add((f"docker digest {i}", f"image: ghcr.io/acme/api@sha256:{fake(64, HEX)}"))
    for i in range(5):
        add((f"sri {i}", f'<script src="/app.js" integrity="sha384-{fake(64, B64)}"></script>'))
    # UUIDs and ids.
    for i in range(20):
        u = f"{fake(8, HEX)}-{fake(4, HEX)}-4{fake(3, HEX)}-a{fake(3, HEX)}-{fake(12, HEX)}"
        add((f"uuid {i}", f"request_id={u} failed with 502; trace {fake(32, HEX)}"))
    for i in range(6):
        add(
            (
                f"aws resource ids {i}",
                f"arn:aws:iam::{fake(12, string.digits)}:role/deploy, "
                f"instance i-0{fake(16, HEX)}, ami-0{fake(16, HEX)}, vpc-{fake(8, HEX)}",
            )
        )
    add(("slack ids", "post to channel C024BE91L as user U024BE7LH in team T0G9PQBBK"))
    add(("ipfs cid", "pinned QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG on the gateway"))
    add(("gpg fingerprint", "signed with key 4AEE18F83AFDEB23 (fingerprint 5DE3 E050 9C47 EA3C)"))
    add(("sentry dsn public key", "error events go to o123456.ingest.sentry.io project 7"))
    add(
        (
            "sentry dsn",
            "SENTRY_DSN=https://"
            + "5f29c18e311df83288e014373007f47a"
            + "@o4504.ingest.sentry.io/4504123",
        )
    )
    add(("aws docs example key id", f"aws_access_key_id = {AWS_DOC_KEY_ID}"))
    add(("aws docs example secret", f"aws_secret_access_key = {AWS_DOC_SECRET}"))
    add(
        (
            "allow-listed line",
            "GH_TOKEN="
            + "ghp_"
            + "Q" * 4
            + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1d  # pragma: allowlist secret",
        )
    )
    # Base64 that is not a credential: images, fonts, encoded prose.
    png = b"\x89PNG\r\n\x1a\n" + bytes(_rng.randrange(256) for _ in range(300))
    for i in range(10):
        img = base64.b64encode(png[i:] + bytes(_rng.randrange(256) for _ in range(60))).decode()
        add((f"base64 image {i}", f"![logo](data:image/png;base64,{img})"))
    for i in range(4):
        woff = base64.b64encode(bytes(_rng.randrange(256) for _ in range(200))).decode()
        add((f"base64 font {i}", f"src: url(data:font/woff2;base64,{woff}) format('woff2');"))
    for i, phrase in enumerate(
        [
            "Hello, world! This is a config note.",
            "deploy only from the release branch",
            "the quick brown fox jumps over the lazy dog",
            '{"retries": 3, "backoff": "exponential"}',
        ]
    ):
        add((f"base64 prose {i}", f"value: {b64(phrase)}"))
    # Public keys and certificates.
    add(("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{fake(43, B64)} alice@laptop"))
    add(("ssh rsa public key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{fake(300, B64)} ci@runner"))
    add(
        (
            "public key block",
            "-----BEGIN PUBLIC KEY-----\n" + fake(64, B64) + "\n-----END PUBLIC KEY-----",
        )
    )
    add(
        (
            "certificate",
            "-----BEGIN CERTIFICATE-----\n" + fake(64, B64) + "\n-----END CERTIFICATE-----",
        )
    )
    add(
        (
            "known hosts",
            f"github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY{fake(100, B64)}=",
        )
    )
    # Example and placeholder keys, marked as such.
    for label, text in [
        ("aws placeholder id", "AWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX"),
        ("aws placeholder secret", "AWS_SECRET_ACCESS_KEY=<your-secret-access-key>"),
        ("env var reference", "password: $DB_PASSWORD"),
        ("env var braces", "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app"),
        ("github actions secret", "token: ${{ secrets.GITHUB_TOKEN }}"),
        ("github placeholder", "export GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        ("api key your", "api_key: YOUR_API_KEY"),
        ("api key here", 'OPENAI_API_KEY="your-api-key-here"'),
        ("stars", 'password: "********"'),
        ("redacted", "token=[REDACTED]"),
        ("angle placeholder", "Authorization: Bearer <token>"),
        ("url placeholder", "postgres://user:password@localhost:5432/mydb"),
        ("url placeholder 2", "mysql://username:<password>@host/db"),
        ("url stars", "https://deploy:****@git.example.com/repo.git"),
        ("jinja", "secret: {{ vault_secret }}"),
        ("python format", "password=%(db_password)s"),
        ("sk placeholder", "STRIPE_KEY=sk_live_... (ask finance for the real one)"),
        ("example lower", "password: example123"),
        ("dummy", "API_TOKEN=dummy-token-for-tests"),
        ("changeme", "admin password defaults to changeme on first boot"),
        ("docs token ellipsis", "tokens look like ghp_… or github_pat_…"),
        ("npm placeholder", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"),
        ("k8s secret ref", "valueFrom:\n  secretKeyRef:\n    name: db\n    key: password"),
        ("pypi placeholder", "password = <pypi token>"),
        ("basic placeholder", "Authorization: Basic <base64 of user:password>"),
        ("stripe test publishable", "pk_test_TYooMQauvdEDq54NiTphI7jx (Stripe docs)"),
    ]:
        add((label, text))
    # Code that names secrets without holding them.
    for label, text in [
        ("os environ", 'password = os.environ["DB_PASSWORD"]'),
        ("getenv", "token = os.getenv('GITHUB_TOKEN')"),
        ("settings ref", "secret_key = settings.SECRET_KEY"),
        ("function call", "api_key = load_api_key(vault_path)"),
        ("js env", "const apiKey = process.env.API_KEY;"),
        ("go env", 'token := os.Getenv("SLACK_TOKEN")'),
        ("terraform var", "password = var.db_password"),
        ("rust", 'let secret = std::env::var("SECRET")?;'),
        ("kwarg none", "def connect(host, password=None, token=None):"),
        ("type hint", "def login(user: str, password: str) -> Session:"),
        ("password hash", "password_hash: $2b$12$" + fake(53, B64.replace("+", "."))),
        ("token count", "max_tokens: 128000"),
        ("token usage", "prompt_tokens=18234, completion_tokens=912"),
        ("token ttl", "token_ttl: 3600"),
        ("password min length", "password_min_length: 12"),
        ("password policy", "password_policy: strong-with-rotation"),
        ("secret name", "secret_name: prod/db/credentials"),
        (
            "secret arn",
            f"secret_arn: arn:aws:secretsmanager:eu-west-1:{fake(12, string.digits)}:secret:db",
        ),
        ("token url", "token_url: https://oauth2.googleapis.com/token"),
        ("credentials path", "credentials: ~/.aws/credentials"),
        ("credential helper", "credential.helper=osxkeychain"),
        ("pwd path", "PWD=/home/runner/work/app"),
        ("api key header name", "api_key_header: X-API-Key"),
        ("token type", "token_type: Bearer"),
        ("secret version", "secret_version: 2026-11-30"),
        ("secrets allow", "secrets: allow"),
        ("secret scanning", "secret_scanning: enabled-by-default"),
        (
            "password field",
            '<input type="password" name="password" autocomplete="current-password">',
        ),
        ("password regex", r"password_pattern: ^(?=.*\d)(?=.*[a-z]).{12,}$"),
        ("auth header name", "Authorization header carries the session id"),
        ("bearer word", "use bearer authentication for the internal API"),
    ]:
        add((label, text))
    # URLs and hosts without credentials.
    for label, text in [
        ("git ssh", "git@github.com:acme/app.git"),
        ("ssh url", "ssh://git@github.com/acme/app.git"),
        ("url with port", "http://localhost:8080/health"),
        ("url with query", "https://example.com/search?q=token+rotation&page=2"),
        ("github commit url", f"https://github.com/acme/app/commit/{fake(40, HEX)}"),
        ("s3 url", "s3://acme-backups/2026/11/30/db.sql.gz"),
        ("mailto", "mailto:security@example.com?subject=key%20rotation"),
        ("ipv6", "listen [::1]:8443"),
        ("at in path", "https://www.npmjs.com/package/@acme/ui"),
        ("email", "contact ops@example.com or oncall@acme.io"),
        ("user at host", "ssh deploy@10.0.0.5 -p 2222"),
        ("docker image", "docker pull ghcr.io/acme/api:1.4.1"),
    ]:
        add((label, text))
    # Prose about credentials.
    for text in [
        "Rotate the database password every 90 days; the runbook is in ops/rotate.md.",
        "The API key lives in Vault under secret/prod/api; never paste it into a memory.",
        "If the token expires mid-deploy, re-run `gh auth login` and retry the job.",
        "Passwords must be at least 12 characters and are checked against HIBP.",
        "The secret is stored in AWS Secrets Manager and read at boot.",
        "the password is rotated monthly by the platform team",
        "Our JWTs are signed with RS256 and expire after 15 minutes.",
        "Use short-lived OIDC tokens in CI instead of long-lived access keys.",
        "password reset emails are sent from no-reply@example.com",
        "token: rotated daily by the platform team",
        "The client secret moved to the new tenant in November.",
        "Never commit .env files; .env.example lists the keys with empty values.",
        "Basic authentication is disabled on the public API.",
        "Bearer tokens are accepted only over TLS.",
        "npm publish needs a granular access token with the publish scope.",
        "A private key must never leave the HSM.",
        "Stripe keys starting sk_live_ are production; sk_test_ are sandbox.",
        "GitHub classic tokens were 40 hex characters; new ones start ghp_.",
        "AWS access key ids start with AKIA and are 20 characters long.",
        "secret: none",
    ]:
        add((f"prose: {text[:30]}", text))
    # Ordinary technical text with digits, symbols and long identifiers.
    for text in [
        "Upgrade pydantic from 1.10.13 to 2.5.2; run `pip install -U 'pydantic>=2.5,<3'`.",
        "The p99 latency regressed from 120ms to 340ms after commit 8f3a2b1 on 2026-11-28.",
        "TIMEOUT=30s RETRIES=3 BACKOFF=exponential ./run.sh --env staging",
        "kubectl rollout restart deployment/api -n prod && kubectl rollout status deployment/api",
        "SELECT id, email FROM users WHERE created_at > '2026-01-01' ORDER BY id LIMIT 100;",
        "ERROR 1045 (28000): Access denied for user 'app'@'10.0.3.17' (using password: YES)",
        'psql: FATAL: password authentication failed for user "app"',
        'HTTP/1.1 401 Unauthorized\nWWW-Authenticate: Bearer realm="api", error="invalid_token"',
        "cron: 0 3 * * 1-5 /usr/local/bin/backup --keep 14",
        "export PATH=$HOME/.local/bin:$PATH",
        "NODE_OPTIONS=--max-old-space-size=4096 npm run build",
        "regex: ^[A-Za-z0-9_-]{36}$ matches the new id format",
        "color palette: #1f2937 #3b82f6 #10b981 #f59e0b",
        "version: 3.11.7+build.20261130.abcdef",
        "CUDA_VISIBLE_DEVICES=0,1 python train.py --lr 3e-4 --batch 64",
        "the build id is 20261130.4 and the artifact is app-4.2.0-linux-x86_64.tar.gz",
        "Set MEMSTORE_LOCK_TIMEOUT=30 on slow network disks.",
        "terraform import aws_s3_bucket.logs acme-prod-logs-eu-west-1",
        'The cache key is sha1(url + etag); etag W/"5e8f-1a2b3c".',
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317",
        "jq '.items[] | select(.status == \"failed\") | .id' runs.json",
        "Use `openssl rand -hex 32` to generate a new signing key and store it in Vault.",
        "Run `ssh-keygen -t ed25519 -C ci@acme` and add the .pub file to the deploy keys.",
        'base64 -d <<< "$PAYLOAD" | jq .',
        "the session cookie is HttpOnly; Secure; SameSite=Lax",
        "mypy --strict --python-version 3.11 src/",
        "ffmpeg -i in.mov -c:v libx264 -crf 23 -preset slow out.mp4",
        "Move the cron from 02:00 UTC to 03:30 UTC to avoid the backup window.",
        "Pin actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11 (v4.1.1).",
        "The hash of the lockfile changed: " + fake(64, HEX),
        "ldap search base: ou=people,dc=acme,dc=io",
        "Disk /dev/nvme0n1p2 is at 91%; prune docker images older than 14d.",
        "wheel: memstore-0.1.0-py3-none-any.whl (sha256=" + fake(64, HEX) + ")",
        "Tokenizer: cl100k_base; 1 token ≈ 4 characters of English.",
        "APIs: /v1/keys (list), /v1/keys/{id} (get), /v1/keys/{id}/rotate (post)",
        "Access keys rotate via the key-rotation lambda every 30 days.",
    ]:
        add((f"tech: {text[:30]}", text))
    # A typical memory body, in several sizes.
    body = (
        "## Why\nHand-written checks drifted from the TypeScript types (see commit "
        f"{fake(40, HEX)}).\n\n## How to apply\nNew endpoints declare a zod schema next to the "
        "handler; run `npm test -- --grep schema` before pushing.\n"
    )
    for i in range(1, 6):
        add((f"memory body x{i}", body * i))
    return out


BENIGN: list[tuple[str, str]] = _benign()
"""(label, text): each must pass."""
