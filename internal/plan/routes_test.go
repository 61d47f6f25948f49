package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/markdown"
	"github.com/contested/contested/internal/touched"
)

// certificates is a set holding one package certificate of the bank module
// for each import path in touchedBy, recording what its tests opened, read
// back from a file store through the public reading path (Read, Latest).
func certificates(t *testing.T, touchedBy map[string][]string) *certify.Set {
	t.Helper()
	trust, err := certify.NewTrust([]byte(strings.Repeat("k", 32)), "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	var certs []certify.Certificate
	for ip, open := range touchedBy {
		c, err := trust.Vouch(certify.Certificate{Module: "example.com/bank", Kind: certify.KindPackage, Key: ip, Digest: sum(ip), RunID: "run-1",
			At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Verdict: "PASS", Touched: &touched.Record{Open: open}, Inputs: sum("inputs")})
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	store := certify.NewFile(t.TempDir(), trust)
	if err := store.Write(context.Background(), certs); err != nil {
		t.Fatal(err)
	}
	set, err := store.Read(context.Background(), "example.com/bank", nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestNonGoFilesReachPackages: a change to a file that is not Go reaches
// packages by each route a test can depend on it, and the plan names the
// route, in plan.json and in plan.md.
func TestNonGoFilesReachPackages(t *testing.T) {
	const reads = `
[reuse.reads]
"./e2e" = ["deploy/compose.yaml"]
`
	tests := []struct {
		name     string
		file     string
		registry string
		touched  map[string][]string
		nestedGo string // a go.mod written in this directory of the module
		want     []Reach
		surfaces []string
	}{
		{name: "a fixture in a package's directory reaches that package", file: "deposit/fixture.json",
			want: []Reach{{"deposit/fixture.json", "example.com/bank/deposit", RouteDirectory}}, surfaces: []string{"bank.deposit"}},
		{name: "a migration in a subdirectory without Go files reaches the package above it", file: "deposit/migrations/001_init.sql",
			want: []Reach{{"deposit/migrations/001_init.sql", "example.com/bank/deposit", RouteDirectory}}, surfaces: []string{"bank.deposit"}},
		{name: "a testdata file reaches its package by testdata and by its directory", file: "deposit/testdata/golden.json",
			want: []Reach{{"deposit/testdata/golden.json", "example.com/bank/deposit", RouteTestdata}, {"deposit/testdata/golden.json", "example.com/bank/deposit", RouteDirectory}}, surfaces: []string{"bank.deposit"}},
		{name: "a file inside another module below a package reaches nothing", file: "deposit/tool/config.yaml", nestedGo: "deposit/tool",
			want: nil},
		{name: "a file the package's last certificate recorded as touched reaches it", file: "config/limits.yaml",
			touched: map[string][]string{"example.com/bank/lock": {"config/limits.yaml"}},
			want:    []Reach{{"config/limits.yaml", "example.com/bank/lock", RouteTouched}}, surfaces: []string{"bank.lock"}},
		{name: "a file under a directory the certificate recorded reaches the package", file: "config/limits/a.yaml",
			touched: map[string][]string{"example.com/bank/lock": {"config/limits"}},
			want:    []Reach{{"config/limits/a.yaml", "example.com/bank/lock", RouteTouched}}, surfaces: []string{"bank.lock"}},
		{name: "a file another package's certificate recorded reaches only that package", file: "config/limits.yaml",
			touched: map[string][]string{"example.com/bank/money": {"config/limits.yaml"}},
			want:    []Reach{{"config/limits.yaml", "example.com/bank/money", RouteTouched}}},
		{name: "a [reuse] reads entry reaches the packages that declare it", file: "deploy/compose.yaml", registry: reads,
			want: []Reach{{"deploy/compose.yaml", "example.com/bank/e2e", RouteReuseReads}}},
		{name: "a Go file reaches its package by the link graph", file: "deposit/deposit.go",
			want: []Reach{{"deposit/deposit.go", "example.com/bank/deposit", RouteLinkGraph}}, surfaces: []string{"bank.deposit"}},
		{name: "documentation in a package's directory reaches nothing", file: "deposit/NOTES.md",
			want: nil},
		{name: "a file in a hidden directory reaches nothing", file: "deposit/.cache/x.bin",
			want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(t, depositRegistry+tt.registry, tt.file)
			if tt.touched != nil {
				in.Certificates = certificates(t, tt.touched)
			}
			if tt.nestedGo != "" {
				dir := filepath.Join(in.Root, filepath.FromSlash(tt.nestedGo))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/tool\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := Build(in)
			var got []Reach
			for _, pr := range p.Radius.Packages {
				got = append(got, pr.Routes...)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("routes %+v, want %+v", got, tt.want)
			}
			if fileRoutes := p.Radius.Files[0].Routes; len(tt.want) > 0 && !slices.Equal(fileRoutes, tt.want) {
				t.Errorf("the file's routes %+v, want %+v", fileRoutes, tt.want)
			}
			if s := p.Surfaces(); !slices.Equal(s, tt.surfaces) {
				t.Errorf("surfaces %v, want %v", s, tt.surfaces)
			}
			var md strings.Builder
			if err := WriteMarkdown(&md, p); err != nil {
				t.Fatal(err)
			}
			byPkg := map[string][]string{}
			for _, w := range tt.want {
				byPkg[w.Package] = append(byPkg[w.Package], w.Route)
			}
			for ip, routes := range byPkg {
				if cell := markdown.Text(ip + " (" + strings.Join(routes, ", ") + ")"); !strings.Contains(md.String(), cell) {
					t.Errorf("plan.md does not say %q:\n%s", cell, md.String())
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(p.Radius.Summary, routePhrase[w.Route]) {
					t.Errorf("summary %q does not name the route %q", p.Radius.Summary, routePhrase[w.Route])
				}
			}
		})
	}
}
