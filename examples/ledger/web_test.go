package ledger_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/contested"
	"github.com/contested/contested/examples/ledger"
	"github.com/contested/contested/internal/faultlayer/faulttest"
)

// minWebTimeout is the front's backend timeout in these tests on a machine that answers a
// healthy page quickly: short, so that a slow backend costs the test little.
const minWebTimeout = 500 * time.Millisecond

// healthyFactor is how much slower than the slowest healthy page measured just before a case
// the front's timeout is: the margin that keeps a healthy backend from reading as slow while
// the machine is busy (a shared CI runner, a noisy neighbour, the rest of the battery).
const healthyFactor = 10

// webRig is the web front over a pool that reaches a victim database through a real
// Toxiproxy proxy (the faults), and a direct pool to the same database (the truth).
type webRig struct {
	t       *testing.T
	proxy   *toxiproxy.Proxy
	dsn     string // through the proxy
	pool    *pgxpool.Pool
	direct  *pgxpool.Pool
	opening int64
}

func newWebRig(t *testing.T) *webRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	layer := faulttest.Layer(t)
	direct := contested.Database(t)
	ls, err := layer.Leases().Acquire(ctx, t.Name())
	if err != nil {
		t.Fatalf("lease a proxy port: %v", err)
	}
	t.Cleanup(func() { layer.Leases().Release(context.Background(), ls) })
	port, _ := layer.Port(ls.Port)
	proxy, err := layer.Toxiproxy().CreateProxy("ledger-web-"+strconv.Itoa(ls.Port), port.Listen, layer.PostgresUpstream)
	if err != nil {
		t.Fatalf("create proxy on %s: %v", port.Listen, err)
	}
	t.Cleanup(func() { proxy.Delete() })
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = port.Dial
	r := &webRig{t: t, proxy: proxy, dsn: u.String(), opening: 1000}
	r.direct = newRig(t, direct, 4, r.opening).directPool(2)
	cfg, err := pgxpool.ParseConfig(r.dsn)
	if err != nil {
		t.Fatal(err)
	}
	ledger.ConfigureWebPool(cfg)
	cfg.MaxConns = 4
	if r.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.pool.Close)
	return r
}

// bounds are one case's timings, derived from what the machine gives it (webRig.measure):
// the front's backend timeout, and the slack the front has beyond it to answer a page.
type bounds struct {
	timeout, slack time.Duration
}

// measure derives a case's bounds from the slowest of five healthy pages, fetched now through
// the same proxy from a front with a timeout it cannot reach: the timeout is healthyFactor times
// that (at least minWebTimeout), and the slack beyond it four times that (at least the second
// the front's contract allows). On an idle machine these are 500 ms and 1 s; on a saturated
// one, what keeps a healthy backend healthy.
func (r *webRig) measure(t *testing.T) bounds {
	t.Helper()
	web := ledger.NewWeb(r.pool, ledger.WebTimeout(time.Minute))
	srv := httptest.NewServer(web)
	defer srv.Close()
	defer web.Close(context.Background())
	var slowest time.Duration
	for range 5 {
		start := time.Now()
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatalf("measure a healthy page: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		slowest = max(slowest, time.Since(start))
	}
	b := bounds{timeout: max(minWebTimeout, healthyFactor*slowest), slack: max(time.Second, 4*slowest)}
	if b.timeout > minWebTimeout {
		t.Logf("a healthy page took up to %s here: the front's timeout is %s, its slack %s", slowest.Round(time.Millisecond), b.timeout, b.slack)
	}
	return b
}

// fault arms one condition on the proxy, for a front whose backend timeout is timeout, and
// returns what heals it.
type fault func(t *testing.T, p *toxiproxy.Proxy, timeout time.Duration) (heal func())

// backendDown disables the proxy: connections are refused, open ones closed.
func backendDown(t *testing.T, p *toxiproxy.Proxy, _ time.Duration) func() {
	if err := p.Disable(); err != nil {
		t.Fatalf("disable proxy: %v", err)
	}
	return func() {
		if err := p.Enable(); err != nil {
			t.Errorf("enable proxy: %v", err)
		}
	}
}

// toxic arms one toxic on stream (upstream: the requests; downstream: the answers), its
// attributes made for the front's timeout, and returns what removes it.
func toxic(typ, stream string, attrs func(timeout time.Duration) toxiproxy.Attributes) fault {
	return func(t *testing.T, p *toxiproxy.Proxy, timeout time.Duration) func() {
		if _, err := p.AddToxic(typ, typ, stream, 1, attrs(timeout)); err != nil {
			t.Fatalf("add %s toxic: %v", typ, err)
		}
		return func() {
			if err := p.RemoveToxic(typ); err != nil {
				t.Errorf("remove %s toxic: %v", typ, err)
			}
		}
	}
}

// answer is one HTTP answer of the front, with what the page shows.
type answer struct {
	status  int
	body    string
	banner  string // #banner's data-state
	outcome string // #outcome's data-outcome
}

var (
	bannerRe   = regexp.MustCompile(`<div id="banner" data-state="([a-z]*)">`)
	outcomeRe  = regexp.MustCompile(`<div id="outcome" data-outcome="([a-z]*)" data-key="([^"]*)">`)
	balanceRe  = regexp.MustCompile(`<tr data-account="([^"]+)"><td>[^<]*</td><td class="balance">(-?\d+)</td></tr>`)
	formKeyRe  = regexp.MustCompile(`<input type="hidden" name="key" value="([^"]+)">`)
	transferRe = regexp.MustCompile(`<li data-id="([^"]+)">`)
)

// fixed is toxic attributes that do not depend on the timeout.
func fixed(a toxiproxy.Attributes) func(time.Duration) toxiproxy.Attributes {
	return func(time.Duration) toxiproxy.Attributes { return a }
}

// webClient makes requests to one front and holds each answer to the contract's bound: within
// the front's timeout plus its slack (one second, on a machine with CPU to spare).
type webClient struct {
	t    *testing.T
	base string
	b    bounds
}

func (c webClient) do(method, path string, form url.Values) answer {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: c.b.timeout + c.b.slack + 10*time.Second}).Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	if took := time.Since(start); took > c.b.timeout+c.b.slack {
		c.t.Errorf("%s %s answered after %s, beyond the timeout %s + %s", method, path, took.Round(time.Millisecond), c.b.timeout, c.b.slack)
	}
	a := answer{status: resp.StatusCode, body: string(b)}
	if m := bannerRe.FindStringSubmatch(a.body); m != nil {
		a.banner = m[1]
	}
	if m := outcomeRe.FindStringSubmatch(a.body); m != nil {
		a.outcome = m[1]
	}
	return a
}

// expect fails the test unless a has status, banner and outcome (an empty want is not checked).
func (a answer) expect(t *testing.T, what string, status int, banner, outcome string) {
	t.Helper()
	if a.status != status || (banner != "" && a.banner != banner) || (outcome != "" && a.outcome != outcome) {
		t.Errorf("%s: status %d, banner %q, outcome %q; want %d, %q, %q; the page:\n%s", what, a.status, a.banner, a.outcome, status, banner, outcome, a.body)
	}
}

// balances reads every balance directly, bypassing the faults.
func (r *webRig) balances(t *testing.T) map[string]int64 {
	t.Helper()
	b, err := ledger.NewStore(r.direct).Balances(context.Background())
	if err != nil {
		t.Fatalf("read balances directly: %v", err)
	}
	return b
}

// decided reads the outcome recorded for key directly ("" when none).
func (r *webRig) decided(t *testing.T, key string) string {
	t.Helper()
	var n int
	var o string
	if err := r.direct.QueryRow(context.Background(), `SELECT count(*), coalesce(max(outcome), '') FROM applied_transfers WHERE transfer_id = $1`, key).Scan(&n, &o); err != nil {
		t.Fatalf("read the outcome of %s directly: %v", key, err)
	}
	return o
}

// TestWebFront walks the web front's flows, each case on a fresh front over the same proxied
// pool: the page, a submission and its re-POST, and the same flows while the proxy is down,
// slower than the timeout, or resets the answer of a transfer it let through. After each case
// the front is closed (its background settles done) and the ledger read directly: the money
// moved exactly as the confirmed submissions say, never twice.
func TestWebFront(t *testing.T) {
	r := newWebRig(t)
	from, to := "acct-00", "acct-01"
	submission := func(key string, amount string) url.Values {
		return url.Values{"from": {from}, "to": {to}, "amount": {amount}, "key": {key}}
	}
	tests := []struct {
		name  string
		fault fault
		// flow runs the requests under the fault and returns the key it submitted ("" none)
		// and the amount a decided "applied" moves.
		flow func(t *testing.T, c webClient) (key string, amount int64)
		// settled: the outcome /transfer/KEY must read once healed and settled ("" any decided
		// one, checked against the ledger).
		settled string
	}{
		{
			name: "the page lists every balance and a form with a fresh key",
			flow: func(t *testing.T, c webClient) (string, int64) {
				a := c.do("GET", "/", nil)
				a.expect(t, "GET /", http.StatusOK, "ok", "")
				rows := balanceRe.FindAllStringSubmatch(a.body, -1)
				if len(rows) != 4 {
					t.Errorf("the page lists %d balances, want 4:\n%s", len(rows), a.body)
				}
				got := map[string]int64{}
				for _, m := range rows {
					got[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
				}
				for acct, want := range r.balances(t) {
					if got[acct] != want {
						t.Errorf("the page shows %s = %d, the ledger holds %d", acct, got[acct], want)
					}
				}
				b := c.do("GET", "/", nil)
				k1, k2 := formKeyRe.FindStringSubmatch(a.body), formKeyRe.FindStringSubmatch(b.body)
				if k1 == nil || k2 == nil || k1[1] == k2[1] {
					t.Errorf("two renders of the form carry keys %v and %v, want two different fresh keys", k1, k2)
				}
				c.do("GET", "/readyz", nil).expect(t, "GET /readyz", http.StatusOK, "", "")
				return "", 0
			},
		},
		{
			name:    "a submission is confirmed, moves the money once and is listed",
			settled: "confirmed",
			flow: func(t *testing.T, c webClient) (string, int64) {
				c.do("POST", "/transfer", submission("web-confirm", "30")).expect(t, "POST /transfer", http.StatusOK, "ok", "confirmed")
				a := c.do("GET", "/", nil)
				if ids := transferRe.FindAllStringSubmatch(a.body, -1); len(ids) == 0 || ids[0][1] != "web-confirm" {
					t.Errorf("the page's first recent transfer is %v, want web-confirm:\n%s", ids, a.body)
				}
				return "web-confirm", 30
			},
		},
		{
			name:    "re-posting the same key (a reload) answers confirmed and does not apply twice",
			settled: "confirmed",
			flow: func(t *testing.T, c webClient) (string, int64) {
				for i := range 3 {
					c.do("POST", "/transfer", submission("web-reload", "20")).expect(t, fmt.Sprintf("POST /transfer #%d", i+1), http.StatusOK, "ok", "confirmed")
				}
				return "web-reload", 20
			},
		},
		{
			name:    "a transfer beyond the funds is refused and moves nothing",
			settled: "refused",
			flow: func(t *testing.T, c webClient) (string, int64) {
				c.do("POST", "/transfer", submission("web-broke", "999999")).expect(t, "POST /transfer", http.StatusUnprocessableEntity, "ok", "refused")
				return "web-broke", 999999
			},
		},
		{
			name: "bad input is refused before anything is sent",
			flow: func(t *testing.T, c webClient) (string, int64) {
				c.do("POST", "/transfer", submission("web-bad", "ten")).expect(t, "POST /transfer amount ten", http.StatusUnprocessableEntity, "", "refused")
				c.do("POST", "/transfer", submission("", "10")).expect(t, "POST /transfer without a key", http.StatusUnprocessableEntity, "", "refused")
				if d := r.decided(t, "web-bad"); d != "" {
					t.Errorf("the ledger decided web-bad (%s): bad input reached it", d)
				}
				return "", 0
			},
		},
		{
			name:    "backend down: the page says unreachable, a submission is refused, not ready",
			fault:   backendDown,
			settled: "pending",
			flow: func(t *testing.T, c webClient) (string, int64) {
				a := c.do("GET", "/", nil)
				a.expect(t, "GET /", http.StatusOK, "unreachable", "")
				if rows := balanceRe.FindAllString(a.body, -1); len(rows) != 0 {
					t.Errorf("the page shows %d balances the backend could not give", len(rows))
				}
				c.do("POST", "/transfer", submission("web-down", "10")).expect(t, "POST /transfer", http.StatusServiceUnavailable, "unreachable", "refused")
				c.do("GET", "/readyz", nil).expect(t, "GET /readyz", http.StatusServiceUnavailable, "", "")
				c.do("GET", "/transfer/web-down", nil).expect(t, "GET /transfer/web-down", http.StatusOK, "unreachable", "pending")
				return "web-down", 10
			},
		},
		{
			name: "backend slower than the timeout: slow banner, a pending submission settled once",
			fault: toxic("latency", "downstream", func(timeout time.Duration) toxiproxy.Attributes {
				return toxiproxy.Attributes{"latency": int(3 * timeout / time.Millisecond)}
			}),
			flow: func(t *testing.T, c webClient) (string, int64) {
				c.do("POST", "/transfer", submission("web-slow", "40")).expect(t, "POST /transfer", http.StatusAccepted, "slow", "pending")
				c.do("GET", "/", nil).expect(t, "GET /", http.StatusOK, "slow", "")
				c.do("GET", "/readyz", nil).expect(t, "GET /readyz", http.StatusServiceUnavailable, "", "")
				c.do("GET", "/transfer/web-slow", nil).expect(t, "GET /transfer/web-slow", http.StatusOK, "slow", "pending")
				return "web-slow", 40
			},
		},
		{
			name:    "the answer reset after the transfer applied: pending, then confirmed once",
			fault:   toxic("limit_data", "downstream", fixed(toxiproxy.Attributes{"bytes": 1})),
			settled: "confirmed",
			flow: func(t *testing.T, c webClient) (string, int64) {
				c.do("POST", "/transfer", submission("web-reset", "50")).expect(t, "POST /transfer", http.StatusAccepted, "unreachable", "pending")
				return "web-reset", 50
			},
		},
		{
			name:    "the request lost on the way: pending, then settled by the front with the same key, confirmed once",
			fault:   toxic("timeout", "upstream", fixed(toxiproxy.Attributes{"timeout": 0})),
			settled: "confirmed",
			flow: func(t *testing.T, c webClient) (string, int64) {
				c.do("POST", "/transfer", submission("web-lost", "60")).expect(t, "POST /transfer", http.StatusAccepted, "slow", "pending")
				if d := r.decided(t, "web-lost"); d != "" {
					t.Errorf("the ledger decided web-lost (%s) although its request was dropped", d)
				}
				return "web-lost", 60
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := r.balances(t)
			b := r.measure(t)
			web := ledger.NewWeb(r.pool, ledger.WebTimeout(b.timeout))
			srv := httptest.NewServer(web)
			defer srv.Close()
			c := webClient{t: t, base: srv.URL, b: b}
			// A connection in the pool used just now: the fault meets a transfer on an open
			// connection, as it would mid-traffic, rather than a connect.
			c.do("GET", "/readyz", nil).expect(t, "GET /readyz before the fault", http.StatusOK, "", "")
			heal := func() {}
			if tt.fault != nil {
				heal = tt.fault(t, r.proxy, b.timeout)
			}
			key, amount := tt.flow(t, c)
			heal()
			ctx, cancel := context.WithTimeout(context.Background(), max(20*time.Second, 10*b.timeout))
			defer cancel()
			if err := web.Close(ctx); err != nil {
				t.Errorf("the pending submissions did not settle once healed: %v", err)
			}
			moved := int64(0)
			if key != "" {
				a := c.do("GET", "/transfer/"+key, nil)
				a.expect(t, "GET /transfer/"+key+" once healed", http.StatusOK, "ok", tt.settled)
				switch d := r.decided(t, key); {
				case d == "applied" && a.outcome == "confirmed":
					moved = amount
				case d == "rejected" && a.outcome == "refused", d == "" && a.outcome == "pending":
				default:
					t.Errorf("the ledger recorded %q for %s, the front says %s", d, key, a.outcome)
				}
			}
			after := r.balances(t)
			if after[from] != before[from]-moved || after[to] != before[to]+moved {
				t.Errorf("%s went %d -> %d and %s %d -> %d; want exactly %d moved (once)", from, before[from], after[from], to, before[to], after[to], moved)
			}
			var total int64
			for _, b := range after {
				total += b
			}
			if total != 4*r.opening {
				t.Errorf("the balances sum to %d, want %d", total, 4*r.opening)
			}
		})
	}
}

// TestWebCommand runs `ledger web` as the command does: it prints its address once listening
// (port 0 here), serves its page and readiness whether or not the backend is up at start, and
// exits 0 when its context ends.
func TestWebCommand(t *testing.T) {
	r := newWebRig(t)
	tests := []struct {
		name   string
		fault  fault
		ready  int
		banner string
	}{
		{"the backend answers", nil, http.StatusOK, "ok"},
		{"the backend is down from the start", backendDown, http.StatusServiceUnavailable, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := r.measure(t)
			heal := func() {}
			if tt.fault != nil {
				heal = tt.fault(t, r.proxy, b.timeout)
			}
			defer heal()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, w := io.Pipe()
			var errb syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- ledger.Main(ctx, []string{"web", "-dsn", r.dsn, "-listen", "127.0.0.1:0", "-timeout", b.timeout.String()}, w, &errb)
				w.Close()
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			go io.Copy(io.Discard, out)
			addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ledger web: listening on ")
			if err != nil || !ok {
				t.Fatalf("first line %q (%v), want \"ledger web: listening on http://HOST:PORT\"; stderr:\n%s", line, err, errb.String())
			}
			c := webClient{t: t, base: addr, b: b}
			c.do("GET", "/readyz", nil).expect(t, "GET /readyz", tt.ready, "", "")
			c.do("GET", "/", nil).expect(t, "GET /", http.StatusOK, tt.banner, "")
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("ledger web exited %d when stopped, want 0; stderr:\n%s", code, errb.String())
				}
			case <-time.After(b.timeout + b.slack + 5*time.Second):
				t.Fatal("ledger web did not exit after its context ended")
			}
		})
	}
}
