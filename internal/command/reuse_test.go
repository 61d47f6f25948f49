package command

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/digest"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/touched"
)

func TestReuseIsOffUnderCIUnlessAskedAndNeverForAShareOrASelection(t *testing.T) {
	tests := []struct {
		name        string
		ci          string
		opts        ValidateOptions
		sharded     bool
		on, certify bool
		why         string
	}{
		{"a developer's validate", "", ValidateOptions{}, false, true, true, ""},
		{"CI", "true", ValidateOptions{}, false, false, true, "CI=true"},
		{"CI with -reuse", "true", ValidateOptions{Reuse: true}, false, true, true, ""},
		{"-full", "", ValidateOptions{Full: true}, false, false, true, "-full"},
		{"-full under CI with -reuse", "true", ValidateOptions{Full: true, Reuse: true}, false, false, true, "-full"},
		{"a shard", "", ValidateOptions{}, true, false, false, "a shard"},
		{"a selection", "", ValidateOptions{Args: []string{"-run", "TestX"}}, false, false, false, "a selected battery"},
		{"some packages", "", ValidateOptions{Patterns: []string{"./x/..."}}, false, false, false, "a selected battery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			on, cert, why := reuseAllowed(tt.opts, tt.sharded)
			if on != tt.on || cert != tt.certify || tt.why == "" && why != "" || tt.why != "" && !strings.Contains(why, tt.why) {
				t.Errorf("reuse %v, certify %v, why %q; want %v, %v, saying %q", on, cert, why, tt.on, tt.certify, tt.why)
			}
		})
	}
}

// TestASurfaceNeverHalfRuns: a package is reused only when its digest and
// what its tests touched are as its certificate says; a surface whose
// tests span two packages only when both are, with the inputs its own
// certificate names; a package only when every surface in it is; and a
// surface whose certificate is for other inputs has changed.
func TestASurfaceNeverHalfRuns(t *testing.T) {
	d := func(s string) string { return digest.Sum(s) }
	reg := &registry.Registry{Surfaces: []registry.Surface{{ID: "s.both"}, {ID: "s.one"}}}
	keys := func(root string) *reuse {
		paths := touched.Paths{Root: root}
		return &reuse{module: "example.com/m", paths: paths, inputs: touched.NewInputs(paths, func(string) (string, bool) { return "", false }),
			all:      []string{"m/a", "m/b", "m/c"},
			pkgKey:   map[string]string{"m/a": d("ka"), "m/b": d("kb"), "m/c": d("kc")},
			surfKey:  map[string]string{"s.both": d("kboth"), "s.one": d("kone")},
			surfPkgs: map[string][]string{"s.both": {"m/a", "m/b"}, "s.one": {"m/c"}},
			pkgs:     map[string]certify.Certificate{}, surfs: map[string]certify.Certificate{}, changed: map[string]string{}}
	}
	all := map[string]string{"package:m/a": "ka", "package:m/b": "kb", "package:m/c": "kc", "surface:s.both": "kboth", "surface:s.one": "kone"}
	with := func(k, v string) map[string]string {
		m := maps.Clone(all)
		m[k] = v
		return m
	}
	tests := []struct {
		name             string
		certs            map[string]string // kind:key → what its digest is of
		change           func(root string) // after the certificates were written
		pkgs, surfs, chg []string
	}{
		{"every certificate matches", all, nil, []string{"m/a", "m/b", "m/c"}, []string{"s.both", "s.one"}, nil},
		{"one of a surface's packages changed", with("package:m/b", "old"), nil, []string{"m/c"}, []string{"s.one"}, []string{"s.both"}},
		{"a surface's certificate is for other inputs", with("surface:s.both", "old"), nil, []string{"m/c"}, []string{"s.one"}, []string{"s.both"}},
		{"a fixture a package's tests read changed since", all, func(root string) {
			os.WriteFile(filepath.Join(root, "a.json"), []byte("changed"), 0o644)
		}, []string{"m/c"}, []string{"s.one"}, []string{"s.both"}},
		{"no certificates", nil, nil, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range []string{"a.json", "b.json", "c.json"} {
				os.WriteFile(filepath.Join(root, f), []byte(f), 0o644)
			}
			r := keys(root)
			trust, err := certify.NewTrust([]byte(strings.Repeat("k", 32)), "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			inputs := map[string]string{}
			var certs []certify.Certificate
			for _, k := range slices.Sorted(maps.Keys(tt.certs)) {
				kind, key, _ := strings.Cut(k, ":")
				c := certify.Certificate{Module: "example.com/m", Kind: kind, Key: key, Digest: d(tt.certs[k]), RunID: "r1", At: time.Now()}
				if kind == certify.KindPackage {
					rec := touched.Record{Open: []string{strings.TrimPrefix(key, "m/") + ".json"}}
					sum, err := r.inputs.Sum(rec)
					if err != nil {
						t.Fatal(err)
					}
					c.Verdict, c.Touched, c.Inputs, inputs[key] = "PASS", &rec, sum, sum
				} else {
					c.Verdict, c.Packages = "GREEN", map[string]string{}
					for _, p := range r.surfPkgs[key] {
						c.Packages[p] = inputs[p]
					}
				}
				if c, err = trust.Vouch(c); err != nil {
					t.Fatal(err)
				}
				certs = append(certs, c)
			}
			ctx := context.Background()
			if err := certify.NewFile(root, trust).Write(ctx, certs); err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				tt.change(root)
			}
			r.inputs = touched.NewInputs(r.paths, func(string) (string, bool) { return "", false }) // a new run
			if r.certs, err = certify.NewFile(root, trust).Read(ctx, r.module, nil); err != nil {
				t.Fatal(err)
			}
			r.decide(reg, io.Discard)
			if got := sortedKeys(r.pkgs); !slices.Equal(got, tt.pkgs) && len(got)+len(tt.pkgs) > 0 {
				t.Errorf("reused packages %v, want %v", got, tt.pkgs)
			}
			if got := sortedKeys(r.surfs); !slices.Equal(got, tt.surfs) && len(got)+len(tt.surfs) > 0 {
				t.Errorf("reused surfaces %v, want %v", got, tt.surfs)
			}
			if got := sortedKeys(r.changed); !slices.Equal(got, tt.chg) && len(got)+len(tt.chg) > 0 {
				t.Errorf("changed surfaces %v, want %v", got, tt.chg)
			}
		})
	}
}

// TestWhereAResultCameFromIsShownAsData: whatever a store held reaches the
// terminal as text, never as a workflow command or an escape sequence.
func TestWhereAResultCameFromIsShownAsData(t *testing.T) {
	line := reusedLine(battery.Reused{RunID: "r1\n::error title=x::owned", Commit: "\x1b]0;retitled\x07abc", At: time.Now()})
	if strings.ContainsAny(line, "\n\r\x1b\x07") {
		t.Errorf("reusedLine = %q; want no newline, escape or bell", line)
	}
}
