package replayenv

import (
	"reflect"
	"strings"
	"testing"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// TestAReplayCarriesWhatTheTestReadAndNothingElse: of what a package's
// tests read, a replay keeps each variable the run set that is neither the
// runner's, the machine's, contested's nor the CI's; a secret's value (by
// its name, or a password in it) is never kept; a variable unset in the
// run stays unset.
func TestAReplayCarriesWhatTheTestReadAndNothingElse(t *testing.T) {
	env := map[string]string{
		"CLIENTS":             "4",
		"WORKFLOW_MODE":       "strict mode",
		"API_TOKEN":           "s3cr3t-value",
		"DATABASE_URL":        "postgres://app:hunter2@db:5432/app",
		"QUEUE_URL":           "amqp://mq:5672/",
		"CONTESTED_RUN_ID":    "20261204T101500Z-4f2a",
		"CONTESTED_LAYER":     "containers",
		"CI":                  "true",
		"GITHUB_ACTIONS":      "true",
		"PATH":                "/usr/bin",
		"HOME":                "/home/dev",
		"TMPDIR":              "/tmp",
		"LC_ALL":              "C",
		"DOCKER_HOST":         "unix:///var/run/docker.sock",
		"GIVEN_BY_THE_RUNNER": "x",
	}
	names := []string{"API_TOKEN", "CI", "CLIENTS", "CONTESTED_LAYER", "CONTESTED_RUN_ID", "DATABASE_URL", "DOCKER_HOST",
		"GITHUB_ACTIONS", "GIVEN_BY_THE_RUNNER", "HOME", "LC_ALL", "NOT_SET", "PATH", "QUEUE_URL", "TMPDIR", "WORKFLOW_MODE"}
	got := Read(names, []string{"GIVEN_BY_THE_RUNNER"}, lookupIn(env))
	want := []Var{
		{Name: "API_TOKEN", Secret: true},
		{Name: "CLIENTS", Value: "4"},
		{Name: "DATABASE_URL", Secret: true},
		{Name: "QUEUE_URL", Value: "amqp://mq:5672/"},
		{Name: "WORKFLOW_MODE", Value: "strict mode"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Read = %+v\nwant %+v", got, want)
	}
	line := Prefix("CONTESTED_SEED=7 go test ./jobs -run '^TestJobs$/^reset$' -count=1", got)
	if line != `API_TOKEN="$API_TOKEN" CLIENTS=4 DATABASE_URL="$DATABASE_URL" QUEUE_URL=amqp://mq:5672/ WORKFLOW_MODE='strict mode' CONTESTED_SEED=7 go test ./jobs -run '^TestJobs$/^reset$' -count=1` {
		t.Errorf("replay line %s", line)
	}
	for _, secret := range []string{"s3cr3t", "hunter2"} {
		if strings.Contains(line, secret) {
			t.Errorf("the replay line prints a secret: %s", line)
		}
	}
}

// TestApplyFindsThePackageTheLineRuns: a replay line gets the variables of
// the package it runs, named by its directory or its import path, none it
// assigns already, and a line that runs no package is left alone.
func TestApplyFindsThePackageTheLineRuns(t *testing.T) {
	s := &Set{Module: "example.com/jobs", Packages: map[string][]Var{
		"example.com/jobs":       {{Name: "CLIENTS", Value: "4"}},
		"example.com/jobs/queue": {{Name: "QUEUE_DEPTH", Value: "9"}, {Name: "CONTESTED_SEED", Value: "1"}},
	}}
	for _, tc := range []struct{ replay, want string }{
		{"CONTESTED_SEED=7 go test . -run '^TestA$' -count=1", "CLIENTS=4 CONTESTED_SEED=7 go test . -run '^TestA$' -count=1"},
		{"CONTESTED_SEED=7 go test ./queue -run '^TestQ$' -count=1", "QUEUE_DEPTH=9 CONTESTED_SEED=7 go test ./queue -run '^TestQ$' -count=1"},
		{"go test example.com/jobs/queue -run '^TestQ$'", "QUEUE_DEPTH=9 CONTESTED_SEED=1 go test example.com/jobs/queue -run '^TestQ$'"},
		{"CLIENTS=2 go test . -run '^TestA$'", "CLIENTS=2 go test . -run '^TestA$'"},
		{"CONTESTED_SEED=7 go tool mage degraded -cells=x", "CONTESTED_SEED=7 go tool mage degraded -cells=x"},
		{"go test ./... -run '^TestA$'", "go test ./... -run '^TestA$'"},
	} {
		if got := s.Apply(tc.replay); got != tc.want {
			t.Errorf("Apply(%q) = %q, want %q", tc.replay, got, tc.want)
		}
	}
	var none *Set
	if got := none.Apply("go test . -run x"); got != "go test . -run x" {
		t.Errorf("a nil set changed the line: %q", got)
	}
	if got := Prefix("", []Var{{Name: "CLIENTS", Value: "4"}}); got != "" {
		t.Errorf("no line became %q", got)
	}
}

// TestARerunGetsTheValuesAndASecretFromItsOwnEnvironment: a rerun's
// environment has each value the run had, and a secret's from the
// environment it runs in, named as missing when that has none; never the
// run's build flags, since a rerun tests the code at hand.
func TestARerunGetsTheValuesAndASecretFromItsOwnEnvironment(t *testing.T) {
	vars := []Var{{Name: "API_TOKEN", Secret: true}, {Name: "CLIENTS", Value: "4"}, {Name: "DB_PASSWORD", Secret: true}, {Name: "GOFLAGS", Value: "-tags=defect"}}
	env, missing := Environ(vars, lookupIn(map[string]string{"API_TOKEN": "t"}))
	if !reflect.DeepEqual(env, []string{"API_TOKEN=t", "CLIENTS=4"}) || !reflect.DeepEqual(missing, []string{"DB_PASSWORD"}) {
		t.Errorf("Environ = %q, missing %q", env, missing)
	}
}
