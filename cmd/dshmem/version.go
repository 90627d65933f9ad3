package main

import (
	"context"
	"fmt"

	"dshmem/observer/dsh/plugin"
)

// version is dshmem's release. The host plugin's version is the one
// declared in the plugin file this binary embeds.
const version = "0.10.0"

func init() {
	register(&command{
		name:    "version",
		summary: "print dshmem's version and its host plugin's (also --version)",
		usage: `version

Prints "dshmem VERSION (host plugin N)": N is the version of the DSH host
plugin embedded in this binary, which 'dshmem dsh install' writes and
'dshmem dsh status' compares with the installed one.
`,
		run: func(ctx context.Context, env *cliEnv, args []string) error {
			c := commands["version"]
			if err := env.parseNoArgs(c, newFlags(c), args); err != nil {
				return err
			}
			fmt.Fprintln(env.stdout, versionLine())
			return nil
		},
	})
}

func versionLine() string {
	return fmt.Sprintf("dshmem %s (host plugin %s)", version, plugin.Version())
}
