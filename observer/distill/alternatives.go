package distill

import "slices"

// alternatives are groups of interchangeable tools and values: naming one
// as the new choice makes an entry naming another of its group the
// corrected one. Each member is a list of aliases (tokenize terms, lower
// case); a member of several words is matched by any of them, so keep
// such words specific.
var alternatives = [][][]string{
	{{"mysql"}, {"mariadb"}, {"postgresql", "postgres", "pg"}, {"sqlite", "sqlite3"}, {"mongodb", "mongo"}, {"oracle"},
		{"sqlserver", "mssql"}, {"tidb"}, {"cockroachdb"}, {"clickhouse"}, {"dynamodb"}, {"cassandra"}},
	{{"redis"}, {"memcached"}, {"valkey"}, {"keydb"}},
	{{"npm"}, {"pnpm"}, {"yarn"}, {"bun"}},
	{{"pip"}, {"poetry"}, {"uv"}, {"conda"}, {"pipenv"}},
	{{"node", "nodejs"}, {"deno"}, {"bun"}},
	{{"grpc"}, {"rest"}, {"graphql"}, {"thrift"}},
	{{"tabs", "tab"}, {"spaces", "空格"}},
	{{"vim"}, {"neovim", "nvim"}, {"emacs"}, {"vscode"}, {"jetbrains", "intellij", "goland"}},
	{{"jest"}, {"vitest"}, {"mocha"}, {"jasmine"}},
	{{"pytest"}, {"unittest"}, {"nose"}},
	{{"webpack"}, {"vite"}, {"rollup"}, {"esbuild"}, {"parcel"}, {"turbopack"}},
	{{"docker"}, {"podman"}, {"containerd"}},
	{{"kafka"}, {"rabbitmq"}, {"nats"}, {"pulsar"}, {"sqs"}, {"activemq"}},
	{{"jenkins"}, {"github", "actions"}, {"gitlab"}, {"circleci"}, {"buildkite"}, {"drone"}, {"travis"}, {"teamcity"}, {"bamboo"}},
	{{"loki"}, {"elk", "elasticsearch", "kibana", "logstash"}, {"datadog"}, {"splunk"}, {"graylog"}, {"grafana"}, {"cloudwatch"}},
	{{"gorm"}, {"sqlc"}, {"sqlx"}, {"ent"}, {"bun"}},
	{{"flake8"}, {"ruff"}, {"pylint"}},
	{{"eslint"}, {"biome"}, {"oxlint"}},
	{{"master"}, {"main"}, {"trunk"}},
	{{"jwt"}, {"session"}, {"oauth"}, {"paseto"}},
	{{"english", "英文", "英语"}, {"chinese", "中文", "汉语"}},
	{{"s3"}, {"oss"}, {"gcs"}, {"minio"}, {"r2"}},
	{{"makefile", "makefiles"}, {"justfile"}, {"taskfile"}, {"bazel"}},
	{{"aws"}, {"gcp"}, {"azure"}, {"阿里", "aliyun"}, {"腾讯"}},
	{{"nginx"}, {"caddy"}, {"traefik"}, {"envoy"}, {"haproxy"}},
	{{"terraform"}, {"pulumi"}, {"cloudformation"}},
	{{"react"}, {"vue"}, {"svelte"}, {"angular"}, {"solid", "solidjs"}},
	{{"consul"}, {"etcd"}, {"zookeeper"}},
	{{"vault"}, {"sops"}, {"kms"}},
}

// alternativesOf returns the aliases of every other member of each group
// that one of terms belongs to.
func alternativesOf(terms []string) []string {
	var out []string
	for _, group := range alternatives {
		own := -1
		for i, member := range group {
			if overlap(member, terms) > 0 {
				own = i
				break
			}
		}
		if own < 0 {
			continue
		}
		for i, member := range group {
			if i != own {
				for _, a := range member {
					if !slices.Contains(out, a) {
						out = append(out, a)
					}
				}
			}
		}
	}
	return out
}

// aliasesOf returns every alias of the members terms name.
func aliasesOf(terms []string) []string {
	var out []string
	for _, group := range alternatives {
		for _, member := range group {
			if overlap(member, terms) > 0 {
				out = append(out, member...)
			}
		}
	}
	return out
}
