package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"dshmem/events/payload"
	"dshmem/observer"
)

// procedureHistory prints the stage changes of learned procedure id
// (history's p-… form).
func procedureHistory(ctx context.Context, env *cliEnv, eng *observer.Engine, id string, asJSON bool) error {
	p, ok, err := eng.Store().Procedure(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no procedure %s in the index of %s: 'dshmem history' takes an id a procedure op named (p-…)", id, env.root)
	}
	vs, err := eng.Store().ProcedureHistory(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(vs)
	}
	fmt.Fprintf(env.stdout, "%s  %s  (procedure, %s, scope %s)\n", p.ID, oneLine(p.Trigger, 120), p.Stage, p.Scope)
	for _, v := range vs {
		fmt.Fprintf(env.stdout, "v%d  %s  %s  memory/ops %s seq %d %s\n", v.Version, v.Time, v.Stage, v.Stream, v.Seq, v.EventID)
		var st payload.Procedure
		if json.Unmarshal([]byte(v.State), &st) == nil {
			fmt.Fprintf(env.stdout, "    steps: %s\n", oneLine(strings.Join(st.Steps, " → "), 200))
			fmt.Fprintf(env.stdout, "    check: %s; %d sessions, %d failures\n", oneLine(st.Check, 120), len(st.Sessions), st.Failures)
		}
		if v.Reason != "" {
			fmt.Fprintf(env.stdout, "    reason: %s\n", oneLine(v.Reason, 200))
		}
		if len(v.Evidence) > 0 {
			fmt.Fprintf(env.stdout, "    evidence: %s\n", strings.Join(v.Evidence, ", "))
		}
	}
	return nil
}
