package faultlayer

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contested/contested/internal/dockerenv"
)

// TestAWarmRecordThatIsNotTheCallersOwnIsRefused: a record open to other
// users, in a directory others can enter, written for another user, or
// that is a link or a FIFO, is never attached to: the run says why and
// brings up a layer of its own, and status says the record is refused.
// Checked on a real warm layer, whose record is then edited on disk.
func TestAWarmRecordThatIsNotTheCallersOwnIsRefused(t *testing.T) {
	requireContainers(t)
	isolatedCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path, _ := WarmRecordPath()
	t.Cleanup(func() { WarmDown(context.Background(), io.Discard) })
	rec, _, err := WarmUp(ctx, ConfigFor(Auto))
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	restore := func(t *testing.T) {
		os.Chmod(filepath.Dir(path), 0o700)
		os.Remove(path)
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		spoil func(t *testing.T)
		want  string
	}{
		{"mode 0644", func(t *testing.T) { os.Chmod(path, 0o644) }, "mode 0644"},
		{"its directory 0755", func(t *testing.T) { os.Chmod(filepath.Dir(path), 0o755) }, "mode 0755"},
		{"written for another user", func(t *testing.T) {
			other := rec
			other.UID = os.Getuid() + 1
			b, _ := json.Marshal(other)
			os.WriteFile(path, b, 0o600)
		}, "written for uid"},
		{"a symbolic link to a private copy", func(t *testing.T) {
			copyPath := filepath.Join(t.TempDir(), "copy.json")
			os.WriteFile(copyPath, good, 0o600)
			os.Remove(path)
			os.Symlink(copyPath, path)
		}, "symbolic link"},
		{"a FIFO", func(t *testing.T) {
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer restore(t)
			tt.spoil(t)
			var log strings.Builder
			cfg := ConfigFor(Auto)
			cfg.Log = &log
			done := make(chan *Layer, 1)
			go func() { done <- upWarm(ctx, cfg) }()
			var l *Layer
			select {
			case l = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("attaching waited on the record")
			}
			if l != nil {
				l.Close(ctx)
				t.Fatalf("attached to the warm layer of a refused record:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "refused") || !strings.Contains(log.String(), tt.want) || !strings.Contains(log.String(), "a layer of its own") {
				t.Errorf("the run did not say the record is refused (%s) and that it brings up its own:\n%s", tt.want, log.String())
			}
			st, err := WarmStatus(ctx, ConfigFor(Auto))
			if err != nil || !strings.Contains(st.Refused, tt.want) || st.Record != nil {
				t.Errorf("status: refused %q, record %v, %v; want it refused (%s)", st.Refused, st.Record, err, tt.want)
			}
			if len(st.Unheld) != 0 {
				t.Errorf("status calls the refused record's layer unheld (a sweep would remove it): %v", st.Unheld)
			}
		})
	}
}

// TestAForgedWarmRecordsCoordinatesAreNotAttachedTo: a record (this
// user's, 0600) whose control URL, DSN or direct address is not what its
// containers publish is not attached to as is: the run says its record
// does not match its containers and recreates the layer, whose control
// URL is its own loopback binding. And preflight's loopback check fails a
// control URL off loopback whatever container the layer names.
func TestAForgedWarmRecordsCoordinatesAreNotAttachedTo(t *testing.T) {
	requireContainers(t)
	isolatedCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	path, _ := WarmRecordPath()
	t.Cleanup(func() { WarmDown(context.Background(), io.Discard) })
	tests := []struct {
		name   string
		forge  func(rec *WarmRecord)
		detail string
	}{
		{"a control URL off loopback", func(rec *WarmRecord) {
			rec.ToxiproxyURL = "http://" + rec.ToxiproxyDirect + ":8474"
		}, "control URL"},
		{"a DSN naming another server", func(rec *WarmRecord) {
			u, _ := url.Parse(rec.PostgresDSN)
			u.Host = "10.1.2.3:5432"
			rec.PostgresDSN = u.String()
		}, "Postgres DSN"},
		{"a direct address elsewhere", func(rec *WarmRecord) {
			rec.PostgresDirect = "10.1.2.3:5432"
		}, "on the layer's network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, _, err := WarmUp(ctx, ConfigFor(Auto))
			if err != nil {
				t.Fatal(err)
			}
			forged := rec
			tt.forge(&forged)
			b, _ := json.Marshal(forged)
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.name == "a control URL off loopback" {
				l := &Layer{Kind: Containers, ToxiproxyURL: forged.ToxiproxyURL, ToxiproxyContainer: forged.ToxiproxyContainer, ProxyListenHost: "0.0.0.0"}
				if c := checkLoopback(ctx, l, dockerenv.Require(t)); c.OK {
					t.Errorf("control API loopback passed for %s: %s", forged.ToxiproxyURL, c.Detail)
				}
			}
			st, err := WarmStatus(ctx, ConfigFor(Auto))
			if err != nil || !strings.Contains(st.Stale, tt.detail) {
				t.Errorf("status of the forged record: stale %q, %v; want it to say its %s does not match", st.Stale, err, tt.detail)
			}
			var log strings.Builder
			cfg := ConfigFor(Auto)
			cfg.Log = &log
			l := upWarm(ctx, cfg)
			if l == nil {
				t.Fatalf("no warm layer after recreating the forged one:\n%s", log.String())
			}
			defer l.Close(ctx)
			if l.Warm.RunID == rec.RunID || !strings.Contains(log.String(), "does not match its containers") {
				t.Errorf("the forged record was attached to as is (run %s):\n%s", l.Warm.RunID, log.String())
			}
			if u, _ := url.Parse(l.ToxiproxyURL); u == nil || u.Hostname() != "127.0.0.1" {
				t.Errorf("attached with control URL %s", l.ToxiproxyURL)
			}
		})
	}
}

// TestAnotherRecordsWarmLayerIsNeverReapedFromHere: under another user
// cache directory, a warm layer another record holds is reported as held
// by that record, never as unheld or orphaned, and neither a sweep nor
// layer down there removes it; a run that attaches says whose layer it is.
func TestAnotherRecordsWarmLayerIsNeverReapedFromHere(t *testing.T) {
	requireContainers(t)
	isolatedCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pathA, _ := WarmRecordPath()
	t.Cleanup(func() {
		os.Setenv("XDG_CACHE_HOME", filepath.Dir(filepath.Dir(pathA)))
		WarmDown(context.Background(), io.Discard)
	})
	rec, _, err := WarmUp(ctx, ConfigFor(Auto))
	if err != nil {
		t.Fatal(err)
	}
	if rec.StartedIn == "" || rec.Module != "github.com/contested/contested" {
		t.Errorf("the record says it was started in %q (module %q), want this checkout", rec.StartedIn, rec.Module)
	}

	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	st, err := WarmStatus(ctx, ConfigFor(Auto))
	if err != nil {
		t.Fatal(err)
	}
	var status strings.Builder
	FormatWarm(&status, st)
	mine := 0
	for _, o := range st.Others {
		if strings.Contains(o, rec.RunID) && strings.Contains(o, pathA) {
			mine++
		}
	}
	if mine != 2 || strings.Contains(status.String(), "no record holds it") {
		t.Errorf("status under another cache directory does not say the other record holds its layer:\n%s", status.String())
	}
	if err := Sweep(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := WarmDown(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	if left := warmLeftovers(t, pathA); len(left.Containers) != 2 || len(left.Networks) != 1 {
		t.Fatalf("a sweep and layer down under another cache directory removed part of the other record's warm layer: %s left", left)
	}

	t.Setenv("XDG_CACHE_HOME", filepath.Dir(filepath.Dir(pathA)))
	var log strings.Builder
	cfg := ConfigFor(Auto)
	cfg.Log = &log
	l := upWarm(ctx, cfg)
	if l == nil {
		t.Fatalf("did not attach:\n%s", log.String())
	}
	defer l.Close(ctx)
	if !strings.Contains(log.String(), "started in "+rec.StartedIn+" (module github.com/contested/contested)") {
		t.Errorf("attaching does not say whose layer it is:\n%s", log.String())
	}
}

// TestAWarmLayerWhoseDatabaseIsCanonicalIsRefused: a warm record whose
// test plane is a database [guard] canonical_databases lists is not
// attached to: the run says the guard refused it and brings up its own.
func TestAWarmLayerWhoseDatabaseIsCanonicalIsRefused(t *testing.T) {
	requireContainers(t)
	isolatedCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Cleanup(func() { WarmDown(context.Background(), io.Discard) })
	if _, _, err := WarmUp(ctx, ConfigFor(Auto)); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cfg := ConfigFor(Auto)
	cfg.Log, cfg.Canonical = &log, []string{"ledger", strings.ToUpper(testPlaneDB)}
	if l := upWarm(ctx, cfg); l != nil {
		l.Close(ctx)
		t.Fatalf("attached to a warm layer whose database is canonical:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "canonical_databases") || !strings.Contains(log.String(), "a layer of its own") {
		t.Errorf("the run did not say the guard refused the warm layer:\n%s", log.String())
	}

	// A record edited to name a canonical database is refused as it is:
	// neither attached to nor replaced by a layer of its own.
	path, _ := WarmRecordPath()
	rec, err := readWarm(path)
	if err != nil {
		t.Fatal(err)
	}
	forged := rec
	forged.PostgresDSN = strings.Replace(rec.PostgresDSN, "/"+testPlaneDB+"?", "/stock?", 1)
	b, _ := json.Marshal(forged)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	cfg.Canonical = []string{"stock"}
	if l := upWarm(ctx, cfg); l != nil {
		l.Close(ctx)
		t.Fatalf("attached to a warm record naming a canonical database:\n%s", log.String())
	}
	if !strings.Contains(log.String(), `names database "stock", which [guard] canonical_databases lists`) {
		t.Errorf("the run did not say the guard refused the record:\n%s", log.String())
	}
	if after, err := readWarmToRemove(path); err != nil || after.RunID != rec.RunID {
		t.Errorf("the refused record was replaced: %v, %v", after.RunID, err)
	}
}
