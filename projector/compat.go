package projector

import (
	"context"

	"github.com/jmoiron/sqlx"

	"dshmem/sqlstore"
)

// Render is Projector.Render for a caller that holds the pool DB()
// hands out instead of a Projector.
//
// Deprecated: for the observer package until it calls Projector.Render
// (or renders through its store's Reader); it goes with sqlstore's DB().
func Render(ctx context.Context, db *sqlx.DB, rel string) (Rendered, bool, error) {
	return render(ctx, sqlstore.ReaderOn(db), rel)
}

// Files is Projector.Files for a caller that holds the pool DB() hands
// out instead of a Projector.
//
// Deprecated: for the observer package until it calls Projector.Files;
// it goes with sqlstore's DB().
func Files(ctx context.Context, db *sqlx.DB) ([]File, error) {
	return files(ctx, sqlstore.ReaderOn(db))
}
