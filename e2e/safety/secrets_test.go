package safety

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/jackc/pgx/v5"
)

// leakyReport makes the adopter's TestStockReport print what a careless
// test prints: the DSN it was given (keyword form, quoted password), the
// bare password as a driver error might echo it, and PGPASSWORD.
const leakyReport = `func TestStockReport(t *testing.T) {
	if dsn := os.Getenv("CONTESTED_PG_DSN"); dsn != "" {
		t.Log("the fixture's database:", dsn)
		if cfg, err := pgxpool.ParseConfig(dsn); err == nil {
			t.Log("the server said: password", cfg.ConnConfig.Password, "was not accepted")
		}
		t.Log("PGPASSWORD:", os.Getenv("PGPASSWORD"))
	}
`

// TestNoSecretInAnyOutputOrArtifact runs the targets against an external
// layer named by a keyword-form CONTESTED_PG_DSN whose password is
// distinctive (and quoted: it holds a space), with PGPASSWORD set too and
// an adopter test that prints all of it, then greps every line of output
// and every file under the results directory for either password: zero
// hits. The layer is this package's real one, reached as a login role of
// its own so the password is ours.
func TestNoSecretInAnyOutputOrArtifact(t *testing.T) {
	t.Parallel()
	l := faulttest.Layer(t)
	ctx := context.Background()
	admin := l.DB()
	dsnSecret := fmt.Sprintf("kw-%016x", rand.Uint64())
	envSecret := fmt.Sprintf("pgpw-%016x", rand.Uint64())
	password := "Kw " + dsnSecret
	role := fmt.Sprintf("e2e_secret_%08x", rand.Uint32())
	ident := pgx.Identifier{role}.Sanitize()
	var literal string
	if err := admin.QueryRow(ctx, `SELECT quote_literal($1::text)`, password).Scan(&literal); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `CREATE ROLE `+ident+` SUPERUSER LOGIN PASSWORD `+literal); err != nil {
		t.Fatal(err)
	}
	owner := pgx.Identifier{admin.Config().ConnConfig.User}.Sanitize()
	t.Cleanup(func() {
		ctx := context.Background()
		admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
		admin.Exec(ctx, `REASSIGN OWNED BY `+ident+` TO `+owner)
		admin.Exec(ctx, `DROP OWNED BY `+ident)
		admin.Exec(ctx, `DROP ROLE IF EXISTS `+ident)
	})
	cfg := admin.Config().ConnConfig
	dsn := fmt.Sprintf("host=%s port=%d user=%s password='%s' dbname=%s sslmode=disable", cfg.Host, cfg.Port, role, password, cfg.Database)
	if _, err := pgx.ParseConfig(dsn); err != nil {
		t.Fatalf("the keyword DSN does not parse: %v", err)
	}

	tests, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "stock_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	const report = "func TestStockReport(t *testing.T) {\n"
	if !strings.Contains(string(tests), report) {
		t.Fatal("the adopter's stock_test.go has no TestStockReport to make leaky")
	}
	leaky := strings.Replace(string(tests), report, leakyReport, 1)
	secrets := []string{dsnSecret, envSecret}

	t.Run("a layer that accepts the password", func(t *testing.T) {
		t.Parallel()
		dir := e2etest.Adopter(t, map[string]string{"stock_test.go": leaky})
		env := []string{
			"CONTESTED_LAYER=external",
			"CONTESTED_PG_DSN=" + dsn,
			"CONTESTED_TOXIPROXY_URL=" + l.ToxiproxyURL,
			"PGPASSWORD=" + envSecret,
			"ADOPTER_FLAKY_FIXTURE=" + filepath.Join(t.TempDir(), "flaky-counter"),
			"CONTESTED_SEEDS=1",
		}
		out := runTargets(t, dir, env, secrets, []targetRun{
			{[]string{"fault-preflight"}, []int{0}},
			{[]string{"validate"}, []int{1}}, // the flaky fixture fails its first run
			{[]string{"program-gate"}, []int{0, 1}},
			{[]string{"arbitrate", "TestStockReport"}, []int{1}},
			{[]string{"contested", "adopter.stock"}, []int{0}},
		})
		artifacts := grepResults(t, dir, secrets,
			"ladder/TestStockReport.md", "ladder/TestStockReport.json", "contested/adopter.stock.json", "battery/go-test.json", "validate.json")
		// Not vacuous: the adopter's test did print the DSN, and it arrived masked.
		if !strings.Contains(artifacts, "password='xxxxx'") {
			t.Errorf("no artifact holds the masked DSN: the leaky test's output never reached them, so this proved nothing\n%s", out)
		}
	})

	// The same DSN with a password the server refuses: every target says
	// CANNOT RUN and quotes the DSN it could not use, in its output and in
	// what it saves.
	t.Run("a layer that refuses the password", func(t *testing.T) {
		t.Parallel()
		dir := e2etest.Adopter(t, nil)
		wrong := strings.Replace(dsn, dsnSecret, dsnSecret+"-wrong", 1)
		env := []string{
			"CONTESTED_LAYER=external",
			"CONTESTED_PG_DSN=" + wrong,
			"CONTESTED_TOXIPROXY_URL=" + l.ToxiproxyURL,
			"PGPASSWORD=" + envSecret,
			"CONTESTED_SEEDS=1",
		}
		out := runTargets(t, dir, env, secrets, []targetRun{
			{[]string{"fault-preflight"}, []int{0, 3}},
			{[]string{"fault-preflight", "-required"}, []int{3}},
			{[]string{"validate"}, []int{3}},
			{[]string{"program-gate"}, []int{3}},
			{[]string{"arbitrate", "TestStockReport"}, []int{3}},
			{[]string{"contested", "adopter.stock"}, []int{3}},
		})
		grepResults(t, dir, secrets)
		if !strings.Contains(out, "password='xxxxx'") {
			t.Errorf("no target quoted the DSN it could not use (masked): this proved nothing\n%s", out)
		}
	})
}

type targetRun struct {
	args  []string
	codes []int // exit codes that mean the target did its job
}

// runTargets runs each target, checks its exit code and that its output
// holds none of the secrets, and returns all output.
func runTargets(t *testing.T, dir string, env, secrets []string, runs []targetRun) string {
	t.Helper()
	var all strings.Builder
	for _, r := range runs {
		out, code := e2etest.Mage(t, dir, env, r.args...)
		if !slices.Contains(r.codes, code) {
			t.Errorf("mage %v: exit %d, want one of %v:\n%s", r.args, code, r.codes, out)
		}
		fmt.Fprintf(&all, "== mage %v: exit %d\n%s", r.args, code, out)
		for _, s := range secrets {
			if n := strings.Count(out, s); n > 0 {
				t.Errorf("mage %v printed a password %d times:\n%s", r.args, n, out)
			}
		}
	}
	return all.String()
}

// grepResults reads every file under dir's results directory and fails for
// each one that holds a secret; the files named must exist. It returns
// every file's content, for the caller's own checks.
func grepResults(t *testing.T, dir string, secrets []string, want ...string) string {
	t.Helper()
	results := filepath.Join(dir, "test-results")
	var all strings.Builder
	files := 0
	err := filepath.WalkDir(results, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(results, p)
		for _, s := range secrets {
			if n := strings.Count(string(b), s); n > 0 {
				t.Errorf("%s holds a password %d times", rel, n)
			}
		}
		all.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if _, err := os.Stat(filepath.Join(results, w)); err != nil {
			t.Errorf("artifact %s was not written, so it was not checked: %v", w, err)
		}
	}
	t.Logf("%d files under %s checked", files, results)
	return all.String()
}
