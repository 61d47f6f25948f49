package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/secret"
)

// serviceCredentials creates the login role the replicas connect as,
// serviceRole (or, left by an earlier rig on the same server, gives it a
// fresh password and takes back any right it gained), grants it DML on the
// tables and sequences of the service's database that db is connected to,
// and returns its password. The role is no superuser and may create
// nothing: it may only read and write the service's tables, which is all a
// service does. The test plane's superuser DSN never reaches a replica.
// admin is connected to the test plane as its superuser; db to the
// service's database.
func serviceCredentials(ctx context.Context, admin, db *pgxpool.Pool, serviceRole string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("service role: %w", err)
	}
	password := hex.EncodeToString(b[:])
	secret.Add(password)
	role := pgx.Identifier{serviceRole}.Sanitize()
	// CREATE and ALTER ROLE take no bind parameters: Postgres quotes the literal.
	var literal string
	if err := admin.QueryRow(ctx, `SELECT quote_literal($1::text)`, password).Scan(&literal); err != nil {
		return "", fmt.Errorf("service role: %w", err)
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, serviceRole).Scan(&exists); err != nil {
		return "", fmt.Errorf("service role: %w", err)
	}
	verb := "CREATE"
	if exists {
		verb = "ALTER"
	}
	attrs := ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD `
	if _, err := admin.Exec(ctx, verb+` ROLE `+role+attrs+literal); err != nil {
		return "", fmt.Errorf("service role: %s role: %w", strings.ToLower(verb), err)
	}
	for _, stmt := range []string{
		`GRANT USAGE ON SCHEMA public TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
		`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	} {
		if _, err := db.Exec(ctx, stmt); err != nil {
			return "", fmt.Errorf("service role: grant: %w", err)
		}
	}
	return password, nil
}

// serviceDSN is the DSN a replica uses: the service role at hostport, in
// the service's database.
func serviceDSN(hostport string, spec Spec, password string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(spec.role(), password), Host: hostport,
		Path: "/" + spec.database(), RawQuery: "sslmode=disable"}
	return u.String()
}

// dsnFiles writes one file per replica, mode 0600 in a directory of mode
// 0700, for local replicas (Replica.DSNFile). Remove the directory when
// the replicas are gone.
func dsnFiles(dsns []string) (dir string, paths []string, err error) {
	dir, err = os.MkdirTemp("", "contested-rig-dsn-")
	if err != nil {
		return "", nil, err
	}
	for i, dsn := range dsns {
		p := filepath.Join(dir, fmt.Sprintf("replica-%d.dsn", i+1))
		if err := os.WriteFile(p, []byte(dsn+"\n"), 0o600); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		paths = append(paths, p)
	}
	return dir, paths, nil
}

// replicaEnv is this process's environment without the variables that
// carry credentials, contested's and the service's own (secretEnv): a
// local replica inherits nothing it was not given.
func replicaEnv(secretEnv []string) []string {
	drop := append(append([]string{secret.EnvPassword}, secret.EnvDSNs...), secretEnv...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	return env
}
