package degraded

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toxiproxyserver "github.com/Shopify/toxiproxy/v2"
	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/rs/zerolog"

	"github.com/contested/contested/internal/faultlayer"
)

// toxiproxyHere serves a real Toxiproxy API from this process (the
// embedded provider's server) and returns its URL and a client.
func toxiproxyHere(t *testing.T) (string, *toxiproxy.Client) {
	t.Helper()
	srv := toxiproxyserver.NewServer(toxiproxyserver.NewMetricsContainer(nil), zerolog.Nop())
	hs := httptest.NewServer(srv.Routes())
	t.Cleanup(func() { hs.Close(); srv.Collection.Clear() })
	cli := toxiproxy.NewClient(hs.URL)
	cli.UserAgent = UserAgent
	return hs.URL, cli
}

// overlay creates a stage proxy in the Toxiproxy at url and the marker
// that records it, as a stage that crashed leaves them.
func overlay(t *testing.T, results, url string, cli *toxiproxy.Client) string {
	t.Helper()
	name := "contested-degraded-20001"
	if _, err := cli.CreateProxy(name, "127.0.0.1:0", "127.0.0.1:5432"); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(results, Marker{RunID: "crashed", ToxiproxyURL: url, Proxies: []string{name}, StagePID: 1}); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestRestore(t *testing.T) {
	t.Run("marker found: the proxies are deleted and the marker cleared", func(t *testing.T) {
		results := t.TempDir()
		url, cli := toxiproxyHere(t)
		name := overlay(t, results, url, cli)
		var out bytes.Buffer
		if err := Restore(context.Background(), results, "degraded", &out); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if _, err := cli.Proxy(name); err == nil {
			t.Errorf("proxy %s survived the restore", name)
		}
		if _, err := os.Stat(MarkerPath(results)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("marker after a restore: %v, want it gone", err)
		}
		if !strings.Contains(out.String(), "base shape restored") {
			t.Errorf("output %q does not say the base shape was restored", out.String())
		}
	})
	t.Run("stack down: the marker is simply cleared", func(t *testing.T) {
		results := t.TempDir()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + ln.Addr().String()
		ln.Close() // nothing answers there: the layer is down
		if err := writeMarker(results, Marker{RunID: "crashed", ToxiproxyURL: down, Proxies: []string{"contested-degraded-20001"}}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Restore(context.Background(), results, "validate", &out); err != nil {
			t.Fatalf("Restore with the stack down: %v", err)
		}
		if _, err := os.Stat(MarkerPath(results)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("marker with the stack down: %v, want it cleared", err)
		}
		if !strings.Contains(out.String(), "is down") {
			t.Errorf("output %q does not say the layer is down", out.String())
		}
	})
	t.Run("failed restore: the marker stays and the escape is printed", func(t *testing.T) {
		results := t.TempDir()
		url, cli := toxiproxyHere(t)
		name := overlay(t, results, url, cli)
		// The control API answers, but refuses to delete (a Toxiproxy in
		// front of which something denies DELETE).
		target, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		pass := httputil.NewSingleHostReverseProxy(target)
		deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				http.Error(w, `{"error":"denied","status":500}`, http.StatusInternalServerError)
				return
			}
			pass.ServeHTTP(w, r)
		}))
		defer deny.Close()
		if err := writeMarker(results, Marker{RunID: "crashed", ToxiproxyURL: deny.URL, Proxies: []string{name}}); err != nil {
			t.Fatal(err)
		}
		err = Restore(context.Background(), results, "degraded", nil)
		if !errors.Is(err, ErrRestore) {
			t.Fatalf("Restore through a control API that refuses DELETE: %v, want ErrRestore", err)
		}
		if _, serr := os.Stat(MarkerPath(results)); serr != nil {
			t.Errorf("the marker did not survive a failed restore: %v", serr)
		}
		for _, want := range []string{"rm " + MarkerPath(results), "curl -A " + UserAgent + " -X DELETE"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say how to escape by hand (%q)", err, want)
			}
		}
	})
	t.Run("no marker: nothing to do", func(t *testing.T) {
		if err := Restore(context.Background(), t.TempDir(), "validate", nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStageLockMakesLayerTeardownWait: while a stage holds the stage lock,
// go tool mage layer down (faultlayer.WarmDown) waits instead of tearing
// the warm layer down, and its record stays; once the stage releases the
// lock, layer down goes ahead.
func TestStageLockMakesLayerTeardownWait(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	record, err := faultlayer.WarmRecordPath()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(record), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, []byte(`{"schema":"contested/warm-layer@1","run_id":"20261201T000000Z-test"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	lock, err := Hold(context.Background(), t.TempDir(), "degraded", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	_, err = faultlayer.WarmDown(ctx, &out)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("layer down while a stage holds the lock: %v, want it to wait (until its deadline)", err)
	}
	if _, serr := os.Stat(record); serr != nil {
		t.Fatalf("layer down removed the warm layer's record while a stage ran: %v", serr)
	}
	if !strings.Contains(out.String(), "waiting for it to finish") {
		t.Errorf("layer down did not say it waits: %q", out.String())
	}
	lock.Release()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = faultlayer.WarmDown(ctx, &out)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("layer down after the stage released its lock: %v", err)
	}
	if err == nil {
		if _, serr := os.Stat(record); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("layer down went ahead but the record is still there: %v", serr)
		}
	}
}
