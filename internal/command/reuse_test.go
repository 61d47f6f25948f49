package command

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/registry"
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

// TestASurfaceNeverHalfRuns: a surface whose tests span two packages is
// reused only when both are, and a package only when every surface in it
// is; a surface whose certificate is for other inputs has changed.
func TestASurfaceNeverHalfRuns(t *testing.T) {
	reg := &registry.Registry{Surfaces: []registry.Surface{{ID: "s.both"}, {ID: "s.one"}}}
	keys := func() *reuse {
		return &reuse{module: "example.com/m",
			all:      []string{"m/a", "m/b", "m/c"},
			pkgKey:   map[string]string{"m/a": "ka", "m/b": "kb", "m/c": "kc"},
			surfKey:  map[string]string{"s.both": "kboth", "s.one": "kone"},
			surfPkgs: map[string][]string{"s.both": {"m/a", "m/b"}, "s.one": {"m/c"}},
			pkgs:     map[string]certify.Certificate{}, surfs: map[string]certify.Certificate{}, changed: map[string]string{}}
	}
	tests := []struct {
		name             string
		certs            map[string]string // kind:key → digest
		pkgs, surfs, chg []string
	}{
		{"every certificate matches", map[string]string{"package:m/a": "ka", "package:m/b": "kb", "package:m/c": "kc", "surface:s.both": "kboth", "surface:s.one": "kone"},
			[]string{"m/a", "m/b", "m/c"}, []string{"s.both", "s.one"}, nil},
		{"one of a surface's packages changed", map[string]string{"package:m/a": "ka", "package:m/b": "old", "package:m/c": "kc", "surface:s.both": "kboth", "surface:s.one": "kone"},
			[]string{"m/c"}, []string{"s.one"}, nil},
		{"a surface's certificate is for other inputs", map[string]string{"package:m/a": "ka", "package:m/b": "kb", "package:m/c": "kc", "surface:s.both": "old", "surface:s.one": "kone"},
			[]string{"m/c"}, []string{"s.one"}, []string{"s.both"}},
		{"no certificates", nil, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var certs []certify.Certificate
			for k, d := range tt.certs {
				kind, key, _ := strings.Cut(k, ":")
				verdict := "PASS"
				if kind == certify.KindSurface {
					verdict = "GREEN"
				}
				c, err := certify.Sealed(certify.Certificate{Module: "example.com/m", Kind: kind, Key: key, Digest: d, RunID: "r1", At: time.Now(), Verdict: verdict})
				if err != nil {
					t.Fatal(err)
				}
				certs = append(certs, c)
			}
			ctx := context.Background()
			if err := certify.NewFile(root).Write(ctx, certs); err != nil {
				t.Fatal(err)
			}
			r := keys()
			var err error
			if r.certs, err = certify.NewFile(root).Read(ctx, r.module); err != nil {
				t.Fatal(err)
			}
			r.decide(reg)
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
