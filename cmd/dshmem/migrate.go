package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"dshmem/observer"
	"dshmem/sqlstore"
)

func init() {
	register(&command{
		name:    "migrate",
		summary: "show or change the index schema version",
		usage: `migrate status|up|down-to N

The index schema is versioned with embedded goose migrations, applied on
every open, so 'up' is rarely needed by hand.
  status      list each migration and whether it is applied
  up          apply every pending migration
  down-to N   roll back to version N (0 empties the schema); the index
              is derived, so 'dshmem replay' can always rebuild it
`,
		run: runMigrate,
	})
}

func runMigrate(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["migrate"]
	pos, err := env.parseFlags(c, newFlags(c), args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"needs status, up or down-to N"}
	}
	path := filepath.Join(env.root, sqlstore.IndexFile)
	switch pos[0] {
	case "status":
		if len(pos) != 1 {
			return usageError{"status takes no arguments"}
		}
		if err := requireRoot(env); err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no index at %s: run 'dshmem migrate up' to create it (or any command that opens the root)", path)
		}
		return printMigrations(env, path)
	case "up", "down-to":
		var target int64
		if pos[0] == "down-to" {
			if len(pos) != 2 {
				return usageError{"down-to needs a version N"}
			}
			n, err := strconv.ParseInt(pos[1], 10, 64)
			if err != nil || n < 0 {
				return usageError{fmt.Sprintf("version %q is not a whole number ≥ 0", pos[1])}
			}
			target = n
			// Rolling back a root that is not there is a mistyped root,
			// not a request to make one.
			if err := requireRoot(env); err != nil {
				return err
			}
		} else if len(pos) != 1 {
			return usageError{"up takes no arguments"}
		}
		if err := os.MkdirAll(env.root, 0o700); err != nil {
			return fmt.Errorf("create root: %w", err)
		}
		release, err := observer.LockRoot(env.root)
		if err != nil {
			return err
		}
		defer release()
		if pos[0] == "up" {
			err = sqlstore.MigrateUp(path)
		} else {
			err = sqlstore.MigrateDownTo(path, target)
		}
		if err != nil {
			return err
		}
		return printMigrations(env, path)
	default:
		return usageError{fmt.Sprintf("unknown migrate action %q: use status, up or down-to N", pos[0])}
	}
}

// printMigrations lists each migration of the index at path and whether
// it is applied.
func printMigrations(env *cliEnv, path string) error {
	states, err := sqlstore.MigrationStatus(path)
	if err != nil {
		return err
	}
	for _, s := range states {
		state := "pending"
		if s.Applied {
			state = "applied"
		}
		fmt.Fprintf(env.stdout, "%5d  %-8s %s\n", s.Version, state, s.Name)
	}
	return nil
}
