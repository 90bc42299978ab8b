/**
 * Test corpus for the egress scrubber: real-world secret formats in the context they are usually
 * pasted in, and look-alikes that must pass through byte-identical. Every secret is generated here
 * from a seeded PRNG: format-valid, obviously fake, never a real credential.
 */

/** Deterministic PRNG (mulberry32) so the corpus is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rnd = prng(20261202);

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = "0123456789abcdef";
const B64 = ALNUM + "+/";
const B64URL = ALNUM + "-_";
const LETTERS = UPPER + LOWER;

/** `n` random characters from `charset`. */
export function fake(charset: string, n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) out += charset[Math.floor(rnd() * charset.length)];
  return out;
}

const base64url = (text: string): string => Buffer.from(text).toString("base64url");

/** A PEM body that looks like DER (starts with `MI`), wrapped at 64 columns. */
function pemBody(chars: number, prefix = "MII"): string {
  const raw = prefix + fake(B64, chars - prefix.length);
  return raw.match(/.{1,64}/g)?.join("\n") ?? raw;
}

export interface SecretCase {
  name: string;
  /** The text as it would be pasted (the secret in context). */
  text: string;
  /** The secret value: no 4-character fragment of it may survive. */
  secret: string;
}

function c(name: string, secret: string, context: (s: string) => string): SecretCase {
  return { name, secret, text: context(secret) };
}

const ghBody = (): string => fake(ALNUM, 36);
const openAiHalf = (): string => fake(B64URL.replace("-", ""), 74);

export const SECRET_CASES: SecretCase[] = [
  // Cloud providers
  c("AWS access key id", `AKIA${fake(UPPER + DIGITS, 16)}`, (s) => `aws configure set aws_access_key_id ${s}`),
  c("AWS temporary access key id", `ASIA${fake(UPPER + DIGITS, 16)}`, (s) => `"AccessKeyId": "${s}",`),
  c(
    "AWS secret access key (credentials file)",
    fake(ALNUM + "/+", 40),
    (s) => `[default]\naws_secret_access_key = ${s}\nregion = eu-west-1`,
  ),
  c("AWS secret access key (JSON)", fake(ALNUM + "/+", 40), (s) => `{"SecretAccessKey": "${s}", "Expiration": "2030-01-01"}`),
  c("AWS session token (env)", fake(B64, 120), (s) => `export AWS_SESSION_TOKEN=${s}`),
  c(
    "AWS presigned URL signature",
    fake(HEX, 64),
    (s) => `https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=${s}&X-Amz-Expires=60`,
  ),
  c("Google API key", `AIza${fake(B64URL, 35)}`, (s) => `const firebaseConfig = { apiKey: "${s}" };`),
  c("Google OAuth client secret", `GOCSPX-${fake(B64URL, 28)}`, (s) => `client_secret=${s}`),
  c("Google OAuth access token", `ya29.${fake(B64URL, 120)}`, (s) => `curl -H "Authorization: Bearer ${s}" https://www.googleapis.com/x`),
  c(
    "GCP service account private key (JSON)",
    pemBody(1200).replace(/\n/g, "\\n"),
    (s) =>
      `{"type": "service_account", "private_key_id": "${fake(HEX, 40)}", "private_key": "-----BEGIN PRIVATE KEY-----\\n${s}\\n-----END PRIVATE KEY-----\\n"}`,
  ),
  c(
    "Azure storage AccountKey",
    `${fake(B64, 86)}==`,
    (s) => `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${s};EndpointSuffix=core.windows.net`,
  ),
  c(
    "Azure Service Bus SharedAccessKey",
    `${fake(B64, 43)}=`,
    (s) => `Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${s}`,
  ),
  c(
    "Azure SAS token signature",
    `${fake(ALNUM, 40)}%2B${fake(ALNUM, 8)}%3D`,
    (s) => `https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z&sig=${s}`,
  ),
  c(
    "Azure AD client secret",
    `${fake(ALNUM, 3)}8Q~${fake(ALNUM + "_~.-", 34)}`,
    (s) => `The app registration secret is ${s} (expires in 6 months)`,
  ),
  c("DigitalOcean token", `dop_v1_${fake(HEX, 64)}`, (s) => `doctl auth init -t ${s}`),
  c("Heroku platform key", `HRKU-${fake(B64URL, 60)}`, (s) => `heroku token: ${s}`),
  c("Supabase access token", `sbp_${fake(HEX, 40)}`, (s) => `supabase login --token ${s}`),
  c("Doppler service token", `dp.st.${fake(ALNUM, 43)}`, (s) => `doppler run with ${s}`),
  // Source hosting and registries
  c("GitHub classic PAT", `ghp_${ghBody()}`, (s) => `git clone https://${s}@github.com/acme/app.git`),
  c("GitHub OAuth token", `gho_${ghBody()}`, (s) => `oauth token ${s} issued`),
  c("GitHub user-to-server token", `ghu_${ghBody()}`, (s) => `token=${s}`),
  c("GitHub installation token", `ghs_${ghBody()}`, (s) => `GITHUB_TOKEN: ${s}`),
  c("GitHub refresh token", `ghr_${fake(ALNUM, 76)}`, (s) => `refresh: ${s}`),
  c("GitHub fine-grained PAT", `github_pat_${fake(ALNUM, 22)}_${fake(ALNUM, 59)}`, (s) => `gh auth login --with-token <<< ${s}`),
  c("GitHub token in Authorization: token", `ghp_${ghBody()}`, (s) => `-H "Authorization: token ${s}"`),
  c("GitLab personal access token", `glpat-${fake(B64URL, 20)}`, (s) => `PRIVATE-TOKEN: ${s}`),
  c("GitLab deploy token", `gldt-${fake(B64URL, 20)}`, (s) => `use deploy token ${s} for the registry`),
  c("GitLab runner token", `glrt-${fake(B64URL, 20)}`, (s) => `gitlab-runner register --token ${s}`),
  c(
    "GitLab pipeline trigger token",
    `glptt-${fake(HEX, 40)}`,
    (s) => `curl -F token=${s} -F ref=main https://gitlab.example.com/api/v4/projects/1/trigger/pipeline`,
  ),
  c("GitLab runner registration token", `GR1348941${fake(B64URL, 20)}`, (s) => `registration token ${s}`),
  c("npm access token", `npm_${fake(ALNUM, 36)}`, (s) => `NPM_TOKEN=${s} npm publish`),
  c(
    "npm legacy _authToken",
    `${fake(HEX, 8)}-${fake(HEX, 4)}-${fake(HEX, 4)}-${fake(HEX, 4)}-${fake(HEX, 12)}`,
    (s) => `//registry.npmjs.org/:_authToken=${s}`,
  ),
  c("PyPI API token", `pypi-AgEIcHlwaS5vcmc${fake(B64URL, 120)}`, (s) => `twine upload -u __token__ --password ${s} dist/*`),
  c("Docker Hub PAT", `dckr_pat_${fake(B64URL, 27)}`, (s) => `echo ${s} | docker login -u acme --password-stdin`),
  c("Hugging Face user token", `hf_${fake(LETTERS, 34)}`, (s) => `huggingface-cli login --token ${s}`),
  c("Hugging Face org token", `api_org_${fake(LETTERS, 34)}`, (s) => `HF org key ${s}`),
  // AI providers
  c("OpenAI project key", `sk-proj-${openAiHalf()}T3BlbkFJ${openAiHalf()}`, (s) => `OPENAI_API_KEY="${s}"`),
  c("OpenAI legacy key", `sk-${fake(ALNUM, 20)}T3BlbkFJ${fake(ALNUM, 20)}`, (s) => `openai.api_key = '${s}'`),
  c("Anthropic API key", `sk-ant-api03-${fake(B64URL, 93)}AA`, (s) => `x-api-key: ${s}`),
  c("Groq API key", `gsk_${fake(ALNUM, 52)}`, (s) => `groq key ${s}`),
  // SaaS
  c("Slack bot token", `xoxb-${fake(DIGITS, 12)}-${fake(DIGITS, 13)}-${fake(ALNUM, 24)}`, (s) => `SLACK_BOT_TOKEN=${s}`),
  c("Slack user token", `xoxp-${fake(DIGITS, 12)}-${fake(DIGITS, 12)}-${fake(DIGITS, 13)}-${fake(HEX, 32)}`, (s) => `use ${s} to post`),
  c("Slack app-level token", `xapp-1-A${fake(UPPER + DIGITS, 10)}-${fake(DIGITS, 13)}-${fake(HEX, 64)}`, (s) => `socket mode with ${s}`),
  c(
    "Slack incoming webhook",
    `T${fake(UPPER + DIGITS, 10)}/B${fake(UPPER + DIGITS, 10)}/${fake(ALNUM, 24)}`,
    (s) => `curl -X POST https://hooks.slack.com/services/${s}`,
  ),
  c("Stripe secret key", `sk_live_${fake(ALNUM, 99)}`, (s) => `stripe key "${s}"`),
  c("Stripe restricted key", `rk_live_${fake(ALNUM, 24)}`, (s) => `restricted ${s}`),
  c("Stripe webhook secret", `whsec_${fake(ALNUM, 32)}`, (s) => `endpoint secret is ${s}`),
  c("Twilio API key", `SK${fake(HEX, 32)}`, (s) => `twilio api key ${s}`),
  c("Twilio auth token", fake(HEX, 32), (s) => `TWILIO_AUTH_TOKEN=${s}`),
  c("SendGrid API key", `SG.${fake(B64URL, 22)}.${fake(B64URL, 43)}`, (s) => `sendgrid ${s}`),
  c("Mailgun API key", `key-${fake(HEX, 32)}`, (s) => `mailgun ${s}`),
  c("Mailchimp API key", `${fake(HEX, 32)}-us6`, (s) => `mailchimp ${s}`),
  c("Shopify admin token", `shpat_${fake(HEX, 32)}`, (s) => `X-Shopify-Access-Token ${s}`),
  c("Discord bot token", `M${fake(ALNUM, 25)}.${fake(B64URL, 6)}.${fake(B64URL, 38)}`, (s) => `client.login("${s}") // discord bot`),
  c("Discord webhook", `${fake(B64URL, 68)}`, (s) => `https://discord.com/api/webhooks/${fake(DIGITS, 18)}/${s}`),
  c("Telegram bot token", `${fake(DIGITS, 10)}:AA${fake(B64URL, 33)}`, (s) => `https://api.telegram.org/bot${s}/getMe`),
  c("Square access token", `sq0atp-${fake(B64URL, 22)}`, (s) => `square ${s}`),
  c("Postman API key", `PMAK-${fake(HEX, 24)}-${fake(HEX, 34)}`, (s) => `postman ${s}`),
  c("Atlassian API token", `ATATT3${fake(B64URL, 186)}`, (s) => `jira token ${s}`),
  c("Sentry auth token", `sntrys_${fake(B64, 120)}`, (s) => `SENTRY_AUTH_TOKEN=${s}`),
  c("New Relic user key", `NRAK-${fake(UPPER + DIGITS, 27)}`, (s) => `newrelic ${s}`),
  c("Linear API key", `lin_api_${fake(ALNUM, 40)}`, (s) => `linear ${s}`),
  c("Notion integration token", `ntn_${fake(DIGITS, 11)}${fake(ALNUM, 35)}`, (s) => `notion ${s}`),
  c("Figma token", `figd_${fake(B64URL, 40)}`, (s) => `figma ${s}`),
  c("Databricks token", `dapi${fake(HEX, 32)}`, (s) => `databricks ${s}`),
  c("HashiCorp Vault token", `hvs.${fake(B64URL, 91)}`, (s) => `vault login ${s}`),
  c("Grafana service account token", `glsa_${fake(ALNUM, 32)}_${fake(HEX, 8)}`, (s) => `grafana ${s}`),
  c("Firebase Cloud Messaging server key", `AAAA${fake(B64URL, 7)}:APA91b${fake(B64URL, 134)}`, (s) => `fcm ${s}`),
  c("age secret key", `AGE-SECRET-KEY-1${fake("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)}`, (s) => `# created: 2030\n${s}`),
  // Tokens and keys by structure
  c(
    "JWT",
    `${base64url('{"alg":"HS256","typ":"JWT"}')}.${base64url(`{"sub":"${fake(DIGITS, 10)}","name":"x"}`)}.${fake(B64URL, 43)}`,
    (s) => `Set-Cookie: session=${s}; HttpOnly`,
  ),
  c("PEM RSA private key", pemBody(1600, "MIIEow"), (s) => `-----BEGIN RSA PRIVATE KEY-----\n${s}\n-----END RSA PRIVATE KEY-----`),
  c("PEM EC private key", pemBody(160, "MHc"), (s) => `key:\n-----BEGIN EC PRIVATE KEY-----\n${s}\n-----END EC PRIVATE KEY-----\nend`),
  c("PEM PKCS#8 private key", pemBody(1600), (s) => `-----BEGIN PRIVATE KEY-----\n${s}\n-----END PRIVATE KEY-----`),
  c("PEM encrypted private key", pemBody(1700), (s) => `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${s}\n-----END ENCRYPTED PRIVATE KEY-----`),
  c(
    "OpenSSH private key",
    pemBody(400, "b3BlbnNzaC1rZXktdjEAAAAA"),
    (s) => `cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n${s}\n-----END OPENSSH PRIVATE KEY-----\n`,
  ),
  c(
    "PGP private key block",
    pemBody(900, "lQOYBF"),
    (s) => `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${s}\n-----END PGP PRIVATE KEY BLOCK-----`,
  ),
  c("PEM private key pasted without its END line", pemBody(700), (s) => `here it is: -----BEGIN RSA PRIVATE KEY-----\n${s}`),
  c(
    "PuTTY private key",
    pemBody(300, "AAAAI"),
    (s) => `PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: ${s.split("\n").length}\n${s}\nPrivate-MAC: ${fake(HEX, 40)}`,
  ),
  // HTTP auth
  c("Authorization: Basic", Buffer.from(`deploy:${fake(ALNUM, 14)}`).toString("base64"), (s) => `Authorization: Basic ${s}`),
  c(
    "Basic credentials in a curl line",
    Buffer.from(`admin:${fake(ALNUM, 12)}`).toString("base64"),
    (s) => `curl -H 'Authorization:Basic ${s}' https://api.example.com`,
  ),
  c("Authorization: Bearer (opaque)", fake(B64URL, 40), (s) => `{"headers": {"Authorization": "Bearer ${s}"}}`),
  c("Proxy-Authorization", Buffer.from(`proxy:${fake(ALNUM, 10)}`).toString("base64"), (s) => `Proxy-Authorization: Basic ${s}`),
  c("X-Api-Key header", fake(HEX, 32), (s) => `X-Api-Key: ${s}`),
  // Connection URLs
  c(
    "Postgres URL, password with @ : / %",
    `p@ss:w/rd%40${fake(ALNUM, 6)}`,
    (s) => `connect to postgres://app:${s}@db.example.com:5432/app`,
  ),
  c("MongoDB SRV URL", `${fake(ALNUM, 16)}`, (s) => `mongodb+srv://admin:${s}@cluster0.example.mongodb.net/test?retryWrites=true`),
  c("MySQL URL", `${fake(ALNUM, 12)}!`, (s) => `jdbc:mysql://root:${s}@localhost:3306/shop`),
  c("Redis URL with only a password", fake(ALNUM, 20), (s) => `redis://:${s}@cache.internal:6379/0`),
  c("AMQP URL", `${fake(ALNUM, 10)}@${fake(ALNUM, 4)}`, (s) => `amqp://guest:${s}@mq.example.com:5672/`),
  c("HTTPS URL with user and password", fake(ALNUM, 14), (s) => `pip install --index-url https://build:${s}@pypi.example.com/simple pkg`),
  // Assignments and flags
  c("password= with &", "Tr0ub4dor&3xyz", (s) => `password=${s}`),
  c("password= with ;", `Tr0ub;4dor${fake(ALNUM, 4)}`, (s) => `login with password=${s}`),
  c("password= with ,", `Tr0ub,4dor${fake(ALNUM, 4)}`, (s) => `password=${s}`),
  c("password= with )", `Tr0ub)4dor${fake(ALNUM, 4)}`, (s) => `(password=${s}`),
  c("password: with spaces", "correct horse battery staple", (s) => `password: ${s}`),
  c("--password hunter2", "hunter2", (s) => `mycli --user admin --password ${s} --verbose`),
  c("--api-key=", fake(ALNUM, 24), (s) => `deploy --api-key=${s}`),
  c(".env quoted password", `${fake(ALNUM, 10)} ${fake(ALNUM, 6)}#`, (s) => `DB_PASSWORD="${s}"`),
  c("YAML client_secret", fake(B64URL, 32), (s) => `oauth:\n  client_id: app\n  client_secret: ${s}\n  scope: read`),
  c("JSON apiKey", fake(ALNUM, 32), (s) => `{"service": "x", "apiKey": "${s}"}`),
  c("double-encoded JSON secret", fake(ALNUM, 20), (s) => String.raw`{\"client_secret\": \"${s}\"}`),
  c("numeric PIN as password", fake(DIGITS, 8), (s) => `{"password": ${s}}`),
  c(
    "connection string Password=",
    `${fake(ALNUM, 8)};x=${fake(ALNUM, 4)}`,
    (s) => `Server=tcp:db.example.com;Database=app;User Id=sa;Password=${s}`,
  ),
];

/** Text that looks like a secret (or like a secret's name) but must pass through byte-identical. */
export const LOOKALIKES: string[] = [
  "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
  "git checkout a94a8fe5",
  "request id 123e4567-e89b-12d3-a456-426614174000",
  `echo ${Buffer.from("Hello, world! How are you today?").toString("base64")} | base64 -d`,
  "max_tokens: 1000",
  '{"max_tokens": 1000, "temperature": 0.7}',
  "tokens_used=5 and token_limit reached",
  "password_policy: strict",
  "the token count was 4096",
  "https://example.com:8080/path/to/page?q=search&page=2#section",
  "mongodb://localhost:27017/app",
  "postgres://db.example.com:5432/app",
  "released v1.2.3, needs node 20.20.2 and pnpm@10.34.9",
  "mail jane.doe@example.com or ops+alerts@example.org",
  "/usr/local/lib/node_modules/pnpm/bin/pnpm.cjs",
  String.raw`C:\Users\jane\AppData\Roaming\npm\node_modules`,
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq3ZJ1lqQm2k4Yb6ZyX0mXcN1x7PZsW8rN5cQ2m9h3A jane@laptop",
  "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA0U6CqF8oX9mYx1Qd5lW3g4kRzN8n7pJ2sVbH1tXyZ0aC9eF3gK5mN7qR2sT4uV6wX8yZ0aB2cD4eF6gH8iJ0kL2mN4oP6qR8sT0uV2wX4yZ6aB8cD0eF2gH4iJ6kL8mN0oP2qR4sT6uV8wX0yZ2aB4cD6eF8gH0iJ2kL4mN6oP8qR0sT2uV4wX6yZ8 jane@laptop",
  "the bearer of bad news arrived",
  "Basic understanding of the system is required",
  "use sk-learn for that, not sklearn-pandas",
  "secret: true",
  "password: ${DB_PASSWORD}",
  "api_key: <your-api-key>",
  "The Authorization header is required for this endpoint",
  "passwordless login via magic link",
  "keyboard shortcuts: ctrl+k opens the palette",
  "The Asia-Pacific region is served from Singapore",
  "colors #ff00aa and #00ff00",
  "image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "git@github.com:acme/app.git",
  "open http://localhost:3000/login",
  "install @types/node@20.11.5",
  "at 2026-12-02T20:44:32.684Z the job ended",
  "listen on [2001:db8::1]:8080",
  "token-based authentication with short-lived credentials",
  "GITHUB_TOKEN is set in CI by default",
  "internationalization and responsibilities",
  "see [the docs](https://example.com/docs/auth#tokens)",
  "Error: ENOENT: no such file or directory, open '/tmp/x.json'",
  "the function returns { ok: true, value: 42 }",
  "AKIA is the prefix of long-term AWS access key ids",
  "the secret to good bread is time",
  "reset your password at https://example.com/reset",
];
