package lease_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/faultlayer/faulttest"
	"github.com/contested/contested/internal/faultlayer/lease"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Main(reexec.Roles{"lease-client": leaseClient})
	faulttest.Main(m)
}

// event is one completed lease in the recorded history: the server's
// clock at acquire and at release, and the epoch the acquire returned.
type event struct {
	Proc     string    `json:"proc"`
	Holder   string    `json:"holder"`
	Port     int       `json:"port"`
	Epoch    int64     `json:"epoch"`
	Acquired time.Time `json:"acquired"`
	Released time.Time `json:"released"`
	Err      string    `json:"err,omitempty"`
}

// hammer runs 16 goroutines that acquire, hold briefly and release until
// stop is closed, and returns the history; done counts the leases.
func hammer(ctx context.Context, tbl *lease.Table, proc string, stop <-chan struct{}, done *atomic.Int64) []event {
	var mu sync.Mutex
	var hist []event
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("%s/g%d", proc, g)
			for {
				select {
				case <-stop:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				l, err := tbl.Acquire(actx, holder)
				cancel()
				ev := event{Proc: proc, Holder: holder}
				if err != nil {
					ev.Err = "acquire: " + err.Error()
				} else {
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
					ev.Port, ev.Epoch, ev.Acquired = l.Port, l.Epoch, l.LeasedAt
					ev.Released, err = tbl.Release(ctx, l)
					if err != nil {
						ev.Err = "release: " + err.Error()
					}
				}
				mu.Lock()
				hist = append(hist, ev)
				mu.Unlock()
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return hist
}

const (
	envPorts   = "LEASE_TEST_PORTS"
	envHistory = "LEASE_TEST_HISTORY"
)

// leaseClient is the second process of the mutual-exclusion test. It
// says "ready" once connected, starts on "go", prints how many leases it
// made as it goes, and stops when its standard input closes.
func leaseClient() int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(envvar.PostgresDSN))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var ports []int
	for _, p := range strings.Split(os.Getenv(envPorts), ",") {
		n, _ := strconv.Atoi(p)
		ports = append(ports, n)
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if line, err := in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		return 2
	}
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, in) // until the parent closes it
		close(stop)
	}()
	var done atomic.Int64
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				fmt.Println(done.Load())
			}
		}
	}()
	hist := hammer(ctx, lease.New(pool, ports, nil), "child", stop, &done)
	<-counted
	b, _ := json.Marshal(hist)
	if err := os.WriteFile(os.Getenv(envHistory), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// TestNoPortIsEverHeldByTwoHoldersAtOnce runs 16 goroutines in each of two
// processes against four ports for a few seconds, records every lease with
// the server's timestamps, and checks the history: per port, each lease
// starts after the previous one ended and epochs strictly increase.
// privatePorts gives a test rows of its own in the lease table, outside
// the layer's proxy ports: under validate the layer is shared with every
// other package's legs, which lease from its ports.
func privatePorts(t *testing.T, ports ...int) []int {
	t.Helper()
	if err := lease.Migrate(context.Background(), faulttest.Layer(t).DB(), ports); err != nil {
		t.Fatal(err)
	}
	return ports
}

func TestNoPortIsEverHeldByTwoHoldersAtOnce(t *testing.T) {
	l := faulttest.Layer(t)
	ports := privatePorts(t, 41101, 41102, 41103, 41104)
	ctx := context.Background()
	histFile := filepath.Join(t.TempDir(), "child.json")
	var ps []string
	for _, p := range ports {
		ps = append(ps, strconv.Itoa(p))
	}
	cmd := reexec.Command(t, "lease-client", append(l.Env(), envPorts+"="+strings.Join(ps, ","), envHistory+"="+histFile)...)
	cmd.Stderr = os.Stderr
	childIn, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	childOut, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The contention is made, not hoped for: both processes start together
	// once the child is connected, and both run until each has made
	// minLeases leases, however slowly this machine runs them. The bound
	// is only for a child that hangs.
	const minLeases = 60
	lines := bufio.NewScanner(childOut)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the child did not say ready: %q", lines.Text())
	}
	var childLeases atomic.Int64
	go func() {
		for lines.Scan() {
			if n, err := strconv.ParseInt(lines.Text(), 10, 64); err == nil {
				childLeases.Store(n)
			}
		}
	}()
	stop := make(chan struct{})
	var parentLeases atomic.Int64
	histc := make(chan []event, 1)
	go func() { histc <- hammer(ctx, lease.New(l.DB(), ports, nil), "parent", stop, &parentLeases) }()
	fmt.Fprintln(childIn, "go")
	for deadline := time.Now().Add(5 * time.Minute); parentLeases.Load() < minLeases || childLeases.Load() < minLeases; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(stop)
			childIn.Close()
			t.Fatalf("the two processes did not make %d leases each in 5 minutes: parent %d, child %d", minLeases, parentLeases.Load(), childLeases.Load())
		}
	}
	close(stop)
	childIn.Close()
	hist := <-histc
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	b, err := os.ReadFile(histFile)
	if err != nil {
		t.Fatal(err)
	}
	var child []event
	if err := json.Unmarshal(b, &child); err != nil {
		t.Fatal(err)
	}
	hist = append(hist, child...)

	procs := map[string]int{}
	byPort := map[int][]event{}
	for _, ev := range hist {
		if ev.Err != "" {
			t.Errorf("%s: %s", ev.Holder, ev.Err)
			continue
		}
		procs[ev.Proc]++
		byPort[ev.Port] = append(byPort[ev.Port], ev)
	}
	turns := 0 // a port passing from one process to the other: the two contended for it
	for port, evs := range byPort {
		sort.Slice(evs, func(i, j int) bool { return evs[i].Acquired.Before(evs[j].Acquired) })
		for i := 1; i < len(evs); i++ {
			prev, cur := evs[i-1], evs[i]
			if prev.Proc != cur.Proc {
				turns++
			}
			if !cur.Acquired.After(prev.Released) {
				t.Errorf("port %d held twice: %s [%s, %s] overlaps %s [%s, %s]", port,
					prev.Holder, prev.Acquired.Format(time.RFC3339Nano), prev.Released.Format(time.RFC3339Nano),
					cur.Holder, cur.Acquired.Format(time.RFC3339Nano), cur.Released.Format(time.RFC3339Nano))
			}
			if cur.Epoch <= prev.Epoch {
				t.Errorf("port %d: epoch went from %d (%s) to %d (%s)", port, prev.Epoch, prev.Holder, cur.Epoch, cur.Holder)
			}
		}
	}
	if procs["parent"] < minLeases || procs["child"] < minLeases || turns < 10 {
		t.Fatalf("too little contention to prove anything: parent %d leases, child %d, %d hand-overs between them", procs["parent"], procs["child"], turns)
	}
	t.Logf("%d leases over %d ports: parent %d, child %d, %d hand-overs between the processes", len(hist), len(byPort), procs["parent"], procs["child"], turns)
}

func TestReleaseAndRenewAreFencedByEpoch(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	port := privatePorts(t, 41110)
	short := lease.New(l.DB(), port, nil, lease.WithTTL(200*time.Millisecond))

	stale, err := short.Acquire(bounded(t), "stale-holder")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let it expire
	fresh, err := short.Acquire(bounded(t), "fresh-holder")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Reclaimed != "stale-holder" {
		t.Errorf("the takeover is not reported: Reclaimed = %q, want stale-holder", fresh.Reclaimed)
	}
	if fresh.Port != stale.Port || fresh.Epoch <= stale.Epoch {
		t.Fatalf("re-lease: got port %d epoch %d after port %d epoch %d", fresh.Port, fresh.Epoch, stale.Port, stale.Epoch)
	}
	if _, err := short.Renew(ctx, stale); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("renew with a stale epoch: err = %v, want ErrFenced", err)
	}
	if _, err := short.Release(ctx, stale); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("release with a stale epoch: err = %v, want ErrFenced", err)
	}
	if _, err := short.Renew(ctx, fresh); err != nil {
		t.Errorf("renew by the current holder: %v", err)
	}
	if _, err := short.Release(ctx, fresh); err != nil {
		t.Errorf("release by the current holder: %v", err)
	}
	if _, err := short.Release(ctx, fresh); !errors.Is(err, lease.ErrFenced) {
		t.Errorf("second release: err = %v, want ErrFenced", err)
	}
}

func TestExhaustedWaitsForTheContextAndNamesTheHolders(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41111, 41112)
	tbl := lease.New(l.DB(), ports, nil)
	for _, h := range []string{"TestHolderOne", "TestHolderTwo"} {
		got, err := tbl.Acquire(bounded(t), h)
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release(ctx, got)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := tbl.Acquire(wctx, "TestLateComer")
	if !errors.Is(err, lease.ErrExhausted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with every port held: err = %v, want ErrExhausted wrapping the deadline", err)
	}
	for _, want := range []string{"TestHolderOne", "TestHolderTwo", "2 of 2 ports held", envvar.ProxyPorts} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestAnExpiredLeaseIsHandedOutOnlyAfterItsProxyIsDeleted(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	pp := faultlayer.ProxyPort{Port: 41113, Listen: net.JoinHostPort(l.ProxyListenHost, "41113")}
	privatePorts(t, pp.Port)
	tbl := lease.New(l.DB(), []int{pp.Port}, lease.CleanerFunc(l.ClearPort), lease.WithTTL(200*time.Millisecond))
	old, err := tbl.Acquire(bounded(t), "abandoning-holder")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Toxiproxy().CreateProxy(fmt.Sprintf("abandoned-%d", pp.Port), pp.Listen, l.PostgresUpstream); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	got, err := tbl.Acquire(bounded(t), "next-holder")
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release(ctx, got)
	if got.Port != old.Port {
		t.Fatalf("got port %d, want the expired %d", got.Port, old.Port)
	}
	proxies, err := l.Toxiproxy().Proxies()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range proxies {
		if strings.HasSuffix(p.Listen, ":"+strconv.Itoa(pp.Port)) {
			t.Errorf("proxy %s of the expired lease still listens on %s after the port was handed out", name, p.Listen)
		}
	}
}

// TestMigrateIsIdempotentAndSafeConcurrently migrates a fresh database from
// eight goroutines at once, then again.
func TestMigrateIsIdempotentAndSafeConcurrently(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	name := fmt.Sprintf("lease_migrate_%d", rand.Uint32())
	if _, err := l.DB().Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.DB().Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)") })
	cfg, err := pgxpool.ParseConfig(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- lease.Migrate(ctx, pool, []int{30000, 30001, 30002}) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	if err := lease.Migrate(ctx, pool, []int{30001, 30002, 30003}); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	rows, _ := pool.Query(ctx, "SELECT port FROM "+lease.TableName+" ORDER BY port")
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[30000 30001 30002 30003]" {
		t.Errorf("ports after two migrations = %v, want [30000 30001 30002 30003]", got)
	}
}

func TestMissingTableIsReportedAsSuch(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	name := fmt.Sprintf("lease_missing_%d", rand.Uint32())
	if _, err := l.DB().Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.DB().Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)") })
	cfg, _ := pgxpool.ParseConfig(l.PostgresDSN)
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = lease.New(pool, []int{1}, nil).Acquire(bounded(t), "x")
	if !errors.Is(err, lease.ErrNoTable) {
		t.Fatalf("Acquire without a table: err = %v, want ErrNoTable", err)
	}
}

// TestAnAcquireWhoseAnswerIsLostGivesItsPortBack drives the lease table
// through a proxy that lets the acquire commit and drops its answer: the
// caller times out, and the port must not stay leased to nobody.
func TestAnAcquireWhoseAnswerIsLostGivesItsPortBack(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	port := privatePorts(t, 41114)
	tbl, proxy := proxiedTable(t, l, "lease-lost-answer", port)
	if _, err := proxy.AddToxic("drop-answers", "timeout", "downstream", 1, map[string]any{"timeout": 0}); err != nil {
		t.Fatal(err)
	}
	go func() { // the network comes back while the caller gives the port back
		time.Sleep(2 * time.Second)
		proxy.RemoveToxic("drop-answers")
	}()
	actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := tbl.Acquire(actx, "TestLostAnswer")
	cancel()
	if !errors.Is(err, lease.ErrExhausted) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire through a proxy that drops answers: err = %v, want the deadline", err)
	}
	var holder *string
	if err := l.DB().QueryRow(ctx, "SELECT holder FROM "+lease.TableName+" WHERE port = $1", port[0]).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder != nil {
		t.Errorf("port %d is still leased to %q after its acquire's answer was lost", port[0], *holder)
	}
}

// TestReclaimTakesOnlyLeasesOfProvablyGoneOwnersOrExpiredOnes holds four
// unexpired leases, each under another owner identity, and one expired
// one, and reclaims: a dead owner in this PID namespace and an owner from
// before this host's last boot are provably gone, so their leases are
// freed and their proxies cleared; an owner in another PID namespace (a
// run in a container sharing the engine) and this live process are not,
// and the foreign one is named in the log; the expired lease is reclaimed
// whoever owned it, since expiry is the heartbeat.
func TestReclaimTakesOnlyLeasesOfProvablyGoneOwnersOrExpiredOnes(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	me := reap.Self()
	foreign := reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS + 1, PID: 1, Start: 1}
	owners := []struct {
		name      string
		owner     reap.Owner
		ttl       time.Duration
		reclaimed bool
	}{
		{"dead here", reap.Owner{Host: me.Host, Boot: me.Boot, PIDNS: me.PIDNS, PID: 1 << 30, Start: 1}, time.Hour, true},
		{"before the last boot", reap.Owner{Host: me.Host, Boot: "ffffffff-97b4-4fb4-bf9b-7891202df541", PIDNS: me.PIDNS, PID: os.Getpid(), Start: me.Start}, time.Hour, true},
		{"another PID namespace", foreign, time.Hour, false},
		{"this live process", me, time.Hour, false},
		{"another PID namespace, expired", foreign, time.Millisecond, true},
	}
	base := 41200
	var ports []int
	for i := range owners {
		ports = append(ports, base+i)
	}
	privatePorts(t, ports...)
	var mu sync.Mutex
	cleared := map[int]bool{}
	cleaner := lease.CleanerFunc(func(context.Context, int) error { return nil })
	for i, o := range owners {
		tbl := lease.New(l.DB(), []int{ports[i]}, cleaner, lease.WithOwner(o.owner.String()), lease.WithTTL(o.ttl))
		got, err := tbl.Acquire(bounded(t), "holder "+o.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tbl.Release(context.Background(), got) })
	}
	time.Sleep(10 * time.Millisecond)
	var log strings.Builder
	reclaimer := lease.New(l.DB(), ports, lease.CleanerFunc(func(_ context.Context, port int) error {
		mu.Lock()
		defer mu.Unlock()
		cleared[port] = true
		return nil
	}), lease.WithLog(&log))
	freed, err := reclaimer.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, f := range freed {
		got[f.Port] = true
	}
	for i, o := range owners {
		if got[ports[i]] != o.reclaimed || cleared[ports[i]] != o.reclaimed {
			t.Errorf("%s: reclaimed %v, proxy cleared %v; want %v", o.name, got[ports[i]], cleared[ports[i]], o.reclaimed)
		}
	}
	if !strings.Contains(log.String(), fmt.Sprintf("left port %d", ports[2])) || !strings.Contains(log.String(), "another PID namespace") {
		t.Errorf("the reclaim must say it left the foreign owner's lease to its expiry; log:\n%s", log.String())
	}
}

// TestAnAcquireCutOffAfterItCommittedIsNeverReportedDefinite: the acquire
// reaches Postgres and commits, its answer is held back, then the proxy
// goes down, cutting the connection and refusing the give-back's. The port
// stays leased (the give-back could not run), so the error Acquire returns
// must not read as "nothing happened" to a caller that classifies it with
// errors.As: no ConnectError, nothing safe to retry, though every give-back
// attempt failed with exactly those.
func TestAnAcquireCutOffAfterItCommittedIsNeverReportedDefinite(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	port := privatePorts(t, 41115)
	tbl, proxy := proxiedTable(t, l, "lease-cut-off", port)
	if _, err := proxy.AddToxic("hold-answers", "timeout", "downstream", 1, map[string]any{"timeout": 0}); err != nil {
		t.Fatal(err)
	}
	const holder = "TestCutOff"
	done := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := tbl.Acquire(actx, holder)
		done <- err
	}()
	// Wait until the acquire has committed, then cut the proxy.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var h *string
		if err := l.DB().QueryRow(ctx, "SELECT holder FROM "+lease.TableName+" WHERE port = $1", port[0]).Scan(&h); err != nil {
			t.Fatal(err)
		}
		if h != nil && *h == holder {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the acquire never committed through the proxy")
		}
	}
	proxy.Enabled = false
	if err := proxy.Save(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		proxy.Enabled = true
		proxy.Save()
	}()
	err := <-done
	if err == nil {
		t.Fatal("Acquire through a proxy cut off before its answer: no error")
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) || pgconn.SafeToRetry(err) {
		t.Errorf("Acquire's error reads as definite (ConnectError %v, safe to retry %v): %v", connect != nil, pgconn.SafeToRetry(err), err)
	}
	if !strings.Contains(err.Error(), "give back an interrupted acquire") {
		t.Errorf("Acquire's error does not say the give-back failed: %v", err)
	}
	var h *string
	if err := l.DB().QueryRow(ctx, "SELECT holder FROM "+lease.TableName+" WHERE port = $1", port[0]).Scan(&h); err != nil {
		t.Fatal(err)
	}
	if h == nil || *h != holder {
		t.Fatalf("port %d holder = %v; the cut-off acquire should still hold it (its give-back could not run)", port[0], h)
	}
}

// proxiedTable returns a lease table over ports whose one connection goes
// through a fresh Toxiproxy proxy (named name, on the layer's last proxy
// port), deleted when the test ends. The connection's statements are
// already prepared (a warm-up acquire and release): an acquire then goes
// out in one round trip and commits before a toxic holds its answer.
func proxiedTable(t *testing.T, l *faultlayer.Layer, name string, ports []int) (*lease.Table, *toxiproxy.Proxy) {
	t.Helper()
	ctx := context.Background()
	// The proxy's port is leased like any leg's, and the proxy goes on the
	// port the lease handed out: the layer is shared with other packages'
	// legs, which may hold any other port.
	held, err := l.Leases().Acquire(bounded(t), "reserve-the-proxy-port")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Leases().Release(context.Background(), held) })
	i := slices.IndexFunc(l.Ports, func(p faultlayer.ProxyPort) bool { return p.Port == held.Port })
	if i < 0 {
		t.Fatalf("the layer leased port %d, which is not one of its proxy ports %v", held.Port, l.Ports)
	}
	pp := l.Ports[i]
	proxy, err := l.Toxiproxy().CreateProxy(name, pp.Listen, l.PostgresUpstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Delete() })
	cfg, err := pgxpool.ParseConfig(l.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	host, p, _ := net.SplitHostPort(pp.Dial)
	cfg.ConnConfig.Host = host
	n, _ := strconv.Atoi(p)
	cfg.ConnConfig.Port = uint16(n)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tbl := lease.New(pool, ports, nil, lease.WithoutReclaimOnWait())
	// A run of this test before may have left its private ports held on
	// purpose (a lease whose give-back could not reach the table): its
	// process is gone, so Reclaim frees them.
	if _, err := tbl.Reclaim(bounded(t)); err != nil {
		t.Fatal(err)
	}
	warm, err := tbl.Acquire(bounded(t), t.Name()+"-warm-up")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Release(ctx, warm); err != nil {
		t.Fatal(err)
	}
	return tbl, proxy
}

// TestMigrateDoesNotWaitBehindAnOpenTransaction: a leg that starts while
// another holds a row of the lease table in an open transaction migrates
// at once. A migration that took the table's exclusive lock would wait for
// that transaction, and every renewal of every other lease would queue
// behind it: a shared table stalled by one slow leg.
func TestMigrateDoesNotWaitBehindAnOpenTransaction(t *testing.T) {
	l := faulttest.Layer(t)
	ctx := context.Background()
	ports := privatePorts(t, 41131)
	tx, err := l.DB().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT port FROM `+lease.TableName+` WHERE port = $1 FOR UPDATE`, ports[0]); err != nil {
		t.Fatal(err)
	}
	bound, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := lease.Migrate(bound, l.DB(), []int{41132}); err != nil {
		t.Fatalf("Migrate beside an open transaction on the table: %v; want it to take no lock that waits for that transaction", err)
	}
}
