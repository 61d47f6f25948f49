package faultlayer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/fixture"
	"github.com/contested/contested/internal/reap"
)

func init() { helpers["warm-up"] = warmUpHelper }

// warmUpHelper is `layer up` in a child process: WarmUp until done or
// interrupted.
func warmUpHelper() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := ConfigFor(Auto)
	cfg.Log = os.Stdout
	if _, _, err := WarmUp(ctx, cfg); err != nil {
		fmt.Println("warm up:", err)
		return 3
	}
	fmt.Println("warm layer up")
	return 0
}

// isolatedCache points the user cache directory, where the warm layer's
// record lives, at a directory of the test's own, so that no other process
// on this machine attaches to the layers these tests start.
func isolatedCache(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	env, err := fixture.PrivateCache(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return dir
}

// warmLeftovers counts the warm-labelled resources whose record is path.
func warmLeftovers(t *testing.T, path string) reap.Swept {
	t.Helper()
	cli := dockerenv.Require(t)
	left, err := reap.Leftovers(context.Background(), cli, func(labels map[string]string) (bool, string) {
		return labels[reap.LabelWarm] == path, ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// TestWarmLayerUpAttachDown walks the pre-push loop on real containers: up
// starts a labelled layer that survives its command and a sweep; status
// reports it current; a run in auto mode attaches to it (and says so),
// leases a port and makes a proxy, and on Close leaves the layer running
// with its own lease released and proxy deleted; a second up reuses it;
// down leaves nothing labelled and no record.
func TestWarmLayerUpAttachDown(t *testing.T) {
	requireContainers(t)
	isolatedCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path, err := WarmRecordPath()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { WarmDown(context.Background(), io.Discard) })

	rec, reused, err := WarmUp(ctx, ConfigFor(Auto))
	if err != nil || reused {
		t.Fatalf("WarmUp = reused %v, %v; want a new layer", reused, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("record %s: %v, mode %v; want it readable by its user only (it holds a password)", path, err, st.Mode().Perm())
	}
	// The record keeps where its ports are dialled: Toxiproxy on the
	// network, this host being on it, or the published 127.0.0.1 bindings.
	if rec.ToxiproxyDirect == "" {
		t.Errorf("the record keeps no address of Toxiproxy on network %s", rec.Network)
	}
	for _, p := range rec.Ports {
		if host, _, _ := net.SplitHostPort(p.Dial); host != rec.ToxiproxyDirect && host != "127.0.0.1" {
			t.Errorf("the record keeps port %d at %s, want Toxiproxy's %s or 127.0.0.1", p.Port, p.Dial, rec.ToxiproxyDirect)
		}
	}
	if left := warmLeftovers(t, path); len(left.Containers) != 2 || len(left.Networks) != 1 {
		t.Fatalf("warm layer resources: %s, want 2 containers and 1 network", left)
	}
	if err := Sweep(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	if left := warmLeftovers(t, path); len(left.Containers) != 2 {
		t.Fatalf("a sweep removed part of a warm layer its record holds: %s left", left)
	}
	st, err := WarmStatus(ctx, ConfigFor(Auto))
	if err != nil || st.Record == nil || st.Stale != "" || len(st.Containers) != 2 {
		t.Fatalf("status = %+v, %v; want the record, current, with 2 containers", st, err)
	}
	var status strings.Builder
	FormatWarm(&status, st)
	if !strings.Contains(status.String(), rec.RunID) || strings.Contains(status.String(), passwordOf(t, rec.PostgresDSN)) {
		t.Errorf("status does not name the run, or shows the password:\n%s", status.String())
	}
	if host, _, _ := net.SplitHostPort(rec.Ports[0].Dial); !strings.Contains(status.String(), "proxies    32 ports (20000-20031 inside, ") || (host == "127.0.0.1") != strings.Contains(status.String(), "each published on 127.0.0.1") {
		t.Errorf("status does not say the proxies are dialled at %s:\n%s", host, status.String())
	}

	var log strings.Builder
	cfg := ConfigFor(Auto)
	cfg.Log = &log
	l, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("Up in auto mode with a warm layer: %v\n%s", err, log.String())
	}
	if l.Warm == nil || l.Warm.RunID != rec.RunID || !strings.Contains(log.String(), "attached to the warm layer") {
		t.Fatalf("Up did not attach to the warm layer (say so):\n%s", log.String())
	}
	ls, err := l.Leases().Acquire(ctx, "TestWarm")
	if err != nil {
		t.Fatal(err)
	}
	pp, _ := l.Port(ls.Port)
	if _, err := l.Toxiproxy().CreateProxy("warm-test", pp.Listen, l.PostgresUpstream); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close of an attached warm layer: %v", err)
	}
	if left := warmLeftovers(t, path); len(left.Containers) != 2 {
		t.Fatalf("Close of a run attached to the warm layer removed it: %s left", left)
	}
	c := toxiproxy.NewClient(rec.ToxiproxyURL)
	c.UserAgent = "contested"
	if proxies, err := c.Proxies(); err != nil || len(proxies) != 0 {
		t.Errorf("after the run: proxies %v, %v; want the run's proxy deleted", proxies, err)
	}
	l2, err := Up(ctx, ConfigFor(Auto))
	if err != nil {
		t.Fatal(err)
	}
	held, err := l2.Leases().Held(ctx)
	l2.Close(ctx)
	if err != nil || len(held) != 0 {
		t.Errorf("after the run: held leases %+v, %v; want the run's lease released", held, err)
	}

	if _, reused, err := WarmUp(ctx, ConfigFor(Auto)); err != nil || !reused {
		t.Errorf("a second up = reused %v, %v; want the current layer reused", reused, err)
	}
	if _, err := WarmDown(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	if left := warmLeftovers(t, path); !left.Empty() {
		t.Errorf("down left %s", left)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("down left the record: %v", err)
	}
	log.Reset()
	cfg.Log = &log
	if l, err := Up(ctx, cfg); err == nil {
		if l.Warm != nil {
			t.Error("attached to a warm layer after down")
		}
		l.Close(ctx)
	}
}

// TestStaleWarmLayerIsRecreated: a warm layer whose image changed since it
// started (its record names another image id) is not attached to as is: a
// run removes it and attaches to a new one in its place.
func TestStaleWarmLayerIsRecreated(t *testing.T) {
	requireContainers(t)
	isolatedCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path, _ := WarmRecordPath()
	t.Cleanup(func() { WarmDown(context.Background(), io.Discard) })
	old, _, err := WarmUp(ctx, ConfigFor(Auto))
	if err != nil {
		t.Fatal(err)
	}
	old.PostgresImageID = "sha256:an-image-since-rebuilt"
	b, _ := json.Marshal(old)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := WarmStatus(ctx, ConfigFor(Auto))
	if err != nil || !strings.Contains(st.Stale, "rebuilt") {
		t.Fatalf("status of a layer whose image was rebuilt: stale %q, %v", st.Stale, err)
	}
	var log strings.Builder
	cfg := ConfigFor(Auto)
	cfg.Log = &log
	l, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("Up: %v\n%s", err, log.String())
	}
	defer l.Close(ctx)
	if l.Warm == nil || l.Warm.RunID == old.RunID || !strings.Contains(log.String(), "stale") {
		t.Fatalf("the stale warm layer was not recreated:\n%s", log.String())
	}
	left, err := reap.Leftovers(ctx, dockerenv.Require(t), reap.Run(old.RunID))
	if err != nil || !left.Empty() {
		t.Errorf("the stale layer's resources are still there: %s, %v", left, err)
	}
	if left := warmLeftovers(t, path); len(left.Containers) != 2 {
		t.Errorf("the recreated warm layer: %s, want 2 containers", left)
	}
}

// TestSIGINTMidWarmUpLeavesNothingHeld interrupts `layer up` while it
// brings the layer up: nothing is left, or what is left carries the warm
// label with no record holding it, which the next sweep removes.
func TestSIGINTMidWarmUpLeavesNothingHeld(t *testing.T) {
	requireContainers(t)
	cache := isolatedCache(t)
	cli := dockerenv.Require(t)
	path := filepath.Join(cache, "contested", "warm-layer.json")
	c := &child{cmd: helperCmd(t, "warm-up", "XDG_CACHE_HOME="+cache), exited: make(chan struct{})}
	waitForContainer(t, cli, c)
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("layer up did not exit within 2 minutes of SIGINT")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an interrupted up left a record: %v", err)
	}
	if err := Sweep(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	left, err := reap.Leftovers(context.Background(), cli, reap.OwnedBy(c.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("SIGINT mid warm up left %s after a sweep: %+v", left, left)
	}
}

func passwordOf(t *testing.T, dsn string) string {
	t.Helper()
	i, j := strings.Index(dsn, "://"), strings.LastIndex(dsn, "@")
	_, pw, _ := strings.Cut(dsn[i+3:j], ":")
	if pw == "" {
		t.Fatalf("no password in the DSN")
	}
	return pw
}
