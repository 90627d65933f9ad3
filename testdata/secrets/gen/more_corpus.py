#!/usr/bin/env python3
"""Writes testdata/secrets/corpus-more.jsonl: synthetic credentials in the
documented formats of the providers (as gitleaks' rules describe them) and
in the shapes dshmem's own rules cover, each in an ordinary context.
Every value is drawn from a seeded generator: none is anyone's credential.
Run from the repository root: python3 testdata/secrets/gen/more_corpus.py
"""
import json, random, string

rng = random.Random(20261202)
LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
HEX = "0123456789abcdef"
AN = LOW + UP + DIG


def r(n, alphabet=AN):
    # At least one digit and one letter where the alphabet has both, so
    # entropy and shape checks see a generated value.
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if not (set(alphabet) & set(DIG)) or any(c in DIG for c in s):
            if not (set(alphabet) & set(LOW + UP)) or any(c.isalpha() for c in s):
                return s


CONTEXTS = [
    ("export {var}={v}", ["export {var}="]),
    ("{var}: {v}", ["{var}: "]),
    ("I put the token {v} into the CI settings yesterday.", ["into the CI settings"]),
    ("刚才的部署用的是 {v} 这个凭据，记得轮换。", ["刚才的部署用的是", "记得轮换"]),
    ('config = {{"service": "x", "value": "{v}"}}', ['"service": "x"']),
    ("$ curl -s https://api.example.com/v1/ping -d 'k={v}'", ["curl -s https://api.example.com/v1/ping"]),
    ("error: authentication failed for {v} (HTTP 401)", ["error: authentication failed for", "(HTTP 401)"]),
    ("请把 {v} 加到 .env 里，然后重启服务。", ["加到 .env 里"]),
]

KINDS = [
    ("gitlab-pat", lambda: "glpat-" + r(20, AN + "_-"), "GITLAB_TOKEN"),
    ("gitlab-ptt", lambda: "glptt-" + r(40, HEX), "CI_TRIGGER"),
    ("gitlab-deploy-token", lambda: "gldt-" + r(20), "DEPLOY_TOKEN"),
    ("stripe-access-token", lambda: "sk_live_" + r(32), "STRIPE_KEY"),
    ("stripe-access-token", lambda: "rk_live_" + r(40), "STRIPE_RESTRICTED"),
    ("huggingface-access-token", lambda: "hf_" + r(34, LOW + UP), "HF_TOKEN"),
    ("huggingface-organization-api-token", lambda: "api_org_" + r(34, LOW + UP), "HF_ORG"),
    ("npm-access-token", lambda: "npm_" + r(36, LOW + DIG), "NPM_TOKEN"),
    ("pypi-upload-token", lambda: "pypi-AgEIcHlwaS5vcmc" + r(70, AN + "_-"), "TWINE_PASSWORD_X"),
    ("sendgrid-api-token", lambda: "SG." + r(22) + "." + r(43), "SENDGRID"),
    ("vault-service-token", lambda: "hvs." + r(95, AN + "_-"), "VAULT"),
    ("twilio-api-key", lambda: "SK" + r(32, HEX), "TWILIO"),
    ("digitalocean-pat", lambda: "dop_v1_" + r(64, HEX), "DO"),
    ("doppler-api-token", lambda: "dp.pt." + r(43), "DOPPLER"),
    ("shopify-access-token", lambda: "shpat_" + r(32, HEX), "SHOPIFY"),
    ("linear-api-key", lambda: "lin_api_" + r(40), "LINEAR"),
    ("postman-api-token", lambda: "PMAK-" + r(24, HEX) + "-" + r(34, HEX), "POSTMAN"),
    ("databricks-api-token", lambda: "dapi" + r(32, HEX), "DATABRICKS"),
    ("grafana-service-account-token", lambda: "glsa_" + r(32) + "_" + r(8, HEX), "GRAFANA"),
    ("pulumi-api-token", lambda: "pul-" + r(40, HEX), "PULUMI"),
    ("sentry-user-token", lambda: "sntryu_" + r(64, HEX), "SENTRY"),
    ("planetscale-password", lambda: "pscale_pw_" + r(43, AN + "_"), "PSCALE"),
    ("age-secret-key", lambda: "AGE-SECRET-KEY-1" + "".join(rng.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58)), "AGE"),
    ("heroku-api-key-v2", lambda: "HRKU-AA" + r(58, AN + "_-"), "HEROKU"),
    ("openai-key", lambda: "sk-proj-" + r(74, AN + "_-") + "T3BlbkFJ" + r(74, AN + "_-"), "OPENAI_API_KEY"),
    ("github-token", lambda: "github_pat_" + r(22) + "_" + r(59), "GH_PAT"),
    ("anthropic-key", lambda: "sk-ant-api03-" + r(93, AN + "_-") + "AA", "ANTHROPIC"),
]

out = []
for i, (kind, make, var) in enumerate(KINDS):
    # Each kind in four contexts, chosen in turn.
    for j in range(4):
        v = make()
        tmpl, keeps = CONTEXTS[(i + j * 3) % len(CONTEXTS)]
        text = tmpl.format(var=var, v=v)
        out.append({"kind": kind, "text": text, "secrets": [v], "keep": [k.format(var=var) for k in keeps]})

# dshmem's own shapes added with the rule set.
pw = lambda: r(14, AN + "!#%")
hand = [
    ("cli-password", lambda v: f"mysql -h db.internal -u app -p{v} orders", ["mysql -h db.internal -u app -p", " orders"]),
    ("cli-password", lambda v: f"mysqldump -uroot -p{v} --all-databases > dump.sql", ["mysqldump -uroot -p", "--all-databases"]),
    ("cli-password", lambda v: f"sshpass -p '{v}' ssh deploy@10.0.0.5", ["sshpass -p '", "ssh deploy@10.0.0.5"]),
    ("cli-password", lambda v: f"docker login -u ci -p {v} registry.example.com", ["docker login -u ci -p ", "registry.example.com"]),
    ("cli-password", lambda v: f"./deploy.sh --env prod --password {v} --yes", ["./deploy.sh --env prod --password ", "--yes"]),
    ("cli-password", lambda v: f"vault login --token {v}", ["vault login --token "]),
    ("cli-password", lambda v: f"aws configure set --profile x --secret-key {v}", ["aws configure set"]),
    ("authorization", lambda v: f"Authorization: Token {v}", ["Authorization: Token "]),
    ("authorization", lambda v: f"curl -H 'Authorization: ApiKey {v}' https://es.local:9200/_cat", ["https://es.local:9200/_cat"]),
    ("authorization", lambda v: f"请求头里带了 Authorization: Digest {v}，服务端返回 200。", ["服务端返回 200"]),
    ("cookie", lambda v: f"Cookie: sessionid={v}; csrftoken={v[::-1]}", ["Cookie: "]),
    ("cookie", lambda v: f"the response had Set-Cookie: auth={v}; Path=/; HttpOnly", ["the response had Set-Cookie: "]),
    ("url-secret-param", lambda v: f"https://bucket.s3.amazonaws.com/a.tar?X-Amz-Signature={v}&X-Amz-Expires=300", ["https://bucket.s3.amazonaws.com/a.tar?X-Amz-Signature="]),
    ("url-secret-param", lambda v: f"download from https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&sig={v}", ["https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&sig="]),
    ("url-secret-param", lambda v: f"callback: https://app.example.com/cb?access_token={v}&state=xyz", ["https://app.example.com/cb?access_token="]),
    ("url-secret-param", lambda v: f"jdbc:postgresql://db:5432/app?user=app&password={v}", ["jdbc:postgresql://db:5432/app?user=app&password="]),
    ("connection-string", lambda v: f"Server=tcp:sql.example.net,1433;Database=app;Uid=app;Pwd={v};Encrypt=yes", ["Server=tcp:sql.example.net,1433;Database=app;Uid=app;Pwd=", ";Encrypt=yes"]),
    ("connection-string", lambda v: f"DefaultEndpointsProtocol=https;AccountName=st1;AccountKey={v}==;EndpointSuffix=core.windows.net", ["AccountName=st1;AccountKey="]),
    ("connection-string", lambda v: f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={v}=", ["SharedAccessKeyName=Root;SharedAccessKey="]),
    ("secret-label-zh", lambda v: f"数据库的密码是{v}，别告诉别人。", ["数据库的密码是", "别告诉别人"]),
    ("secret-label-zh", lambda v: f"新的令牌为 {v} 下周过期", ["新的令牌为 ", "下周过期"]),
    ("secret-label-zh", lambda v: f"服务器 root 口令改成 {v} 了", ["服务器 root 口令改成 ", " 了"]),
    ("password", lambda v: f"测试环境账号 admin，密码：{v}", ["测试环境账号 admin，密码："]),
    ("password", lambda v: f"秘钥={v}", ["秘钥="]),
]
for kind, make, keeps in hand:
    v = pw() if kind != "url-secret-param" else r(28, AN + "%")
    out.append({"kind": kind, "text": make(v), "secrets": [v], "keep": keeps})

with open("testdata/secrets/corpus-more.jsonl", "w", encoding="utf-8") as f:
    for s in out:
        f.write(json.dumps(s, ensure_ascii=False) + "\n")
print(len(out), "samples,", len({s["kind"] for s in out}), "kinds")
