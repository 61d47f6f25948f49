package shard

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		why  string // part of the error; "" means valid
	}{
		{in: "1/1", want: Spec{1, 1}},
		{in: "2/3", want: Spec{2, 3}},
		{in: "256/256", want: Spec{256, 256}},
		{in: "", why: "has no '/'"},
		{in: "3", why: "has no '/'"},
		{in: "0/3", why: "shard number"},
		{in: "4/3", why: "past the count"},
		{in: "1/0", why: "shard count"},
		{in: "-1/3", why: "shard number"},
		{in: "+1/3", why: "shard number"},
		{in: "01/3", why: "shard number"},
		{in: " 1/3", why: "shard number"},
		{in: "1/3 ", why: "shard count"},
		{in: "1/3/4", why: "shard count"},
		{in: "a/b", why: "shard number"},
		{in: "1/257", why: "more shards than 256"},
		{in: "99999/99999", why: "shard number"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse("CONTESTED_SHARD", tc.in)
			if tc.why == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "CONTESTED_SHARD=2/3") {
				t.Fatalf("Parse(%q) = %v, %v; want ErrBadSpec saying %q and what to write", tc.in, got, err, tc.why)
			}
		})
	}
}

func TestSpecNames(t *testing.T) {
	s := Spec{Index: 2, Total: 3}
	if s.String() != "2/3" || s.Tag() != "s2of3" || s.IsZero() || !(Spec{}).IsZero() {
		t.Errorf("String %q Tag %q IsZero %v", s.String(), s.Tag(), s.IsZero())
	}
	if got := RunID("gh-1-1", s); got != "gh-1-1-s2of3" {
		t.Errorf("RunID = %q", got)
	}
}

func TestSharedRunID(t *testing.T) {
	env := func(kv ...string) Lookup {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		name string
		env  Lookup
		want string
		bad  bool
	}{
		{name: "given", env: env("CONTESTED_RUN_ID", "nightly-42", "GITHUB_RUN_ID", "7"), want: "nightly-42"},
		{name: "github", env: env("GITHUB_RUN_ID", "7", "GITHUB_RUN_ATTEMPT", "2"), want: "gh-7-2"},
		{name: "github first attempt", env: env("GITHUB_RUN_ID", "7"), want: "gh-7-1"},
		{name: "gitlab", env: env("CI_PIPELINE_ID", "99"), want: "gl-99"},
		{name: "too long", env: env("CONTESTED_RUN_ID", strings.Repeat("x", 40)), bad: true},
		{name: "bad charset", env: env("CI_PIPELINE_ID", "a b"), bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := SharedRunID(tc.env, "/m", "abc")
			if tc.bad {
				if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "CONTESTED_RUN_ID") {
					t.Fatalf("got %q, %v; want an error saying what to set", got, err)
				}
				return
			}
			if err != nil || got != tc.want || from == "" {
				t.Fatalf("got %q from %q, %v; want %q", got, from, err, tc.want)
			}
		})
	}
	a, _, _ := SharedRunID(env(), "/m", "abc")
	b, _, _ := SharedRunID(env(), "/m", "abc")
	c, _, _ := SharedRunID(env(), "/m", "abd")
	if a != b || a == c || !strings.HasPrefix(a, "local-") {
		t.Errorf("local ids: %q %q %q; want the same for one checkout and commit, another for another commit", a, b, c)
	}
}
