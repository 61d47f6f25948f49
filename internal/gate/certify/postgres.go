package certify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/secret"
)

// Postgres is the team's store: a table in the history database that
// holds only certificates signed by a key the registry trusts. Reading it
// takes SELECT alone; only a run that signs (CI, with
// CONTESTED_SIGNING_KEY) writes it, and only such a run creates the table.
type Postgres struct {
	pool  *pgxpool.Pool
	trust *Trust
}

var _ Store = (*Postgres)(nil)

// Table is the certificates' table. contested_certificates, the table of
// an earlier contested, is never read, changed or dropped.
const Table = "contested_reuse_certificates"

// columns are the table's columns, in order: what a table of that name
// must have for this version to use it.
var columns = []string{"module", "kind", "key", "digest", "inputs", "branch", "signer", "body", "written"}

const createTable = `CREATE TABLE IF NOT EXISTS ` + Table + ` (
	module  text NOT NULL,
	kind    text NOT NULL,
	key     text NOT NULL,
	digest  text NOT NULL,
	inputs  text NOT NULL,
	branch  text NOT NULL,
	signer  text NOT NULL,
	body    text NOT NULL,
	written timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (module, kind, key, digest, inputs, signer)
)`

// migrationLock is the advisory lock key of the table's creation.
const migrationLock = 0x636f6e7465737468

// ErrTable means a table of the certificates' name is there but is not
// one this version made: it is left alone, and reuse runs without it.
var ErrTable = errors.New("the certificates' table is not this version's")

// NewPostgres is the team's store in the database pool reaches (opened
// through the history's guard, flakes.OpenPostgres). With create, the
// table is made if missing (a run that will write); without, a missing
// table is an empty store. A table of that name with other columns is
// never changed or dropped: ErrTable says what to do.
func NewPostgres(ctx context.Context, pool *pgxpool.Pool, trust *Trust, create bool) (*Postgres, error) {
	if create {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, createTable)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("create the certificates' table: %s", secret.ScrubString(err.Error()))
		}
	}
	var have []string
	rows, err := pool.Query(ctx, `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`, Table)
	if err != nil {
		return nil, fmt.Errorf("read the certificates' table: %s", secret.ScrubString(err.Error()))
	}
	have, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the certificates' table: %s", secret.ScrubString(err.Error()))
	}
	if len(have) > 0 {
		for _, c := range columns {
			if !slices.Contains(have, c) {
				return nil, fmt.Errorf("%w: %s has no column %s; this tool never changes or drops a table it did not make: rename it, or drop it yourself", ErrTable, Table, c)
			}
		}
	}
	return &Postgres{pool: pool, trust: trust}, nil
}

// Write upserts certs, which must be signed, and then removes, for each
// kind and key, the verified rows beyond the newest Keep of their branch,
// in one transaction. A row that does not verify is never removed, nor
// counted: rows nobody trusts cannot push out the ones that matter.
func (p *Postgres) Write(ctx context.Context, certs []Certificate) error {
	if len(certs) == 0 {
		return nil
	}
	for _, c := range certs {
		if c.Signature == "" {
			return fmt.Errorf("write the certificates: the team store takes only signed certificates (set %s)", "CONTESTED_SIGNING_KEY")
		}
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		done := map[string]bool{}
		for _, c := range certs {
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+Table+` (module, kind, key, digest, inputs, branch, signer, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (module, kind, key, digest, inputs, signer) DO UPDATE SET body = EXCLUDED.body, branch = EXCLUDED.branch, written = now()`,
				c.Module, c.Kind, c.Key, c.Digest, inputsKey(c), c.Branch, c.Signer, string(b)); err != nil {
				return err
			}
			done[key(c.Kind, c.Key)] = false
		}
		for _, c := range certs {
			if done[key(c.Kind, c.Key)] {
				continue
			}
			done[key(c.Kind, c.Key)] = true
			if err := p.prune(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write the certificates: %s", secret.ScrubString(err.Error()))
	}
	return nil
}

// inputsKey is the table's inputs column: a package's inputs, or a
// surface's packages' inputs folded.
func inputsKey(c Certificate) string {
	if c.Kind == KindSurface {
		b, _ := json.Marshal(c.Packages)
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	return c.Inputs
}

// prune removes, of c's kind and key, the verified certificates beyond the
// newest Keep of their branch.
func (p *Postgres) prune(ctx context.Context, tx pgx.Tx, c Certificate) error {
	rows, err := tx.Query(ctx, `SELECT digest, inputs, signer, CASE WHEN octet_length(body) <= $4 THEN body ELSE '' END FROM `+Table+`
WHERE module = $1 AND kind = $2 AND key = $3 ORDER BY written DESC LIMIT $5`, c.Module, c.Kind, c.Key, maxFile, maxEntries)
	if err != nil {
		return err
	}
	type row struct{ digest, inputs, signer, body string }
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.digest, &x.inputs, &x.signer, &x.body)
		return x, err
	})
	if err != nil {
		return err
	}
	s := &Set{}
	var drop []row
	byCert := map[string]row{}
	for _, r := range all {
		v, err := p.trust.Open([]byte(r.body), c.Module)
		if err != nil || v.Kind != c.Kind || v.Key != c.Key || v.Digest != r.digest || inputsKey(v) != r.inputs || v.Signer != r.signer {
			continue
		}
		byCert[fileName(v)] = r
		s.add(v)
	}
	for _, old := range expired(s.byKey[key(c.Kind, c.Key)]) {
		drop = append(drop, byCert[fileName(old)])
	}
	for _, r := range drop {
		if _, err := tx.Exec(ctx, `DELETE FROM `+Table+` WHERE module = $1 AND kind = $2 AND key = $3 AND digest = $4 AND inputs = $5 AND signer = $6`,
			c.Module, c.Kind, c.Key, r.digest, r.inputs, r.signer); err != nil {
			return err
		}
	}
	return nil
}

// Read returns the module's certificates that verify: those whose digest
// is among digests, and the newest Keep of each kind and key. Rows over
// the size bound are counted and never fetched; at most maxEntries rows
// are read.
func (p *Postgres) Read(ctx context.Context, module string, digests []string) (*Set, error) {
	s := &Set{}
	var over int
	err := p.pool.QueryRow(ctx, `SELECT count(*) FROM `+Table+` WHERE module = $1 AND octet_length(body) > $2`, module, maxFile).Scan(&over)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return s, nil // no table yet: nothing certified
	}
	if err != nil {
		return s, fmt.Errorf("read the certificates: %s", secret.ScrubString(err.Error()))
	}
	if over > 0 {
		s.Ignored = append(s.Ignored, fmt.Sprintf("%d certificates in the history database ignored: each is over %d KiB, which no certificate is; what they certified runs", over, maxFile>>10))
	}
	rows, err := p.pool.Query(ctx, `SELECT kind, key, digest, body FROM (
	SELECT kind, key, digest, body, written, row_number() OVER (PARTITION BY kind, key ORDER BY written DESC) AS n
	FROM `+Table+` WHERE module = $1 AND octet_length(body) <= $2) r
WHERE n <= $3 OR digest = ANY($4) ORDER BY written DESC LIMIT $5`, module, maxFile, Keep, digests, maxEntries)
	if err != nil {
		return s, fmt.Errorf("read the certificates: %s", secret.ScrubString(err.Error()))
	}
	defer rows.Close()
	for rows.Next() {
		var kind, k, digest, body string
		if err := rows.Scan(&kind, &k, &digest, &body); err != nil {
			return s, fmt.Errorf("read the certificates: %w", err)
		}
		c, err := p.trust.Open([]byte(body), module)
		if err == nil && (c.Kind != kind || c.Key != k || c.Digest != digest) {
			err = fmt.Errorf("%w: its row is %s %s with digest %.12s, it certifies %s %s with digest %.12s", ErrSeal, kind, k, digest, c.Kind, c.Key, c.Digest)
		}
		if err != nil {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s %q in the history database ignored: %v; what it certified runs", kind, k, err))
			continue
		}
		s.add(c)
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read the certificates: %s", secret.ScrubString(err.Error()))
	}
	return s, nil
}
