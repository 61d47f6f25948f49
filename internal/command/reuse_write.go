package command

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/contested/contested/internal/battery"
	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/gate/certify"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gate/flakes"
	"github.com/contested/contested/internal/registry"
	"github.com/contested/contested/internal/rundir"
	"github.com/contested/contested/internal/signkey"
	"github.com/contested/contested/internal/terminal"
	"github.com/contested/contested/internal/touched"
)

// signingKey is the key CONTESTED_SIGNING_KEY names, nil when it is unset.
// A key that cannot be read is bad input: CI set up to sign must never
// quietly certify nothing.
func signingKey() (ed25519.PrivateKey, error) {
	path := strings.TrimSpace(os.Getenv(envvar.SigningKey))
	if path == "" {
		return nil, nil
	}
	k, err := signkey.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envvar.SigningKey, err)
	}
	return k, nil
}

// reuseTrust is whom this run believes: its user (their own secret, which
// seals what they certify), the keys the registry's [reuse] trust lists,
// and the key CONTESTED_SIGNING_KEY names, which signs what it certifies.
func reuseTrust(reg *registry.Registry, out io.Writer) (*certify.Trust, error) {
	signer, err := signingKey()
	if err != nil {
		return nil, err
	}
	own, ownErr := certify.OwnKey()
	why := ""
	if ownErr != nil {
		why = ownErr.Error()
		if signer == nil {
			fmt.Fprintf(out, "validate: reuse: %s; your own certificates are neither written nor read\n", terminal.Escape(why))
		}
	}
	t, err := certify.NewTrust(own, why, reg.Reuse.Trust, signer)
	if err != nil {
		return nil, err
	}
	if t.Signs() && !t.TrustsSigner() {
		fmt.Fprintf(out, "validate: reuse: %s signs with %s, which [reuse] trust in %s does not list: no checkout will reuse what it certifies; add the key there\n",
			envvar.SigningKey, t.Signer(), reg.Path)
	}
	return t, nil
}

// readCertificates reads the certificates this run may reuse: the user's
// own and the trusted ones under the results directory, and the team's in
// the history database when CONTESTED_HISTORY_DSN is set. What cannot be
// read is said, and runs.
func readCertificates(ctx context.Context, root rundir.Dir, canonical []string, trust *certify.Trust, module string, digests []string, out io.Writer) *certify.Set {
	set, err := certify.NewFile(root.String(), trust).Read(ctx, module, digests)
	if err != nil {
		fmt.Fprintf(out, "validate: reuse: %s\n", terminal.Escape(err.Error()))
	}
	if team, closeTeam, err := teamStore(ctx, canonical, trust, false); err != nil {
		fmt.Fprintf(out, "validate: reuse: the team's certificates: %s; what they certified runs\n", terminal.Escape(err.Error()))
	} else if team != nil {
		t, err := team.Read(ctx, module, digests)
		closeTeam()
		if err != nil {
			fmt.Fprintf(out, "validate: reuse: the team's certificates: %s\n", terminal.Escape(err.Error()))
		}
		set.Merge(t)
	}
	for _, line := range summarizeIgnored(set.Ignored) {
		fmt.Fprintf(out, "validate: %s\n", terminal.Escape(line))
	}
	return set
}

// summarizeIgnored is one line per certificate ignored, the first few of
// each reason, then how many more said the same.
func summarizeIgnored(lines []string) []string {
	const each = 3
	seen := map[string]int{}
	var out []string
	for _, l := range lines {
		why := l
		if i := strings.Index(l, " ignored: "); i >= 0 {
			why = l[i:]
		}
		seen[why]++
		if seen[why] <= each {
			out = append(out, l)
		}
	}
	for why, n := range seen {
		if n > each {
			out = append(out, fmt.Sprintf("%d more certificates%s", n-each, why))
		}
	}
	return out
}

// teamStore is the team's certificates in the history database, nil when
// CONTESTED_HISTORY_DSN is unset. Reading needs SELECT alone; a run that
// writes (create) makes the table if it is missing.
func teamStore(ctx context.Context, canonical []string, trust *certify.Trust, create bool) (*certify.Postgres, func(), error) {
	dsn := strings.TrimSpace(os.Getenv(envvar.HistoryDSN))
	if dsn == "" {
		return nil, func() {}, nil
	}
	h, err := flakes.OpenPostgres(ctx, dsn, canonical)
	if err != nil {
		return nil, nil, err
	}
	p, err := certify.NewPostgres(ctx, h.Pool(), trust, create)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return p, h.Close, nil
}

// branch is the branch a run is on: CI's name for it, else git's; "" when
// neither says.
func branch(ctx context.Context, dir string) string {
	for _, k := range []string{"GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--abbrev-ref", "HEAD")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// write certifies what this GREEN, certified run passed: each package
// that ran, passed, and whose test binary logged what its tests touched,
// and each surface that ran GREEN with all its packages so certified. A
// run that signs writes to the team's store when there is one; every
// other run writes its user's own, under the results directory.
func (r *reuse) write(ctx context.Context, root rundir.Dir, canonical, env []string, rep *ValidateReport, res *battery.Result, judged []*contract.Result, classes map[string]string, out io.Writer) {
	if !r.certify || !rep.Green || rep.Gate == nil || !rep.Gate.Certified || res == nil {
		return
	}
	if ok, why := r.trust.CanSeal(); !ok {
		fmt.Fprintf(out, "validate: nothing certified for reuse: %s\n", terminal.Escape(why))
		return
	}
	paths := r.paths
	paths.Given = given(env)
	inputs := touched.NewInputs(paths, os.LookupEnv)
	base := certify.Certificate{Module: r.module, RunID: rep.RunID, Commit: rep.Revision.Commit, Dirty: rep.Revision.Dirty, Branch: branch(ctx, paths.Root), At: time.Now().UTC()}
	var certs []certify.Certificate
	tests := map[string]int{}
	for _, t := range res.Tests {
		tests[t.Package]++
	}
	sums := map[string]string{}
	var unlogged []string
	for _, p := range res.Packages {
		key, ok := r.pkgKey[p.Name]
		if !ok || p.Reused != nil || (p.Action != "pass" && p.Action != "skip") {
			continue
		}
		rec, err := r.record(p, res, paths)
		if err != nil {
			unlogged = append(unlogged, p.Name)
			continue
		}
		sum, err := inputs.Sum(rec)
		if err != nil {
			unlogged = append(unlogged, p.Name)
			continue
		}
		c := base
		c.Kind, c.Key, c.Digest, c.Verdict, c.Tests, c.Touched, c.Inputs = certify.KindPackage, p.Name, key, "PASS", tests[p.Name], &rec, sum
		certs = append(certs, c)
		sums[p.Name] = sum
	}
	if len(unlogged) > 0 {
		fmt.Fprintf(out, "validate: not certified, for no record of what their tests touched (a test binary go test ran itself, or whose log was cut short): %s\n", terminal.Escape(strings.Join(unlogged, ", ")))
	}
	for _, j := range judged {
		key, ok := r.surfKey[j.Surface]
		if !ok || !certify.Certifiable(certify.KindSurface, string(j.Contract)) {
			continue
		}
		pkgs := map[string]string{}
		for _, p := range r.surfPkgs[j.Surface] {
			if s, ok := sums[p]; ok {
				pkgs[p] = s
			}
		}
		if len(pkgs) == 0 || len(pkgs) != len(r.surfPkgs[j.Surface]) {
			continue // a surface is reused only with its packages
		}
		sv := j.Verdict()
		c := base
		c.Kind, c.Key, c.Digest, c.Verdict, c.Class, c.Surface, c.Packages = certify.KindSurface, j.Surface, key, string(j.Contract), classes[j.Surface], &sv, pkgs
		for _, l := range sv.Legs {
			c.Armed += l.Armed
			c.Fired += l.Fired
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return
	}
	for i := range certs {
		vouched, err := r.trust.Vouch(certs[i])
		if err != nil {
			fmt.Fprintf(out, "validate: %s certificates: %v\n", color.RedString("NOT saved"), err)
			return
		}
		certs[i] = vouched
	}
	var store certify.Store = certify.NewFile(root.String(), r.trust)
	where := "your own, under " + certify.DirName
	if r.trust.Signs() {
		where = "signed with " + r.trust.Signer() + ", under " + certify.DirName
		team, closeTeam, err := teamStore(ctx, canonical, r.trust, true)
		if err != nil {
			notSaved(out, "validate", "the team's certificates", err)
			return
		}
		defer closeTeam()
		if team != nil {
			store, where = team, "signed with "+r.trust.Signer()+", in the history database ("+envvar.HistoryDSN+")"
		}
	} else if os.Getenv(envvar.HistoryDSN) != "" {
		where += "; the team's store takes only certificates a trusted key signs (" + envvar.SigningKey + ")"
	}
	if err := store.Write(ctx, certs); err != nil {
		notSaved(out, "validate", "the certificates", err)
		return
	}
	r.rep.Certified = len(certs)
	var pkgs int
	for _, c := range certs {
		if c.Kind == certify.KindPackage {
			pkgs++
		}
	}
	fmt.Fprintf(out, "validate: certified %s and %s for reuse (%s)\n", count(pkgs, "package"), count(len(certs)-pkgs, "surface"), where)
}

// record is what a package's tests touched: its test log, with what its
// source names that the log cannot see (touched.Source: reads at package
// init, in TestMain before m.Run, in a worker process), or nothing for a
// package without tests (no binary ran).
func (r *reuse) record(p battery.Package, res *battery.Result, paths touched.Paths) (touched.Record, error) {
	log, ok := res.TestLogs[p.Name]
	if !ok {
		if p.Action == "skip" && !hasTests(res, p.Name) {
			return touched.Record{}, nil
		}
		return touched.Record{}, touched.ErrLog
	}
	paths.Dir = r.dirs[p.Name]
	rec, err := touched.ParseFile(log, paths)
	if err != nil {
		return touched.Record{}, err
	}
	src, err := r.source.Record(paths, r.files[p.Name])
	if err != nil {
		return touched.Record{}, err
	}
	return rec.Merge(src), nil
}

// sourceEnv are the variables a package's source names (touched.Source),
// which its replays carry when the run set them; none when this run
// computed no digests.
func (r *reuse) sourceEnv(pkg string) []string {
	if r == nil || r.source == nil {
		return nil
	}
	paths := r.paths
	paths.Dir = r.dirs[pkg]
	rec, err := r.source.Record(paths, r.files[pkg])
	if err != nil {
		return nil
	}
	return rec.Env
}

func hasTests(res *battery.Result, pkg string) bool {
	for _, t := range res.Tests {
		if t.Package == pkg {
			return true
		}
	}
	return false
}
