package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/moby/moby/client"

	"github.com/contested/contested/internal/dockerenv"
	"github.com/contested/contested/internal/faultlayer"
	"github.com/contested/contested/internal/runid"
	"github.com/contested/contested/internal/secret"
	"github.com/contested/contested/internal/testlog"
	"github.com/contested/contested/internal/tier"
)

// TestReplicasGetLeastPrivilegeAndNoPasswordOnTheirCommandLine brings a rig
// up (local processes, and containers where they can run) and checks what
// anyone on the host can see of its replicas: no password on a command
// line (ps), in a process environment, or in docker inspect; the DSN comes
// from a 0600 file. The replicas connect as the service role, which is no
// superuser and cannot read the test plane's tables.
func TestReplicasGetLeastPrivilegeAndNoPasswordOnTheirCommandLine(t *testing.T) {
	t.Run("local processes", func(t *testing.T) {
		ctx := context.Background()
		r, layer := upRig(t, faultlayer.Embedded)
		local := r.replicas.(*localReplicas)
		for i, p := range local.procs {
			cmdline := procFile(t, p.cmd.Process.Pid, "cmdline")
			environ := procFile(t, p.cmd.Process.Pid, "environ")
			if !strings.Contains(cmdline, "-dsn-file") {
				t.Errorf("replica-%d's command line %q has no -dsn-file", i+1, secret.ScrubString(cmdline))
			}
			noPassword(t, fmt.Sprintf("replica-%d's command line", i+1), cmdline, r, layer)
			noPassword(t, fmt.Sprintf("replica-%d's environment", i+1), environ, r, layer)
			fi, err := os.Stat(local.dsnFile[i])
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("replica-%d's DSN file: %v, mode %v; want 0600", i+1, err, fi.Mode().Perm())
			}
		}
		leastPrivilege(t, ctx, r, layer)
	})
	t.Run("containers", func(t *testing.T) {
		ctx := context.Background()
		if err := faultlayer.ContainersCanRun(ctx, faultlayer.ConfigFor(faultlayer.Containers)); err != nil {
			dockerenv.SkipOrFail(t, fmt.Sprintf("containers cannot run here: %v", err))
		}
		r, layer := upRig(t, faultlayer.Containers)
		// The rig's Toxiproxy publishes its replicas' ports, not the range.
		if len(layer.Ports) != len(r.proxies) {
			t.Errorf("the rig's layer has %d proxy ports for %d replicas", len(layer.Ports), len(r.proxies))
		}
		d := r.replicas.(*dockerReplicas)
		for i, id := range d.ids {
			res, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Container
			seen := strings.Join(append(append(append([]string{c.Path}, c.Args...), c.Config.Cmd...), c.Config.Env...), " ")
			if !strings.Contains(seen, "-dsn-file") {
				t.Errorf("replica-%d's inspect %q has no -dsn-file", i+1, secret.ScrubString(seen))
			}
			noPassword(t, fmt.Sprintf("replica-%d's docker inspect", i+1), seen, r, layer)
			if pid := c.State.Pid; pid > 0 {
				noPassword(t, fmt.Sprintf("replica-%d's command line on the host", i+1), procFile(t, pid, "cmdline"), r, layer)
			}
		}
		leastPrivilege(t, ctx, r, layer)
	})
}

// upRig brings up a layer of kind and a rig of three replicas of the test
// service on it, torn down when the test ends.
func upRig(t *testing.T, kind faultlayer.Kind) (*rig, *faultlayer.Layer) {
	t.Helper()
	tier.Full(t, "a fault layer")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	run := runid.New(time.Now())
	opts := Options{Dir: moduleRoot(t), ResultsRoot: t.TempDir(), Local: kind != faultlayer.Containers,
		RequireContainers: kind == faultlayer.Containers, Out: testlog.Writer(t)}
	spec, opts, err := settle(jobsService{}.Spec(), opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prepare(ctx, spec, opts, &Report{})
	t.Cleanup(p.close)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := p.layerUp(ctx, run, opts.Replicas, opts.Out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { layer.Close(context.Background()) })
	r, err := newRig(ctx, jobsService{}, spec, layer, opts, run, p)
	if r != nil {
		t.Cleanup(func() { r.close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, layer
}

func procFile(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
	if err != nil {
		t.Fatalf("read /proc/%d/%s: %v", pid, name, err)
	}
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// noPassword fails when what someone can see holds the service role's or
// the test plane superuser's password.
func noPassword(t *testing.T, what, seen string, r *rig, layer *faultlayer.Layer) {
	t.Helper()
	passwords := append([]string{r.service}, secret.Passwords(layer.PostgresDSN)...)
	if len(passwords) < 2 || r.service == "" {
		t.Fatalf("want the service's and the superuser's passwords, have %d", len(passwords))
	}
	for _, p := range passwords {
		if strings.Contains(seen, p) {
			t.Errorf("%s holds a password: %q", what, secret.ScrubString(seen))
		}
	}
}

// leastPrivilege: every connection of the replicas to the service's
// database is the service role's; that role is no superuser, may create
// nothing, and cannot read the test plane's lease table.
func leastPrivilege(t *testing.T, ctx context.Context, r *rig, layer *faultlayer.Layer) {
	t.Helper()
	admin := layer.DB()
	serviceDB, serviceRole := r.spec.database(), r.spec.role()
	superuser := admin.Config().ConnConfig.User
	var n int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND usename = $2`, serviceDB, serviceRole).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 3 {
			break
		}
	}
	if n < 3 {
		t.Fatalf("%d connections of %s to %s; want one per replica at least", n, serviceRole, serviceDB)
	}
	var others []string
	rows, err := admin.Query(ctx, `SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = $1 AND usename NOT IN ($2, $3)`, serviceDB, serviceRole, superuser)
	if err != nil {
		t.Fatal(err)
	}
	if others, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(others) > 0 {
		t.Errorf("other roles connected to %s: %v %v", serviceDB, others, err)
	}
	var super, createdb, createrole bool
	if err := admin.QueryRow(ctx, `SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = $1`, serviceRole).Scan(&super, &createdb, &createrole); err != nil {
		t.Fatal(err)
	}
	if super || createdb || createrole {
		t.Errorf("%s: superuser %v, createdb %v, createrole %v; want none", serviceRole, super, createdb, createrole)
	}
	cfg := admin.Config().ConnConfig.Copy()
	cfg.User, cfg.Password = serviceRole, r.service
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect as %s to the test plane at %s: %v", serviceRole, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), err)
	}
	defer conn.Close(ctx)
	var pgErr *pgconn.PgError
	_, err = conn.Exec(ctx, `SELECT count(*) FROM fault_port_leases`)
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("%s reading the test plane's lease table: %v; want permission denied (42501)", serviceRole, err)
	}
}
