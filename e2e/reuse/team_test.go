package reuse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/gate/certify"
)

// historySchema is a team history database of its own: the shared
// layer's Postgres, in a schema made for the test and dropped after it.
func historySchema(t *testing.T) (dsn string, pool *pgxpool.Pool) {
	t.Helper()
	base := faulttest.Layer(t).PostgresDSN
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	schema := fmt.Sprintf("team_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("the layer's DSN is no URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return u.String(), pool
}

// TestTwoDevelopersAndCIShareOneStore: CI signs with a key the registry
// trusts and writes the team's table; a developer's pre-push reuses what
// CI certified; another developer's GREEN stays their own; what a
// developer with write access to the table puts there counts for nobody.
func TestTwoDevelopersAndCIShareOneStore(t *testing.T) {
	t.Parallel()
	dsn, pool := historySchema(t)
	keys := filepath.Join(t.TempDir(), "keys")
	scratch := e2etest.Adopter(t, nil)
	if out, code := e2etest.Mage(t, scratch, nil, "certkey", keys); code != 0 {
		t.Fatalf("certkey: exit %d:\n%s", code, out)
	}
	pub := strings.TrimSpace(read(t, filepath.Join(keys, "contested-signing.pub")))
	registry := read(t, filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml")) + "\n[reuse]\ntrust = [\"" + pub + "\"]\n"
	checkout := func() string { return e2etest.Adopter(t, map[string]string{"contested-surfaces.toml": registry}) }
	ciDir, aliceDir, bobDir := checkout(), checkout(), checkout()
	home := func() string { return "XDG_CONFIG_HOME=" + t.TempDir() }
	ciEnv := []string{"CI=true", "CONTESTED_SIGNING_KEY=" + filepath.Join(keys, "contested-signing.key"), "CONTESTED_HISTORY_DSN=" + dsn, home()}
	aliceEnv := []string{"CONTESTED_HISTORY_DSN=" + dsn, home()}
	bobEnv := []string{"CONTESTED_HISTORY_DSN=" + dsn, home()}

	ci, out, _ := validate(t, ciDir, ciEnv)
	if ci.Reuse.Certified == 0 || !strings.Contains(out, "signed with "+pub+", in the history database") {
		t.Fatalf("CI: certified %d; want its certificates signed and in the team's table:\n%s", ci.Reuse.Certified, out)
	}
	bob, out, _ := validate(t, bobDir, bobEnv)
	if !bob.Reuse.All {
		t.Fatalf("Bob, nothing changed since CI: reuse %+v; want everything reused from CI's run:\n%s", bob.Reuse, out)
	}
	wantReused(t, "Bob", bob, ci.RunID, []string{stockPkg}, []string{"adopter.stock"})

	// Alice's change is GREEN and stays her own.
	edit(t, aliceDir, "stock.go", "package stock", "// Package stock, as Alice has it.\npackage stock")
	alice, out, _ := validate(t, aliceDir, aliceEnv)
	if alice.Reuse.Certified == 0 || !strings.Contains(out, "your own, under history/certificates; the team's store takes only certificates a trusted key signs") {
		t.Errorf("Alice: certified %d; want her certificates kept as her own, saying why not the team's:\n%s", alice.Reuse.Certified, out)
	}
	if again, _, _ := validate(t, aliceDir, aliceEnv); !again.Reuse.All {
		t.Errorf("Alice again, nothing changed: reuse %+v; want her own certificates reused", again.Reuse)
	}

	// Alice has write access to the table: her own certificate copied in,
	// and CI's surface certificate edited to name her run.
	files, _ := filepath.Glob(filepath.Join(aliceDir, "test-results", certify.DirName, "surface-*.json"))
	if len(files) == 0 {
		t.Fatal("Alice has no surface certificate")
	}
	var mine certify.Certificate
	e2etest.ReadJSON(t, files[0], &mine)
	body, _ := json.Marshal(mine)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO `+certify.Table+` (module, kind, key, digest, inputs, branch, signer, body) VALUES ($1, $2, $3, $4, 'x', '', '', $5)`,
		mine.Module, mine.Kind, mine.Key, mine.Digest, string(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE `+certify.Table+` SET body = replace(body, $1, $2) WHERE kind = 'surface' AND signer <> ''`,
		`"run_id":"`+ci.RunID+`"`, `"run_id":"`+alice.RunID+`"`); err != nil {
		t.Fatal(err)
	}
	bob2, out, _ := validate(t, bobDir, bobEnv)
	if bob2.Reuse.All || !strings.Contains(out, "signature does not match") || !strings.Contains(out, "seal is not this user's") {
		t.Errorf("Bob after Alice wrote the table: reuse %+v; want both rows ignored, each saying why, and the surface run:\n%s", bob2.Reuse, out)
	}
	wantReused(t, "Bob after Alice wrote the table", bob2, "", nil, nil)
	if _, err := os.Stat(filepath.Join(bobDir, "test-results", "validate.json")); err != nil {
		t.Fatal(err)
	}
}
