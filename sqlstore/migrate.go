package sqlstore

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"
)

// MigrationState is one migration and whether the index has it.
type MigrationState struct {
	Version int64
	Name    string // file name, e.g. "00001_events.sql"
	Applied bool
}

// openForMigrate opens the index without applying anything.
func openForMigrate(path string) (*goose.Provider, func(), error) {
	db, err := openWriter(path, nil)
	if err != nil {
		return nil, nil, err
	}
	p, err := newProvider(db.DB)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open index %s: %w", path, err)
	}
	return p, func() { db.Close() }, nil
}

// MigrationStatus lists every known migration in version order.
func MigrationStatus(path string) ([]MigrationState, error) {
	p, done, err := openForMigrate(path)
	if err != nil {
		return nil, err
	}
	defer done()
	st, err := p.Status(context.Background())
	if err != nil {
		return nil, fmt.Errorf("migration status of %s: %w", path, err)
	}
	out := make([]MigrationState, 0, len(st))
	for _, m := range st {
		out = append(out, MigrationState{
			Version: m.Source.Version,
			Name:    baseName(m.Source.Path),
			Applied: m.State == goose.StateApplied,
		})
	}
	return out, nil
}

// MigrateUp applies every pending migration.
func MigrateUp(path string) error {
	p, done, err := openForMigrate(path)
	if err != nil {
		return err
	}
	defer done()
	if _, err := p.Up(context.Background()); err != nil {
		return fmt.Errorf("migrate %s up: %w", path, err)
	}
	return nil
}

// MigrateDownTo rolls back every migration above version (0 removes the
// whole schema). The index is derived; `dshmem replay` refills it.
func MigrateDownTo(path string, version int64) error {
	if version < 0 {
		return fmt.Errorf("migrate %s down to %d: version must be 0 or more", path, version)
	}
	p, done, err := openForMigrate(path)
	if err != nil {
		return err
	}
	defer done()
	if _, err := p.DownTo(context.Background(), version); err != nil {
		return fmt.Errorf("migrate %s down to %d: %w", path, version, err)
	}
	return nil
}

// SchemaVersions returns the index's migration version and the newest
// this build knows. It only reads, so it works on a store opened with
// OpenReadOnly: a reader that may not migrate learns that it should not
// read an index an older build made.
func (s *Store) SchemaVersions(ctx context.Context) (current, latest int64, err error) {
	p, err := newProvider(s.db.DB)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version of %s: %w", s.path, err)
	}
	if current, latest, err = p.GetVersions(ctx); err != nil {
		return 0, 0, fmt.Errorf("schema version of %s: %w", s.path, err)
	}
	return current, latest, nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
