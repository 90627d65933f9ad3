package encoder

import (
	"errors"
	"time"
)

// Report is what Inspect found of the model in a directory, as
// `dshmem model status` prints it (the JSON names are its --json).
type Report struct {
	Model     string  `json:"model"`
	Version   string  `json:"version"`
	Dir       string  `json:"dir"`
	Installed bool    `json:"installed"` // verified and loaded
	Status    string  `json:"status"`    // installed, verified | not installed (…) | damaged: … | does not load: …
	UsedBy    string  `json:"usedBy"`
	LoadMS    float64 `json:"loadMs,omitempty"`  // Load, with a cold page cache or not
	QueryMS   float64 `json:"queryMs,omitempty"` // the first Encode of StatusQuery
}

// StatusQuery is the query Inspect times: 14 pieces, a typical recall.
const StatusQuery = "What did we decide about the database migrations last week?"

// usedBy names what reads the vectors.
const usedBy = "recall, search and packets (English queries and texts only; dshmem serve fills the index's vectors, replay rebuilds them); dshmem eval madial"

// Inspect verifies the model in dir and, when it verifies, times
// loading it and encoding StatusQuery once with a fresh Encoder. What it
// finds wrong is in the Report's Status, not an error: a missing or
// damaged model is a state to report.
func Inspect(dir string) Report {
	r := Report{Model: ModelID, Version: ModelVersion, Dir: dir, UsedBy: usedBy}
	switch err := Verify(dir); {
	case errors.Is(err, ErrNotInstalled):
		r.Status = "not installed (dshmem model install)"
	case err != nil:
		r.Status = "damaged: " + err.Error()
	default:
		t0 := time.Now()
		m, err := Load(dir)
		if err != nil {
			r.Status = "does not load: " + err.Error()
			break
		}
		r.Installed, r.Status, r.LoadMS = true, "installed, verified", millis(time.Since(t0))
		e := m.NewEncoder()
		t0 = time.Now()
		e.Encode(nil, StatusQuery)
		r.QueryMS = millis(time.Since(t0))
	}
	return r
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
