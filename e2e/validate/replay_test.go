package validate

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contested/contested/e2e/internal/e2etest"
)

// loadContract is a leg whose component loses a delivery only with four
// clients or more: CLIENTS, an environment variable the test reads, is
// what the failure needs. It reads API_TOKEN too, a secret.
const loadContract = `package stock

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/contested/contested/contested"
)

func TestLoadContract(t *testing.T) {
	t.Run("reset", func(t *testing.T) {
		ctx := context.Background()
		leg := contested.Start(t, "adopter.load", contested.Reset, contested.Span(40))
		directPool(t, leg)
		pool := leg.Pool(ctx)
		clients, _ := strconv.Atoi(os.Getenv("CLIENTS"))
		if os.Getenv("API_TOKEN") == "" {
			t.Log("no API token")
		}
		for n := 0; !done(leg); n++ {
			leg.Step(ctx)
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := Apply(qctx, pool, Delivery{ID: fmt.Sprintf("d%d", n), Item: "widget", Qty: 1})
			cancel()
			if err != nil {
				leg.Observe(err)
			}
		}
		var err error
		if clients >= 4 {
			err = fmt.Errorf("exactly-once violated: with %d clients a delivery was lost", clients)
		}
		leg.Oracle("exactly-once", 1, 1, err)
		if err != nil {
			t.Error(err)
		}
	})
}
`

const loadSurface = `
[[surface]]
id = "adopter.load"
class = "store"
owner = "load-team"
behavior = "deliveries are applied once under load"
oracle = "exactly-once"
legs = ["reset"]
tests = ["TestLoadContract"]
package = "."
`

// TestAReplayCarriesWhatTheTestRead: a leg that fails only with
// CLIENTS=4 fails in a validate run with CLIENTS=4. The printed replay
// carries CLIENTS=4 (and API_TOKEN by reference, its value never printed
// nor saved), and run from a shell without CLIENTS it reproduces the
// failure; arbitrate, from such a shell, reruns the leg with CLIENTS=4
// and finds it consistent, the component's. The GREEN surface beside it
// says nothing of a browser this module has no stage for, and a module
// of one package hears nothing of packages at once.
func TestAReplayCarriesWhatTheTestRead(t *testing.T) {
	t.Parallel()
	registry, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "testdata", "adopter", "contested-surfaces.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := e2etest.Adopter(t, map[string]string{"load_test.go": loadContract, "contested-surfaces.toml": string(registry) + loadSurface})
	const token = "tok-7f3a9c-not-for-printing"
	out, code := e2etest.Mage(t, dir, []string{"CLIENTS=4", "API_TOKEN=" + token}, "validate")
	if code != 1 {
		t.Fatalf("validate with CLIENTS=4: exit %d, want 1:\n%s", code, out)
	}
	replay := regexp.MustCompile(`replay: (.*go test \. -run '\^TestLoadContract\$/\^reset\$' -count=1)`).FindStringSubmatch(out)
	if replay == nil {
		t.Fatalf("validate prints no replay of the failing leg:\n%s", out)
	}
	if !strings.Contains(replay[1], "CLIENTS=4 ") || !strings.Contains(replay[1], `API_TOKEN="$API_TOKEN"`) || strings.Contains(replay[1], "CONTESTED_RUN_ID") || strings.Contains(replay[1], "PATH=") {
		t.Errorf("the replay %q does not carry exactly what the test read", replay[1])
	}
	for _, where := range []string{out, readAll(t, filepath.Join(dir, "test-results"))} {
		if strings.Contains(where, token) {
			t.Errorf("the secret's value is printed or saved")
		}
	}
	if strings.Contains(out, "packages ran") || regexp.MustCompile(`MISSING.*chromium`).MatchString(out) {
		t.Errorf("validate of a one-package module without a browser stage says how many packages ran at once, or misses chromium:\n%s", out)
	}

	// The replay, as printed, from a shell without CLIENTS: it fails as
	// the battery did.
	sh := exec.Command("sh", "-c", replay[1])
	sh.Dir = dir
	sh.Env = append(withoutVar(e2etest.LayerEnv(t), "CLIENTS"), "API_TOKEN="+token)
	b, err := sh.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "with 4 clients a delivery was lost") {
		t.Errorf("the printed replay did not reproduce the failure (%v):\n%s", err, b)
	}

	// arbitrate, from a shell without CLIENTS, reruns it with CLIENTS=4.
	out, code = e2etest.Mage(t, dir, nil, "arbitrate", "TestLoadContract/reset")
	if code != 1 || !strings.Contains(out, "its reruns run with what its package's tests read in the battery: ") || !strings.Contains(out, "CLIENTS=4") ||
		!strings.Contains(out, "failed 2 of 2 reruns") || !strings.Contains(out, "component") {
		t.Errorf("arbitrate without CLIENTS: exit %d; want its reruns with CLIENTS=4, consistent, the component's:\n%s", code, out)
	}
}

// withoutVar is env without name.
func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// readAll is every regular file under dir, concatenated.
func readAll(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}
