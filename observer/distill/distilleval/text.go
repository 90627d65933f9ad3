package distilleval

import (
	"fmt"
	"io"
	"strings"

	"dshmem/observer/distill"
)

// WriteText prints a report as the eval command shows it: a table of
// rows, then up to maxConfusions confusions (all when < 0).
func WriteText(w io.Writer, r Report, maxConfusions int) {
	fmt.Fprintf(w, "split %s: %d cases, %d exactly right", r.Split, r.Cases, r.Exact)
	if r.Errors > 0 {
		fmt.Fprintf(w, ", %d distiller errors", r.Errors)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-10s", "op")
	for _, l := range Languages {
		fmt.Fprintf(w, " | %-4s %5s %5s %5s %9s", l, "P", "R", "F1", "tp/fp/fn")
	}
	fmt.Fprintln(w)
	for _, op := range RowKinds {
		fmt.Fprintf(w, "  %-10s", op)
		for _, l := range Languages {
			row, _ := r.Find(op, l)
			fmt.Fprintf(w, " | %-4s %5.3f %5.3f %5.3f %9s", "", row.Precision, row.Recall, row.F1, fmt.Sprintf("%d/%d/%d", row.TP, row.FP, row.FN))
		}
		fmt.Fprintln(w)
	}
	if len(r.Confusions) == 0 {
		return
	}
	fmt.Fprintf(w, "  confusions (%d cases; expected → got, unmatched ops only):\n", len(r.Confusions))
	for i, c := range r.Confusions {
		if maxConfusions >= 0 && i == maxConfusions {
			fmt.Fprintf(w, "    … %d more (--confusions -1 shows all)\n", len(r.Confusions)-i)
			break
		}
		exp, got := strings.Join(c.Expected, " "), strings.Join(c.Got, " ")
		if exp == "" {
			exp = "-"
		}
		if got == "" {
			got = "-"
		}
		text := strings.Join(strings.Fields(distill.TruncateRunes(c.Text, 70)), " ")
		fmt.Fprintf(w, "    %-12s %-20s %s → %s  %q\n", c.Case, c.Kind, exp, got, text)
		if c.Error != "" {
			fmt.Fprintf(w, "    %12s error: %s\n", "", c.Error)
		}
	}
}
