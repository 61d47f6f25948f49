package certify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/secret"
)

// Store keeps certificates.
type Store interface {
	// Write stores certs, each replacing the one of its kind, key and
	// digest, and keeps the newest Keep of each kind and key.
	Write(ctx context.Context, certs []Certificate) error
	// Read returns the module's valid certificates and a line for each
	// it ignored.
	Read(ctx context.Context, module string) (*Set, error)
}

// DirName is the local store's directory, relative to the results
// directory, beside the flake history.
const DirName = "history/certificates"

// maxFile caps a certificate file: a real one is a few kilobytes.
const maxFile = 1 << 20

// File is the local store: one file per kind, key and digest under the
// results directory, written atomically, read without following a link
// and without waiting on a FIFO.
type File struct {
	root string
}

var _ Store = (*File)(nil)

// NewFile is the local store of the results directory root.
func NewFile(root string) *File { return &File{root: root} }

// fileName is the file of a certificate: its kind and hashes of its key
// and digest, so that neither names a path. The files of one kind and key
// share the prefix keyPrefix gives.
func fileName(kind, k, digest string) string {
	h := sha256.Sum256([]byte(digest))
	return keyPrefix(kind, k) + hex.EncodeToString(h[:8]) + ".json"
}

func keyPrefix(kind, k string) string {
	h := sha256.Sum256([]byte(k))
	return kind + "-" + hex.EncodeToString(h[:12]) + "-"
}

// firstShapeName is the file a certificate of kind and key had when a
// store held one per key: still read, and removed once its key is written
// again.
func firstShapeName(kind, k string) string {
	return strings.TrimSuffix(keyPrefix(kind, k), "-") + ".json"
}

// Write stores each certificate in its own file, atomically, then removes
// the valid certificates of each kind and key written beyond the newest
// Keep. A file that does not verify is left where it is, for the line
// Read gives it.
func (f *File) Write(ctx context.Context, certs []Certificate) error {
	if len(certs) == 0 {
		return nil
	}
	r, err := atomicfile.MakeRoot(f.root)
	if err != nil {
		return fmt.Errorf("write the certificates: %w", err)
	}
	for _, c := range certs {
		if err := r.WriteJSON(path.Join(DirName, fileName(c.Kind, c.Key, c.Digest)), c); err != nil {
			return fmt.Errorf("write the certificates: %w", err)
		}
	}
	if err := f.prune(r, certs); err != nil {
		return fmt.Errorf("write the certificates: %w", err)
	}
	return nil
}

// prune removes, for each kind and key in certs, its file of the first
// shape and the valid certificate files older than the newest Keep.
func (f *File) prune(r *atomicfile.Root, certs []Certificate) error {
	d, err := r.OpenDir(DirName)
	if err != nil {
		return err
	}
	defer d.Close()
	for _, c := range certs {
		if err := d.Remove(firstShapeName(c.Kind, c.Key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	s, err := readDir(d, certs[0].Module)
	if err != nil {
		return err
	}
	for _, c := range certs {
		held := s.byKey[key(c.Kind, c.Key)]
		for _, old := range held[min(Keep, len(held)):] {
			if err := d.Remove(fileName(old.Kind, old.Key, old.Digest)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Read reads every certificate file; one that cannot be read or does not
// verify is ignored with a line naming it and why.
func (f *File) Read(ctx context.Context, module string) (*Set, error) {
	s := &Set{}
	r, err := atomicfile.OpenRoot(f.root)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read the certificates: %w", err)
	}
	d, err := r.OpenDir(DirName)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read the certificates: %w", err)
	}
	defer d.Close()
	s, err = readDir(d, module)
	if err != nil {
		return s, fmt.Errorf("read the certificates: %w", err)
	}
	return s, nil
}

// readDir reads every certificate file in d.
func readDir(d *atomicfile.Dir, module string) (*Set, error) {
	s := &Set{}
	entries, err := d.ReadDir(-1)
	if err != nil && !errors.Is(err, io.EOF) {
		return s, err
	}
	var buf []byte
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		where := path.Join(DirName, name)
		b, _, err := d.ReadFile(name, buf, maxFile)
		if err != nil {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s ignored: %v; what it certified runs", where, err))
			continue
		}
		buf = b[:0]
		c, err := Open(b, module)
		if err != nil {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s ignored: %v; what it certified runs", where, err))
			continue
		}
		if name != fileName(c.Kind, c.Key, c.Digest) && name != firstShapeName(c.Kind, c.Key) {
			s.Ignored = append(s.Ignored, fmt.Sprintf("certificate %s ignored: it certifies %s %s, whose file is another; what it certified runs", where, c.Kind, c.Key))
			continue
		}
		s.add(c)
	}
	return s, nil
}

// Postgres is the team's store: a table in the history database.
type Postgres struct {
	pool *pgxpool.Pool
}

var _ Store = (*Postgres)(nil)

// table is the certificates' table.
const table = "contested_certificates"

// migration creates the table, one row per kind, key and digest. A table
// of the first shape (one row per kind and key, no digest) is dropped
// first: certificates are a cache of results, and the next GREEN run
// writes them again.
const migration = `
DO $$ BEGIN
	IF to_regclass('` + table + `') IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = '` + table + `' AND column_name = 'digest') THEN
		DROP TABLE ` + table + `;
	END IF;
END $$;
CREATE TABLE IF NOT EXISTS ` + table + ` (
	module  text NOT NULL,
	kind    text NOT NULL,
	key     text NOT NULL,
	digest  text NOT NULL,
	body    text NOT NULL,
	written timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (module, kind, key, digest)
);`

// prune keeps the newest Keep rows of one module, kind and key.
const prune = `DELETE FROM ` + table + ` WHERE module = $1 AND kind = $2 AND key = $3 AND digest NOT IN (
	SELECT digest FROM ` + table + ` WHERE module = $1 AND kind = $2 AND key = $3 ORDER BY written DESC, digest LIMIT $4)`

// migrationLock is the advisory lock key of the migration.
const migrationLock = 0x636f6e7465737467

// NewPostgres is the store in the database pool reaches (opened through
// the history's guard, flakes.OpenPostgres), its table created if missing.
func NewPostgres(ctx context.Context, pool *pgxpool.Pool) (*Postgres, error) {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, migration)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate the certificates' table: %s", secret.ScrubString(err.Error()))
	}
	return &Postgres{pool: pool}, nil
}

// Write upserts certs and keeps the newest Keep of each kind and key, in
// one transaction.
func (p *Postgres) Write(ctx context.Context, certs []Certificate) error {
	if len(certs) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		for _, c := range certs {
			b, err := marshal(c)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (module, kind, key, digest, body) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (module, kind, key, digest) DO UPDATE SET body = EXCLUDED.body, written = now()`, c.Module, c.Kind, c.Key, c.Digest, string(b)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, prune, c.Module, c.Kind, c.Key, Keep); err != nil {
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

// Read returns the module's certificates; a row that does not verify is
// ignored with a line that says why.
func (p *Postgres) Read(ctx context.Context, module string) (*Set, error) {
	s := &Set{}
	rows, err := p.pool.Query(ctx, `SELECT kind, key, digest, body FROM `+table+` WHERE module = $1 ORDER BY kind, key, written DESC`, module)
	if err != nil {
		return s, fmt.Errorf("read the certificates: %s", secret.ScrubString(err.Error()))
	}
	defer rows.Close()
	for rows.Next() {
		var kind, k, digest, body string
		if err := rows.Scan(&kind, &k, &digest, &body); err != nil {
			return s, fmt.Errorf("read the certificates: %w", err)
		}
		c, err := Open([]byte(body), module)
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
