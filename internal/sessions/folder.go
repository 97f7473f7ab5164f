package sessions

import (
	"context"
	"database/sql"

	"github.com/qkit-cli/qkit/internal/sessionrec"
)

// lastInFolder is the id of origin's most recently updated session in the folder dir, "" when it
// has none. The folder is sessionrec.SameFolder's, not the text of the path: a session recorded
// through a link to dir is in it, as ask --session and sessions list --cwd decide.
func lastInFolder(ctx context.Context, tx *sql.Tx, origin, dir string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, cwd FROM sessions WHERE origin = ? ORDER BY updated_at DESC, id DESC`, origin)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	in := sessionrec.InFolder(dir)
	for rows.Next() {
		var id, cwd string
		if err := rows.Scan(&id, &cwd); err != nil {
			return "", err
		}
		if in(cwd) {
			return id, nil
		}
	}
	return "", rows.Err()
}
