package faultlayer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dbguard"
	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/private"
	"github.com/contested/contested/internal/reap"
	"github.com/contested/contested/internal/secret"
)

// ErrWarmRecord reports a warm layer record that is not the caller's own:
// not a regular file of this user's, open to other users (it holds the
// test plane's password), in a directory other users can enter, or written
// for another user. Nothing in it is used. It wraps ErrConfig (exit 2).
var ErrWarmRecord = fmt.Errorf("%w: the warm layer's record is refused", ErrConfig)

// maxWarmRecord caps the record read back: a few kilobytes of coordinates.
const maxWarmRecord = 1 << 20

// refuseWarm wraps why a record at path is refused with what to do.
func refuseWarm(path string, err error) error {
	what := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		what = strings.TrimPrefix(pe.Err.Error(), private.ErrNotPrivate.Error()+": ")
		if pe.Path != path {
			what = "its directory " + pe.Path + ": " + what
		}
	}
	return fmt.Errorf("%w: %s: %s; it must be this user's own file, mode 0600, in a directory only this user can enter (0700), since it holds the test plane's password and names the layer runs attach to: remove it with go tool mage layer down and start one with go tool mage layer up", ErrWarmRecord, path, what)
}

// startedIn says which checkout started a warm layer: the module root of
// the working directory (the directory holding the nearest go.mod above
// it) and its module path, "" when there is none.
func startedIn() (dir, module string) {
	wd, err := os.Getwd()
	if err != nil {
		return "", ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			return d, modulePath(b)
		}
		if filepath.Dir(d) == d {
			return wd, ""
		}
	}
}

// modulePath is the module directive of a go.mod.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Whose says whose warm layer rec is, for people: the checkout and module
// that started it, and whether that is the caller's own.
func (rec WarmRecord) Whose() string {
	if rec.StartedIn == "" {
		return "started by an older contested, which did not record where"
	}
	who := "started in " + rec.StartedIn
	if rec.Module != "" {
		who += " (module " + rec.Module + ")"
	}
	if dir, _ := startedIn(); dir != "" && dir != rec.StartedIn {
		who += "; not this checkout (" + dir + "): every checkout of this user that shares this cache directory attaches to it"
	}
	return who
}

// inspector is the part of the Docker API verifyWarm uses.
type inspector interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
}

// verifyWarm checks a record's coordinates against the containers of its
// run, as a fresh bring-up derives them: both carry this project's label
// and the warm label of this record's path; the control URL and the
// test-plane DSN are the Postgres container's own 127.0.0.1 bindings (the
// user, database and password it runs with); the direct addresses are its
// address on the run's own network; every proxy port is dialled there or
// at its own loopback binding. It returns "" when they agree, and
// otherwise what does not, naming the record's value and the container's.
// A record whose containers are missing or stopped is warmStale's to say.
func verifyWarm(ctx context.Context, d inspector, path string, rec WarmRecord) string {
	list, err := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", reap.LabelRun+"="+rec.RunID)})
	if err != nil {
		return "its containers cannot be listed: " + err.Error()
	}
	var pgID, tpID string
	for _, c := range list.Items {
		if c.Labels[reap.LabelManaged] != "true" || c.Labels[reap.LabelWarm] != path {
			return fmt.Sprintf("container %.12s of run %s is not this record's warm layer (labelled for %q)", c.ID, rec.RunID, c.Labels[reap.LabelWarm])
		}
		switch c.Labels[reap.LabelRole] {
		case rolePrefix + "postgres":
			pgID = c.ID
		case rolePrefix + "toxiproxy":
			tpID = c.ID
		}
	}
	if pgID == "" || tpID == "" {
		return "" // warmStale says which is missing
	}
	if rec.ToxiproxyContainer != tpID {
		return fmt.Sprintf("it names Toxiproxy container %.12s, its run's is %.12s", rec.ToxiproxyContainer, tpID)
	}
	res, err := d.ContainerInspect(ctx, pgID, client.ContainerInspectOptions{})
	if err != nil {
		return "its Postgres container cannot be inspected: " + err.Error()
	}
	ct := res.Container
	if ct.NetworkSettings == nil || ct.Config == nil {
		return "its Postgres container has no network settings"
	}
	bound := func(port int) string {
		for _, b := range ct.NetworkSettings.Ports[network.MustParsePort(fmt.Sprintf("%d/tcp", port))] {
			if b.HostIP.IsLoopback() {
				return net.JoinHostPort("127.0.0.1", b.HostPort)
			}
		}
		return ""
	}
	if want := "http://" + bound(controlPort); rec.ToxiproxyURL != want {
		return fmt.Sprintf("its control URL %s is not the one its Toxiproxy publishes (%s)", rec.ToxiproxyURL, want)
	}
	u, err := url.Parse(rec.PostgresDSN)
	if err != nil || u.Scheme != "postgres" {
		return "its Postgres DSN is not the one a containers layer makes"
	}
	password, _ := u.User.Password()
	if u.Host != bound(5432) || u.User.Username() != testPlaneUser || strings.TrimPrefix(u.Path, "/") != testPlaneDB || !slices.Contains(ct.Config.Env, "POSTGRES_PASSWORD="+password) {
		return fmt.Sprintf("its Postgres DSN names %s@%s/%s, not the Postgres its container publishes at %s (user %s, database %s, with its own password)", u.User.Username(), u.Host, strings.TrimPrefix(u.Path, "/"), bound(5432), testPlaneUser, testPlaneDB)
	}
	if want := "contested-" + rec.RunID; rec.Network != want {
		return fmt.Sprintf("it names network %q, its run's is %q", rec.Network, want)
	}
	ip := ""
	if nw, ok := ct.NetworkSettings.Networks[rec.Network]; ok && nw.IPAddress.IsValid() {
		ip = nw.IPAddress.String()
	}
	if rec.PostgresDirect != "" && (ip == "" || rec.PostgresDirect != net.JoinHostPort(ip, "5432")) {
		return fmt.Sprintf("it names Postgres on the layer's network at %s, its container is at %s", rec.PostgresDirect, ip)
	}
	if rec.ToxiproxyDirect != "" && rec.ToxiproxyDirect != ip {
		return fmt.Sprintf("it names Toxiproxy on the layer's network at %s, its container is at %s", rec.ToxiproxyDirect, ip)
	}
	if rec.PostgresUpstream != "127.0.0.1:5432" || rec.ProxyListenHost != "0.0.0.0" {
		return fmt.Sprintf("its upstream %s or listen host %s is not a containers layer's", rec.PostgresUpstream, rec.ProxyListenHost)
	}
	if len(rec.Ports) == 0 {
		return "it names no proxy port"
	}
	for _, p := range rec.Ports {
		port := strconv.Itoa(p.Port)
		direct := rec.ToxiproxyDirect != "" && p.Dial == net.JoinHostPort(rec.ToxiproxyDirect, port)
		published := bound(p.Port) != "" && p.Dial == bound(p.Port)
		if p.Listen != net.JoinHostPort("0.0.0.0", port) || !direct && !published {
			return fmt.Sprintf("it dials proxy port %d at %s, which is neither Toxiproxy on the layer's network nor its 127.0.0.1 binding", p.Port, p.Dial)
		}
	}
	return ""
}

// WarmTestPlane connects to the test-plane Postgres of the caller's own
// warm layer, for a sweep that reclaims what killed runs left in it: the
// record must be the caller's own (readWarm), its layer current and its
// coordinates its containers' (verifyWarm), its database none the guard
// lists. ErrNoWarm when no warm layer is recorded; an error saying why
// otherwise. Close the pool when done.
func WarmTestPlane(ctx context.Context, canonical []string) (*pgxpool.Pool, WarmRecord, error) {
	path, err := WarmRecordPath()
	if err != nil {
		return nil, WarmRecord{}, err
	}
	rec, err := readWarm(path)
	if err != nil {
		return nil, rec, err
	}
	cli, err := dockerenv.Connect(ctx)
	if err != nil {
		return nil, rec, fmt.Errorf("%w: the warm layer runs on containers: %v", ErrCannotRun, err)
	}
	defer cli.Close()
	if why := warmRunning(ctx, cli, rec); why != "" {
		return nil, rec, fmt.Errorf("the warm layer is not running: %s", why)
	}
	if why := verifyWarm(ctx, cli, path, rec); why != "" {
		return nil, rec, fmt.Errorf("the warm layer's record does not match its containers: %s", why)
	}
	cfg, err := pgxpool.ParseConfig(rec.PostgresDSN)
	if err != nil {
		return nil, rec, fmt.Errorf("the warm layer's DSN: %s", secret.ParseError(err))
	}
	if err := dbguard.CheckConfig(&cfg.ConnConfig.Config, canonical, "the warm layer's record"); err != nil {
		return nil, rec, err
	}
	secret.AddDSN(rec.PostgresDSN)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, rec, fmt.Errorf("connect to the warm layer's Postgres: %s", secret.ScrubString(err.Error()))
	}
	return pool, rec, nil
}
