package degraded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/faultlayer"
)

// DirName is the stage's directory under the results directory: its
// marker, its screenshots, its cells.json and the front's log.
const DirName = "degraded"

// MarkerName is the marker's file name in the stage's directory.
const MarkerName = "overlay.json"

// MarkerSchema is the marker's schema.
const MarkerSchema = "contested/degraded-overlay@1"

// UserAgent is what the stage and its restore send to Toxiproxy's control
// API: Toxiproxy answers a browser's User-Agent with 403.
const UserAgent = "contested-degraded"

// ErrRestore reports that a marker was found and the base shape could not
// be restored: the marker is left in place for a retry.
var ErrRestore = errors.New("the degraded overlay could not be removed")

// Marker records that the overlay is applied: which Toxiproxy holds the
// stage's proxies and which process serves the rerouted front.
type Marker struct {
	Schema       string    `json:"schema"`
	RunID        string    `json:"run_id"`
	Started      time.Time `json:"started"`
	StagePID     int       `json:"stage_pid"`
	ToxiproxyURL string    `json:"toxiproxy_url"`
	Proxies      []string  `json:"proxies"`
	FrontPID     int       `json:"front_pid,omitempty"`
	FrontExe     string    `json:"front_exe,omitempty"`
}

// MarkerPath is the marker's path under the results directory.
func MarkerPath(resultsDir string) string {
	return filepath.Join(resultsDir, DirName, MarkerName)
}

// writeMarker writes m atomically under the results directory.
func writeMarker(resultsDir string, m Marker) error {
	m.Schema = MarkerSchema
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	root, err := atomicfile.MakeRoot(resultsDir)
	if err != nil {
		return fmt.Errorf("write the degraded marker: %w", err)
	}
	if err := root.Write(DirName+"/"+MarkerName, append(b, '\n')); err != nil {
		return fmt.Errorf("write the degraded marker: %w", err)
	}
	return nil
}

// maxMarker caps the marker read back: a few names and a time.
const maxMarker = 1 << 20

// loadMarker reads the marker with the results directory's loader: no link
// under it followed, a FIFO never waited on, the size capped.
func loadMarker(resultsDir string) ([]byte, error) {
	root, err := atomicfile.OpenRoot(resultsDir)
	if err != nil {
		return nil, err
	}
	return root.ReadFile(DirName+"/"+MarkerName, maxMarker)
}

// readMarker reads the marker; ok is false when there is none.
func readMarker(resultsDir string) (m Marker, ok bool, err error) {
	b, err := loadMarker(resultsDir)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, true, fmt.Errorf("read the degraded marker: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Schema != MarkerSchema {
		return m, true, fmt.Errorf("%s is not a degraded marker (%v)", MarkerPath(resultsDir), err)
	}
	return m, true, nil
}

// clearMarker removes the marker.
func clearMarker(resultsDir string) error {
	if err := os.Remove(MarkerPath(resultsDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear the degraded marker: %w", err)
	}
	return nil
}

// escape is the manual way out of a wedged overlay.
func escape(resultsDir string, m Marker) string {
	var b strings.Builder
	fmt.Fprintf(&b, "escape by hand: ")
	for _, p := range m.Proxies {
		fmt.Fprintf(&b, "curl -A %s -X DELETE %s/proxies/%s; ", UserAgent, strings.TrimSuffix(m.ToxiproxyURL, "/"), p)
	}
	if m.FrontPID > 0 {
		fmt.Fprintf(&b, "kill %d (if it is still %s); ", m.FrontPID, m.FrontExe)
	}
	fmt.Fprintf(&b, "rm %s; then go tool mage degraded (or validate) again", MarkerPath(resultsDir))
	return b.String()
}

// Lock is the stage lock, held.
type Lock struct{ unlock func() }

// Release releases the stage lock. It is safe to call more than once.
func (l *Lock) Release() {
	if l != nil && l.unlock != nil {
		l.unlock()
		l.unlock = nil
	}
}

// Hold takes the stage lock (waiting for a stage that holds it) and then
// restores the base shape a marker under resultsDir says a crashed stage
// left (Restore). who names the caller in messages. On error the lock is
// not held.
func Hold(ctx context.Context, resultsDir, who string, w io.Writer) (*Lock, error) {
	unlock, err := faultlayer.HoldStage(ctx, who, w)
	if err != nil {
		return nil, err
	}
	if err := Restore(ctx, resultsDir, who, w); err != nil {
		unlock()
		return nil, err
	}
	return &Lock{unlock: unlock}, nil
}

// Await waits for a stage that holds the stage lock, restores the base
// shape a crashed one left, and releases the lock: what validate does
// before it runs a battery on the layer.
func Await(ctx context.Context, resultsDir, who string, w io.Writer) error {
	l, err := Hold(ctx, resultsDir, who, w)
	if err != nil {
		return err
	}
	l.Release()
	return nil
}

// Restore brings the stack back to its base shape when a marker says a
// stage left its overlay applied, and clears the marker. The caller holds
// the stage lock, so no stage that wrote the marker is alive.
//
//   - no marker: nothing to do;
//   - the marker's Toxiproxy does not answer (the stack is down): there is
//     nothing to restore; the marker is cleared (and a front still alive
//     is stopped);
//   - otherwise its proxies are deleted (one already gone counts as
//     deleted), its front is stopped, and the marker is cleared;
//   - any failure leaves the marker for a retry and returns ErrRestore
//     with the way to escape by hand.
func Restore(ctx context.Context, resultsDir, who string, w io.Writer) error {
	if w == nil {
		w = io.Discard
	}
	m, found, err := readMarker(resultsDir)
	if !found {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v; remove it by hand (rm %s) once no degraded proxy is left in the fault layer", ErrRestore, err, MarkerPath(resultsDir))
	}
	fmt.Fprintf(w, "%s: the degraded stage of run %s left its overlay applied (marker %s); restoring the base shape\n", who, m.RunID, MarkerPath(resultsDir))
	stopFront(m)
	if !toxiproxyUp(ctx, m.ToxiproxyURL) {
		fmt.Fprintf(w, "%s: its fault layer is down (Toxiproxy %s does not answer): nothing to restore; marker cleared\n", who, m.ToxiproxyURL)
		return clearMarker(resultsDir)
	}
	cli := toxiproxy.NewClient(m.ToxiproxyURL)
	cli.UserAgent = UserAgent
	var failed []string
	for _, name := range m.Proxies {
		if err := deleteProxy(cli, name); err != nil {
			failed = append(failed, fmt.Sprintf("delete proxy %s: %v", name, err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w (%s); the marker stays, so the next go tool mage degraded or validate retries; %s", ErrRestore, strings.Join(failed, "; "), escape(resultsDir, m))
	}
	fmt.Fprintf(w, "%s: base shape restored (%d proxies deleted); marker cleared\n", who, len(m.Proxies))
	return clearMarker(resultsDir)
}

// deleteProxy deletes a proxy by name; one that is gone counts as deleted.
func deleteProxy(cli *toxiproxy.Client, name string) error {
	p, err := cli.Proxy(name)
	if err != nil {
		if strings.Contains(err.Error(), "404") || strings.Contains(err.Error(), "not found") {
			return nil
		}
		return err
	}
	if err := p.Delete(); err != nil && !strings.Contains(err.Error(), "404") {
		return err
	}
	return nil
}

// toxiproxyUp reports whether a Toxiproxy answers /version at url.
func toxiproxyUp(ctx context.Context, url string) bool {
	if url == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/version", nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", UserAgent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stopFront kills the marker's front when that process still runs the
// marker's executable (a pid reused by another program is left alone).
func stopFront(m Marker) {
	if m.FrontPID <= 0 || m.FrontExe == "" {
		return
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(m.FrontPID) + "/exe")
	if err != nil || strings.TrimSuffix(exe, " (deleted)") != m.FrontExe {
		return
	}
	_ = syscall.Kill(m.FrontPID, syscall.SIGKILL)
}
