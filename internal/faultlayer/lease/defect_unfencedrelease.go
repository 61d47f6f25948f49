//go:build contested_defect_unfencedrelease

package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReleaseUnfenced is Release without its fence: it frees the port whatever epoch and holder
// the caller names, so a holder whose lease was already released or taken over frees someone
// else's port. It is a planted defect that exists only in builds with the test-only tag
// contested_defect_unfencedrelease: the lease contract (examples/leasetable) swaps it in to
// prove its oracles catch a release that is not fenced by epoch. Normal builds do not contain
// it.
func (t *Table) ReleaseUnfenced(ctx context.Context, l Lease) (time.Time, error) {
	var at time.Time
	err := t.db.QueryRow(ctx, `UPDATE fault_port_leases
		SET holder = NULL, owner = NULL, run_id = NULL, expires_at = NULL, released_at = clock_timestamp()
		WHERE port = $1 RETURNING released_at`, l.Port).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("release port %d epoch %d for %s: %w", l.Port, l.Epoch, l.Holder, ErrFenced)
	}
	if err != nil {
		return time.Time{}, classify("release lease", err)
	}
	return at, nil
}
